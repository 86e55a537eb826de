"""Metrics (Prometheus) and tracing (OpenTelemetry), set up once per process.

Server metrics follow the usual grpc_server_* naming:
  grpc_server_started_total{grpc_service,grpc_method,grpc_type}
  grpc_server_handled_total{grpc_service,grpc_method,grpc_type,grpc_code}  (OK and UNAVAILABLE
    at zero from the start for every unary method: export_rpc_zeros)
  grpc_server_handling_seconds{grpc_service,grpc_method,grpc_type,grpc_code}  (histogram)
Load shedding (every service):
  recallmesh_shed_total{grpc_service,grpc_method,reason}  (counter: refused with RESOURCE_EXHAUSTED)
Leg metrics (gateway):
  recallmesh_leg_latency_seconds{leg,state}  (histogram)

Tracing exporter: RECALLMESH_OTEL_EXPORTER = none (default) | console | otlp.
For otlp the standard OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_EXPORTER_OTLP_* apply. The gRPC
tracing interceptors (client and server) are installed only in a process that exports
traces (`tracing_interceptors`): without an exporter they built and propagated spans nobody
records, at a cost on every hop (docs/decisions/0026-the-hops-around-the-vector.md).
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import grpc
from google.protobuf import descriptor_pool
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF
from prometheus_client import Counter, Gauge, Histogram, start_http_server

from recallmesh.shared.db import deadline, domain_error
from recallmesh.shared.errors import PUSHBACK_KEY, RequestError, ResourceExhausted
from recallmesh.shared.services import is_open

log = logging.getLogger(__name__)

LATENCY_BUCKETS = (
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.0075,
    0.01,
    0.015,
    0.025,
    0.05,
    0.075,
    0.1,
    0.15,
    0.25,
    0.5,
    0.75,
    1.0,
    2.5,
    5.0,
    10.0,
)

SERVER_STARTED = Counter(
    "grpc_server_started_total",
    "RPCs started on the server.",
    ["grpc_service", "grpc_method", "grpc_type"],
)
SERVER_HANDLED = Counter(
    "grpc_server_handled_total",
    "RPCs completed on the server, by status code.",
    ["grpc_service", "grpc_method", "grpc_type", "grpc_code"],
)
SERVER_HANDLING_SECONDS = Histogram(
    "grpc_server_handling_seconds",
    "Time to handle an RPC on the server, by status code.",
    ["grpc_service", "grpc_method", "grpc_type", "grpc_code"],
    buckets=LATENCY_BUCKETS,
)
SHED = Counter(
    "recallmesh_shed_total",
    "RPCs refused at once with RESOURCE_EXHAUSTED (and a grpc-retry-pushback-ms hint) before "
    "doing their work, by what was full: concurrency (the server's limit of RPCs in "
    "progress), db_pool (callers waiting for a database connection), embedding_queue.",
    ["grpc_service", "grpc_method", "reason"],
)
READY = Gauge(
    "recallmesh_ready",
    "1 while the service reports SERVING on its readiness health check (it can reach what it "
    "needs: the database; for the gateway also at least one leg), 0 otherwise.",
)
LEG_LATENCY_SECONDS = Histogram(
    "recallmesh_leg_latency_seconds",
    "Latency of one retrieval leg as seen by the gateway, by outcome.",
    ["leg", "state"],
    buckets=LATENCY_BUCKETS,
)

# The status codes whose grpc_server_handled_total series exist from the start, for every unary
# method a server serves (export_rpc_zeros): OK (the dashboard's rate of answered calls, the
# denominator of any error ratio) and UNAVAILABLE (the alert RecallmeshRecallsFailing).
ZERO_CODES = ("OK", "UNAVAILABLE")


def export_rpc_zeros(service_names: Iterable[str]) -> None:
    """Create grpc_server_handled_total at zero for each unary method of `service_names` and
    each of ZERO_CODES. A labelled counter is exported only from its first increment, and
    Prometheus' rate() and increase() cannot see that first one: an alert on it would miss
    the first failure. The methods are read from the services' protobuf descriptors."""
    pool = descriptor_pool.Default()
    for name in service_names:
        for method in pool.FindServiceByName(name).methods:
            if method.client_streaming or method.server_streaming:
                continue  # not counted (ServerInterceptor counts unary calls only)
            for code in ZERO_CODES:
                SERVER_HANDLED.labels(name, method.name, "unary", code)


