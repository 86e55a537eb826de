"""Serving the console: uvicorn on the configured address, its metrics on their own port."""

from __future__ import annotations

import asyncio
import logging
import signal
import sys

from prometheus_client import start_http_server

from recallmesh.console.app import build_app
from recallmesh.console.settings import ConsoleSettings
from recallmesh.shared.logs import configure_logging

log = logging.getLogger("recallmesh.console")


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


async def serve(settings: ConsoleSettings) -> bool:
    """Serve until stopped; False when it could not start (e.g. the port is taken)."""
    import uvicorn

    config = uvicorn.Config(build_app(settings), host=settings.host, port=settings.port,
                            log_config=None, access_log=False, lifespan="on", loop="asyncio")
    http = uvicorn.Server(config)
    where = f"http://{_url_host(settings.host)}:{settings.port}"
    log.info("console at %s (gateway %s; sensitive text %s)", where, settings.target,
             "shown" if settings.show_sensitive else "withheld")
    await http.serve()
    return bool(http.started)


def run(settings: ConsoleSettings) -> int:
    configure_logging("console")
    try:
        if settings.metrics_port:
            start_http_server(settings.metrics_port, addr=settings.host)
    except OSError as exc:
        print(f"recallmesh console: metrics port {settings.metrics_port}: {exc}",
              file=sys.stderr)
        return 1
    # uvicorn stops on SIGINT / SIGTERM, then raises the signal again once it has stopped:
    # ignored here, so the clients are closed and the exit status is 0.
    previous = signal.signal(signal.SIGTERM, lambda *_: None)
    try:
        return 0 if asyncio.run(serve(settings)) else 1
    except KeyboardInterrupt:
        return 0
    except SystemExit as exc:  # uvicorn's exit when it cannot start
        return exc.code if isinstance(exc.code, int) else 1
    finally:
        signal.signal(signal.SIGTERM, previous)
