"""Server bootstrap, written once for every recallmesh process.

A service supplies a `ServiceApp`: its gRPC service names, how to add its
servicers, async start/stop hooks (open and close pools, clients) and, optionally, a
readiness check. `run()` does the rest: structured logs, tracing, the Prometheus endpoint,
the gRPC server with admission + metrics + error-mapping + tracing interceptors, standard
health checking, server reflection, and a graceful stop on SIGTERM / SIGINT.

Admission: at most RECALLMESH_<SERVICE>_MAX_CONCURRENT_RPCS RPCs run at once; one more is
refused at once with RESOURCE_EXHAUSTED and `grpc-retry-pushback-ms` (telemetry.ServerInterceptor),
and every RPC's deadline bounds its database waits (db.deadline).

Health (grpc.health.v1) tells the truth: the overall service "" and the app's own service
names are readiness, checked again every RECALLMESH_READINESS_INTERVAL_S (the app's
`ready()`: "" when it can serve, else why not, e.g. the database is unreachable); they turn
NOT_SERVING while it cannot, and back. The service "liveness" is SERVING for as long as the
process runs (a Kubernetes liveness probe must not restart a pod whose database is down).
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Callable, Sequence
from typing import Protocol

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from recallmesh.shared.logs import configure_logging
from recallmesh.shared.settings import AuthSettings, ServerConfig
from recallmesh.shared.telemetry import (
    READY,
    ServerInterceptor,
    export_rpc_zeros,
    setup_tracing,
    start_metrics_server,
    tracing_interceptors,
)
from recallmesh.shared.tls import TlsSettings, server_credentials
from recallmesh.shared.transport import KEEPALIVE_TIME_MS, MAX_MESSAGE_BYTES, grpc_options

log = logging.getLogger(__name__)


class ServiceApp(Protocol):
    """What a service hands to the bootstrap."""

    @property
    def service_names(self) -> Sequence[str]:
        """Fully-qualified gRPC service names, e.g. "recallmesh.v1.MemoryService" (a plain
        class attribute satisfies this read-only member)."""
        ...

    async def start(self) -> None: ...

    def register(self, server: grpc.aio.Server) -> None: ...

    async def stop(self) -> None: ...

    # Optional: `async def ready(self) -> str`, "" when the service can serve, else why not.
    # Optional: `def interceptors(self) -> list[grpc.aio.ServerInterceptor]`, run innermost
    # (after metrics and error mapping), e.g. the gateway's authentication.
    # Optional: `max_receive_message_bytes: int`, the largest request its port accepts
    # (default MAX_MESSAGE_BYTES; the gateway's public port takes less).


LIVENESS = "liveness"  # the health service name a liveness probe asks
READINESS_TIMEOUT_S = 1.0


async def check_ready(app: ServiceApp) -> str:
    """The app's readiness: "" when ready, else the reason (a failing or slow check is not
    ready)."""
    ready = getattr(app, "ready", None)
    if ready is None:
        return ""
    try:
        return await asyncio.wait_for(ready(), READINESS_TIMEOUT_S)
    except TimeoutError:
        return f"readiness check took longer than {READINESS_TIMEOUT_S:g} s"
    except Exception as exc:  # the check itself failing is a reason, not a crash
        return f"{type(exc).__name__}: {exc}"


async def keep_health(app: ServiceApp, health_servicer: health.aio.HealthServicer,
                      interval_s: float) -> None:
    """Set readiness ("" and the app's services) from check_ready, now and every interval."""
    last: str | None = None
    while True:
        reason = await check_ready(app)
        if reason != last:
            status = (health_pb2.HealthCheckResponse.SERVING if not reason
                      else health_pb2.HealthCheckResponse.NOT_SERVING)
            for name in ("", *app.service_names):
                await health_servicer.set(name, status)
            READY.set(0 if reason else 1)
            if reason:
                log.warning("not ready", extra={"reason": reason})
            elif last is not None:
                log.info("ready again")
            last = reason
        await asyncio.sleep(interval_s)


# What stands in front of a service's own interceptors: given the service's name and the
# deployment's auth and TLS settings, the interceptor that admits its callers (None: no wall
# needed); ConfigError when the settings leave the service open. The auth package supplies it
# (recallmesh.auth.interceptors.internal_guard); the floor only runs it.
Guard = Callable[[str, AuthSettings, TlsSettings], "grpc.aio.ServerInterceptor | None"]


async def serve(
    app: ServiceApp, config: ServerConfig, guard: Guard, stop_event: asyncio.Event | None = None,
    tls: TlsSettings | None = None, auth: AuthSettings | None = None,
) -> None:
    """Run `app` until stop_event is set (or SIGTERM / SIGINT arrives); TLS when `tls` (default:
    the environment's, recallmesh.shared.tls) has a certificate; callers admitted by `guard`
    under `auth` (default: the environment's)."""
    tls = tls if tls is not None else TlsSettings.from_env()
    auth = auth if auth is not None else AuthSettings.from_env()
    wall = guard(config.name, auth, tls)
    stop_event = stop_event or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        try:
            loop.add_signal_handler(sig, stop_event.set)
        except (NotImplementedError, RuntimeError):  # not the main thread
            pass

    try:
        await app.start()
    except Exception as exc:  # unreachable database, schema out of date, bad settings
        log.error("startup failed: %s", exc, extra={"error": type(exc).__name__})
        raise SystemExit(1) from None
    walls = [*([wall] if wall else []), *getattr(app, "interceptors", list)()]
    server = grpc.aio.server(
        # Admission (config.max_concurrent_rpcs) is ServerInterceptor's, not gRPC's own
        # maximum_concurrent_rpcs: that one also refuses health checks (a busy pod would turn
        # unready and drop out) and sends no retry pushback.
        # ServerInterceptor outermost: a call refused for load is refused before a span is
        # started for it (under overload most calls are refusals).
        interceptors=[ServerInterceptor(config.max_concurrent_rpcs),
                      *tracing_interceptors("server"), *walls],
        # No SO_REUSEPORT: a second copy of a service must fail to bind, not
        # silently share the port with the first.
        options=[
            *grpc_options(getattr(app, "max_receive_message_bytes", MAX_MESSAGE_BYTES)),
            ("grpc.so_reuseport", 0),
            # Accept the clients' keepalive pings (the default would answer GOAWAY).
            ("grpc.keepalive_permit_without_calls", 1),
            ("grpc.http2.min_ping_interval_without_data_ms", KEEPALIVE_TIME_MS // 2),
        ],
    )
    app.register(server)
    export_rpc_zeros(app.service_names)
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection(
        [*app.service_names, health.SERVICE_NAME, reflection.SERVICE_NAME], server
    )
    try:
        port = (server.add_secure_port(config.address, server_credentials(tls, config.name))
                if tls.enabled else server.add_insecure_port(config.address))
    except RuntimeError:
        port = 0
    if port == 0:
        log.error("cannot listen on %s (port in use?)", config.address)
        await app.stop()
        raise SystemExit(1)
    await server.start()
    await health_servicer.set(LIVENESS, health_pb2.HealthCheckResponse.SERVING)
    health_task = asyncio.create_task(
        keep_health(app, health_servicer, config.readiness_interval_s))
    log.info(
        "serving",
        extra={"address": f"{config.host}:{port}", "metrics_port": config.metrics_port,
               "max_concurrent_rpcs": config.max_concurrent_rpcs,
               "tls": ("mutual" if tls.requires_client_cert(config.name) else "server")
               if tls.enabled else "off", "auth": auth.mode},
    )
    try:
        await stop_event.wait()
    finally:
        log.info("stopping", extra={"grace_s": config.grace_seconds})
        health_task.cancel()
        await health_servicer.enter_graceful_shutdown()
        await server.stop(config.grace_seconds)
        await app.stop()
        log.info("stopped")


def run(name: str, app: ServiceApp, guard: Guard) -> None:
    """Entry point of `python -m <service>`: `app` served behind `guard`."""
    configure_logging(name)
    try:
        config = ServerConfig.from_env(name)
        tls = TlsSettings.from_env()
        auth = AuthSettings.from_env()
        if auth.required:
            guard(name, auth, tls)  # refuse to start without a wall
        else:
            log.warning("authentication is OFF (RECALLMESH_AUTH=off): every caller may read, "
                        "write and delete every namespace; for local development only")
        setup_tracing(name)
    except ValueError as exc:  # ConfigError and bad exporter names
        log.error("bad configuration: %s", exc)
        raise SystemExit(2) from None
    try:
        start_metrics_server(config.metrics_port, config.host)
    except OSError as exc:
        log.error("cannot serve metrics on %s:%s: %s", config.host, config.metrics_port, exc)
        raise SystemExit(1) from None
    try:
        asyncio.run(serve(app, config, guard, tls=tls, auth=auth))
    except KeyboardInterrupt:
        pass
