"""Server bootstrap, written once for every recallmesh process.

A service supplies a `ServiceApp`: its gRPC service names, how to add its
servicers, and async start/stop hooks (open and close pools, clients). `run()`
does the rest: structured logs, tracing, the Prometheus endpoint, the gRPC
server with metrics + error-mapping + tracing interceptors, standard health
checking, server reflection, and a graceful stop on SIGTERM / SIGINT.
"""

from __future__ import annotations

import asyncio
import json
import logging
import signal
from collections.abc import Sequence
from typing import Protocol

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from opentelemetry.instrumentation.grpc import aio_server_interceptor

from recallmesh.platform.config import ServerConfig
from recallmesh.platform.logs import configure_logging
from recallmesh.platform.telemetry import ServerInterceptor, setup_tracing, start_metrics_server

log = logging.getLogger(__name__)


class ServiceApp(Protocol):
    """What a service hands to the bootstrap."""

    #: fully-qualified gRPC service names, e.g. "recallmesh.v1.MemoryService"
    service_names: Sequence[str]

    async def start(self) -> None: ...

    def register(self, server: grpc.aio.Server) -> None: ...

    async def stop(self) -> None: ...


def grpc_options(max_message_bytes: int = 64 * 1024 * 1024) -> list[tuple[str, int]]:
    return [
        ("grpc.max_receive_message_length", max_message_bytes),
        ("grpc.max_send_message_length", max_message_bytes),
        # Internal clients reconnect quickly after a peer restarts (gRPC's
        # default backoff grows to two minutes, far beyond any recall budget).
        ("grpc.initial_reconnect_backoff_ms", 100),
        ("grpc.min_reconnect_backoff_ms", 100),
        ("grpc.max_reconnect_backoff_ms", 500),
    ]


# Keepalive pings from long-lived internal channels (every 30 s, even idle).
KEEPALIVE_TIME_MS = 30_000


def client_options(service: str) -> list[tuple[str, object]]:
    """Options of a long-lived channel to an internal service: fast reconnect, keepalive,
    and transparent retries of UNAVAILABLE (the calls are idempotent) within the deadline."""
    retry = {
        "methodConfig": [{
            "name": [{"service": service}],
            "retryPolicy": {
                "maxAttempts": 3,
                "initialBackoff": "0.01s",
                "maxBackoff": "0.1s",
                "backoffMultiplier": 2,
                "retryableStatusCodes": ["UNAVAILABLE"],
            },
        }]
    }
    return [
        *grpc_options(),
        ("grpc.keepalive_time_ms", KEEPALIVE_TIME_MS),
        ("grpc.keepalive_timeout_ms", 10_000),
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.enable_retries", 1),
        ("grpc.service_config", json.dumps(retry)),
    ]


async def serve(
    app: ServiceApp, config: ServerConfig, stop_event: asyncio.Event | None = None
) -> None:
    """Run `app` until stop_event is set (or SIGTERM / SIGINT arrives)."""
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
    server = grpc.aio.server(
        interceptors=[aio_server_interceptor(), ServerInterceptor()],
        # No SO_REUSEPORT: a second copy of a service must fail to bind, not
        # silently share the port with the first.
        options=[
            *grpc_options(),
            ("grpc.so_reuseport", 0),
            # Accept the clients' keepalive pings (the default would answer GOAWAY).
            ("grpc.keepalive_permit_without_calls", 1),
            ("grpc.http2.min_ping_interval_without_data_ms", KEEPALIVE_TIME_MS // 2),
        ],
    )
    app.register(server)
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection(
        [*app.service_names, health.SERVICE_NAME, reflection.SERVICE_NAME], server
    )
    try:
        port = server.add_insecure_port(config.address)
    except RuntimeError:
        port = 0
    if port == 0:
        log.error("cannot listen on %s (port in use?)", config.address)
        await app.stop()
        raise SystemExit(1)
    await server.start()
    for name in ("", *app.service_names):
        await health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    log.info(
        "serving",
        extra={"address": f"{config.host}:{port}", "metrics_port": config.metrics_port},
    )
    try:
        await stop_event.wait()
    finally:
        log.info("stopping", extra={"grace_s": config.grace_seconds})
        await health_servicer.enter_graceful_shutdown()
        await server.stop(config.grace_seconds)
        await app.stop()
        log.info("stopped")


def run(name: str, app: ServiceApp) -> None:
    """Entry point of `python -m <service>`."""
    configure_logging(name)
    try:
        config = ServerConfig.from_env(name)
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
        asyncio.run(serve(app, config))
    except KeyboardInterrupt:
        pass
