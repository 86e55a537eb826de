"""The console's Prometheus metrics (served on their own port, like every service's)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

REQUESTS = Counter("recallmesh_console_requests_total",
                   "HTTP requests the console answered, by route and status",
                   ["route", "method", "status"])
LATENCY = Histogram("recallmesh_console_request_seconds",
                    "Time the console took to answer, by route", ["route"],
                    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0))
GATEWAY_ERRORS = Counter("recallmesh_console_gateway_errors_total",
                         "Calls to the gateway that failed, by gRPC status", ["code"])
SESSIONS = Gauge("recallmesh_console_sessions", "Signed-in sessions held now")
SIGN_INS = Counter("recallmesh_console_sign_ins_total",
                   "Sign-in attempts by outcome (ok, refused, auto)", ["outcome"])
REFUSED = Counter("recallmesh_console_refused_total",
                  "Requests refused before reaching the gateway, by why (csrf, origin, "
                  "size: a body over its route's limit or of no stated length)",
                  ["why"])

for outcome in ("ok", "refused", "auto"):
    SIGN_INS.labels(outcome)
for why in ("csrf", "origin", "size"):
    REFUSED.labels(why)
