"""The recall path's Prometheus metrics (the per-leg latency histogram is in
recallmesh.shared.telemetry, shared with the legs' own servers).

The series the alerts and recording rules read exist from the start, at zero, for their known
labels (export_recall_zeros, called when the gateway starts): a labelled metric is otherwise
exported only from its first increment, and Prometheus' rate() cannot see that first one (the
first leg failure would be missed)."""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client import Counter, Gauge, Histogram

from recallmesh.shared.legs import FAILED_LEG_STATES, GRAPH_LEG, LegName
from recallmesh.shared.telemetry import LEG_LATENCY_SECONDS

QUERY_EMBED_SECONDS = Histogram(
    "recallmesh_gateway_query_embedding_seconds",
    "Time to embed a recall query through the embedding service.",
    ["state"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5),
)

LEG_FAILURES = Counter(
    "recallmesh_leg_failures_total", "Leg calls that timed out or failed.", ["leg", "state"]
)
FALLBACKS = Counter(
    "recallmesh_recall_fallbacks_total",
    "Recalls answered by a fallback: lexical_only (every other leg failed), partial (some "
    "leg failed), local_fusion (the fusion service was down or late).",
    ["kind"],
)
SECOND_STAGES = Counter(
    "recallmesh_graph_second_stage_total",
    "Graph second stages: ran (its list was fused), skipped (too little budget left, or no "
    "other leg had a hit to seed it), failed (timeout or error: the first list was fused).",
    ["outcome"],
)
CONTEXT_EXPANSIONS = Counter(
    "recallmesh_context_expansions_total",
    "Context propagation per recall: added (a memory stored next to one of the best hits "
    "gained a share of its score), none (no best hit had a neighbour in the window), failed "
    "(the lookup failed: hits returned in fused order).",
    ["outcome"],
)
RESTATEMENTS = Counter(
    "recallmesh_restatements_total",
    "Relevance recalls with near-duplicate hits looked up: reordered (a newer restatement "
    "was moved above an older one), none, failed (the lookup failed: order kept).",
    ["outcome"],
)
TIME_WINDOWS = Counter(
    "recallmesh_time_windows_total",
    "Recalls whose query named a time window: boosted (some fused candidate was created "
    "inside it), none (none was), failed (the lookup failed: fused order kept).",
    ["outcome"],
)
SECRETS = Counter(
    "recallmesh_secrets_total",
    "Sensitive memories the lexical leg returned for a recall, by what the gateway did with "
    "them (recallmesh/gateway/secrets.py): offered (the question asks for it in meaning), "
    "withheld (an ordinary memory is as near the question), unread (its meaning could not "
    "be read: the query embedding, the vector leg or the embedding of the secret failed).",
    ["outcome"],
)
INTENT_ROUTES = Counter(
    "recallmesh_intent_routes_total",
    "Recalls routed by a query intent (recallmesh/gateway/query_intent.py), by intent.",
    ["intent"],
)
RECALL_SECONDS = Histogram(
    "recallmesh_recall_seconds",
    "Recall time inside the gateway (fan-out, fusion, hydration); degraded is true, "
    "false, or failed (no leg answered).",
    ["degraded"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0),
)
RECALL_STAGE_SECONDS = Histogram(
    "recallmesh_recall_stage_seconds",
    "Time of each stage of a recall inside the gateway: fan_out (every leg, and the query "
    "embedding they wait for, in parallel, until the last answer or the leg deadline), fusion "
    "(the fusion service call, or in-process fusion), hydration (the database reads after "
    "fusion: time window, the memories and their neighbours), context (context propagation), "
    "secrets (reading the meaning of a secret a leg returned).",
    ["stage"],
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.025, 0.05, 0.1, 0.25, 0.5,
             1.0),
)
AFTER_LEGS_PLANNED_SECONDS = Gauge(
    "recallmesh_recall_after_legs_planned_seconds",
    "Time the latest recall's plan kept for the work after the legs (fusion, time window, "
    "hydration, context): the 99th percentile of that work's recent duration in this "
    "gateway, at least RECALLMESH_RECALL_RESERVE_MS, at most half the time to the answer. "
    "The legs end that long before the answer is due (recallmesh/gateway/budget.py).",
)

# The label values of the series above that export_recall_zeros creates.
CALLED_LEG_STATES = ("OK", *FAILED_LEG_STATES)  # recallmesh.gateway.fanout.run_leg's outcomes
SECOND_STAGE_LEG = "graph_second_stage"  # the leg label of the graph second stage's call
FALLBACK_KINDS = ("lexical_only", "partial", "local_fusion")
DEGRADED_VALUES = ("true", "false", "failed")


def export_recall_zeros(legs: Iterable[LegName]) -> None:
    """Create at zero, for the configured `legs` (their names), every series of the recall
    path that prometheusrule.yaml or the dashboard reads: recallmesh_leg_failures_total
    {leg, state} (TIMEOUT, ERROR), recallmesh_leg_latency_seconds{leg, state} (OK, TIMEOUT,
    ERROR; its _count is the leg_calls rate), recallmesh_recall_fallbacks_total{kind} and
    recallmesh_recall_seconds{degraded}. With a graph leg, its second stage's label too."""
    labels = list(legs)
    if GRAPH_LEG in labels:
        labels.append(SECOND_STAGE_LEG)
    for leg in labels:
        for state in CALLED_LEG_STATES:
            LEG_LATENCY_SECONDS.labels(leg, state)
            if state in FAILED_LEG_STATES:
                LEG_FAILURES.labels(leg, state)
    for kind in FALLBACK_KINDS:
        FALLBACKS.labels(kind)
    for degraded in DEGRADED_VALUES:
        RECALL_SECONDS.labels(degraded)