def start_metrics_server(port: int, host: str = "localhost") -> int:
    """Serve /metrics over HTTP. Port 0 disables it. Returns the port."""
    if port <= 0:
        return 0
    start_http_server(port, addr=host)
    return port


def trace_exporter() -> str:
    """RECALLMESH_OTEL_EXPORTER as given ("" when none is: no trace is exported)."""
    name = os.environ.get("RECALLMESH_OTEL_EXPORTER", "none").strip().lower()
    return "" if name == "none" else name


def exporting_traces() -> bool:
    """Whether this process exports traces."""
    return trace_exporter() != ""


def tracing_interceptors(side: str) -> list[Any]:
    """OpenTelemetry's gRPC interceptors for a channel (`side` "client") or a server
    ("server"), in a process that exports traces; none otherwise."""
    if not exporting_traces():
        return []
    from opentelemetry.instrumentation.grpc import aio_client_interceptors, aio_server_interceptor

    if side == "client":
        return list(aio_client_interceptors())
    return [aio_server_interceptor()]


def setup_tracing(service: str) -> TracerProvider:
    """The process's tracer provider. Without an exporter nothing is recorded (ALWAYS_OFF)
    and no gRPC tracing interceptor is installed (tracing_interceptors): no span is built up
    only to be dropped, no trace context carried to a process that records nothing; a
    recording span costs CPU on every RPC, and formatting a traceback for every
    RPC refused under overload (the gRPC interceptor records the abort) took a tenth of the
    gateway's CPU at 500 clients. With an exporter the SDK's sampler settings apply
    (OTEL_TRACES_SAMPLER; default: parent-based, always on)."""
    exporter_name = trace_exporter()
    resource = Resource.create({"service.name": f"recallmesh-{service}"})
    provider = (TracerProvider(resource=resource, sampler=ALWAYS_OFF)
                if not exporter_name else TracerProvider(resource=resource))
    if exporter_name == "console":
        provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter()))
    elif exporter_name == "otlp":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    elif exporter_name:
        raise ValueError(
            f"RECALLMESH_OTEL_EXPORTER must be none, console or otlp, got {exporter_name!r}"
        )
    trace.set_tracer_provider(provider)
    return provider


def _split_method(full_method: str) -> tuple[str, str]:
    # "/recallmesh.v1.MemoryService/Recall" -> ("recallmesh.v1.MemoryService", "Recall")
    _, _, rest = full_method.partition("/")
    service, _, method = rest.partition("/")
    return service or "unknown", method or "unknown"


def _code_name(code: Any) -> str:
    name: str
    if isinstance(code, grpc.StatusCode):
        name = code.name
        return name
    if isinstance(code, int):
        for candidate in grpc.StatusCode:
            if candidate.value[0] == code:
                name = candidate.name
                return name
    return "UNKNOWN"


# The trailing metadata key of gRPC's retry pushback: the milliseconds a client should wait
# before it tries again (gRPC's own retry honours it when the code is retryable).
PUSHBACK_MIN_MS, PUSHBACK_MAX_MS = 10, 5000


