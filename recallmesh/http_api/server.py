"""Serving the HTTP/JSON API: uvicorn on the configured address, its metrics on their own
port (like every service's)."""

from __future__ import annotations

import asyncio
import logging
import signal
import sys

from prometheus_client import start_http_server

from recallmesh.http_api.app import build_app
from recallmesh.http_api.settings import HttpSettings
from recallmesh.shared.logs import configure_logging

log = logging.getLogger("recallmesh.http")


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


async def serve(settings: HttpSettings) -> bool:
    """Serve until stopped; False when it could not start (e.g. the port is taken)."""
    import uvicorn

    config = uvicorn.Config(build_app(settings), host=settings.host, port=settings.port,
                            log_config=None, access_log=False, lifespan="on", loop="asyncio")
    http = uvicorn.Server(config)
    log.info("HTTP/JSON API at http://%s:%d (gateway %s)", _url_host(settings.host),
             settings.port, settings.target)
    await http.serve()
    return bool(http.started)


def run(settings: HttpSettings) -> int:
    configure_logging("http")
    try:
        if settings.metrics_port:
            start_http_server(settings.metrics_port, addr=settings.host)
    except OSError as exc:
        print(f"recallmesh http: metrics port {settings.metrics_port}: {exc}", file=sys.stderr)
        return 1
    # uvicorn stops on SIGINT / SIGTERM, then raises the signal again once it has stopped:
    # ignored here, so the channel is closed and the exit status is 0.
    previous = signal.signal(signal.SIGTERM, lambda *_: None)
    try:
        return 0 if asyncio.run(serve(settings)) else 1
    except KeyboardInterrupt:
        return 0
    except SystemExit as exc:  # uvicorn's exit when it cannot start
        return exc.code if isinstance(exc.code, int) else 1
    finally:
        signal.signal(signal.SIGTERM, previous)