class Pushback:
    """The retry hint a refusal carries: one RPC's recent handling time times a back-off
    factor that follows how much is refused.

    A hint of one handling time is right when a server is a little over its limit. Far over it
    (hundreds of closed-loop clients for a limit of 64), every refused client comes back after
    one handling time only to be refused again: the refusals alone then take the CPU the
    admitted calls need, and goodput falls as the load rises. So the factor is a small
    controller, adjusted once a window (1 s): while refusals outnumber a quarter of the
    answered calls it doubles (the hint's base at most PUSHBACK_MAX_MS), under a twentieth it
    halves (down to 1). Clients that honour the hint then spread themselves over time instead
    of queueing at the door. The base (PUSHBACK_MIN_MS..PUSHBACK_MAX_MS) is jittered x0.5..1.5
    so the refused do not all come back at once, also at the cap.

    `clock` is injectable for tests; the counts are plain integers on the service's event loop.
    """

    WINDOW_S = 1.0
    GROW_ABOVE, SHRINK_BELOW = 0.25, 0.05  # refused per answered call in a window
    MAX_FACTOR = 256.0

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self.mean_s = 0.05  # moving average of an answered (OK) RPC's handling time
        self.factor = 1.0
        self._window_start = clock()
        self._refused = 0
        self._answered = 0

    def _roll(self) -> None:
        now = self._clock()
        if now - self._window_start < self.WINDOW_S:
            return
        ratio = self._refused / max(self._answered, 1)
        if ratio > self.GROW_ABOVE:
            self.factor = min(self.factor * 2, self.MAX_FACTOR)
        elif ratio < self.SHRINK_BELOW:
            self.factor = max(self.factor / 2, 1.0)
        self._window_start, self._refused, self._answered = now, 0, 0

    def answered(self, elapsed_s: float) -> None:
        """An admitted call answered OK in `elapsed_s` (calls that failed fast say nothing
        of the work, so only OK calls teach the handling time)."""
        self._roll()
        self._answered += 1
        self.mean_s += 0.1 * (elapsed_s - self.mean_s)

    def refused(self) -> int:
        """Count one refusal and return its hint in milliseconds."""
        self._roll()
        self._refused += 1
        base = min(max(self.mean_s * self.factor * 1000, PUSHBACK_MIN_MS), PUSHBACK_MAX_MS)
        # Jittered after the bounds, so that at the cap the hints still spread (2.5 to 7.5 s):
        # clamped after the jitter, every client refused under a flood was told the same
        # 5,000 ms and came back in one wave.
        return round(base * random.uniform(0.5, 1.5))


class Malformed:
    """A request body that did not decode as the method's message (corrupt protobuf, invalid
    UTF-8 in a string field): what `tolerant()` hands the call instead of raising."""

    def __init__(self, message_type: str) -> None:
        self.message_type = message_type


def tolerant(deserializer: Callable[[bytes], Any] | None) -> Callable[[bytes], Any] | None:
    """`deserializer`, returning Malformed instead of raising: gRPC itself would answer
    UNKNOWN with the exception's class name and log a traceback for every such request."""
    if deserializer is None:
        return None
    owner = getattr(deserializer, "__self__", None)
    message_type = getattr(owner, "__name__", "") or "request"

    def decode(data: bytes) -> Any:
        try:
            return deserializer(data)
        except Exception:
            return Malformed(message_type)

    return decode


class ServerInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]  # grpc is untyped
    """Admits, times and counts every unary RPC and maps domain errors to statuses.

    - Admission: at most `max_concurrent` RPCs run at once (0: no limit). One more is refused
      at once with RESOURCE_EXHAUSTED, never queued: it would only wait behind the others
      and miss its deadline. Health checks and reflection are never counted nor refused (a
      busy service is not a dead one).
    - RequestError subclasses abort with their code and message; RESOURCE_EXHAUSTED also
      sends `grpc-retry-pushback-ms` (see Pushback: one RPC's recent handling time, longer
      while refusals dominate, 10 to 5,000 ms) and counts in recallmesh_shed_total.
    - Database failures are UNAVAILABLE, RESOURCE_EXHAUSTED or, for a value the database
      refuses, INVALID_ARGUMENT (db.domain_error), never
      INTERNAL.
    - A request body that does not decode (Malformed) is INVALID_ARGUMENT with a short
      message and one WARNING line, before anything else (authentication included).
    - Any other exception is logged with its traceback and answered as
      INTERNAL with an opaque reference id: callers never see a stack trace.
    """

    def __init__(self, max_concurrent: int = 0) -> None:
        self.max_concurrent = max_concurrent
        self.in_flight = 0
        self.pushback = Pushback()
        self._logged: dict[str, float] = {}  # database failure kind -> when last logged

    def _log_database_failure(self, service: str, method: str, exc: Exception) -> None:
        """A warning per kind of database failure, at most every 5 s (an outage fails many
        calls; readiness logs it too)."""
        kind = type(exc).__name__
        now = time.monotonic()
        if now - self._logged.get(kind, -1e9) >= 5.0:
            self._logged[kind] = now
            log.warning("database failure in %s/%s: %s", service, method, exc,
                        extra={"error": kind})

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        if handler is None or handler.unary_unary is None:
            return handler  # streaming (health Watch, reflection): left as is
        service, method = _split_method(handler_call_details.method)
        behavior = handler.unary_unary
        limited = self.max_concurrent > 0 and not is_open(handler_call_details.method)

        async def wrapped(request: Any, context: grpc.aio.ServicerContext) -> Any:
            SERVER_STARTED.labels(service, method, "unary").inc()
            start = time.perf_counter()
            code = "OK"
            admitted = False
            try:
                if isinstance(request, Malformed):
                    code = "INVALID_ARGUMENT"
                    log.warning("malformed request to %s/%s from %s: not a valid %s",
                                service, method, context.peer(), request.message_type,
                                extra={"error": "malformed"})
                    await context.abort(
                        grpc.StatusCode.INVALID_ARGUMENT,
                        f"malformed request: not a valid {request.message_type} (corrupt "
                        "protobuf or invalid UTF-8 in a string field)")
                if limited:
                    if self.in_flight >= self.max_concurrent:
                        raise ResourceExhausted(
                            f"server busy: {self.max_concurrent} calls in progress, retry",
                            reason="concurrency")
                    self.in_flight += 1
                    admitted = True
                with deadline(context.time_remaining()):  # database waits end with the call
                    response = await behavior(request, context)
                set_code = context.code()
                if set_code is not None:
                    code = _code_name(set_code)
                return response
            except grpc.aio.AbortError:
                code = _code_name(context.code())
                raise
            except asyncio.CancelledError:
                code = "CANCELLED"
                raise
            except Exception as exc:
                error = exc if isinstance(exc, RequestError) else domain_error(exc)
                if error is None:
                    code = "INTERNAL"
                    ref = uuid.uuid4().hex[:12]
                    log.exception("unhandled error in %s/%s", service, method,
                                  extra={"ref": ref})
                    await context.abort(grpc.StatusCode.INTERNAL, f"internal error (ref {ref})")
                # context.abort() raises; grpc being untyped, mypy cannot tell
                assert error is not None
                code = error.code
                trailing: tuple[tuple[str, str], ...] = ()
                if isinstance(error, ResourceExhausted):
                    SHED.labels(service, method, error.reason).inc()
                    trailing = ((PUSHBACK_KEY, str(self.pushback.refused())),)
                elif error is not exc:
                    self._log_database_failure(service, method, exc)
                await context.abort(getattr(grpc.StatusCode, code), error.message,
                                    trailing_metadata=trailing)
            finally:
                elapsed = time.perf_counter() - start
                if admitted:
                    self.in_flight -= 1
                    if code == "OK":
                        self.pushback.answered(elapsed)
                SERVER_HANDLED.labels(service, method, "unary", code).inc()
                SERVER_HANDLING_SECONDS.labels(service, method, "unary", code).observe(elapsed)

        return grpc.unary_unary_rpc_method_handler(
            wrapped,
            request_deserializer=tolerant(handler.request_deserializer),
            response_serializer=handler.response_serializer,
        )
