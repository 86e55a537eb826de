"""Serving an HTTP front of the gateway (the web console, the HTTP/JSON API): uvicorn on its
address, its Prometheus metrics on a port of their own like every service's, SIGTERM as a
clean stop. uvicorn and prometheus_client are imported only here, when one serves."""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
from collections.abc import Callable
from typing import Any


def url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


async def serve(build: Callable[[], Any], host: str, port: int, log: logging.Logger,
                started: str) -> bool:
    """Serve the app `build` makes (in the event loop it serves in) until stopped, logging
    `started`; False when it could not start (e.g. the port is taken)."""
    import uvicorn

    config = uvicorn.Config(build(), host=host, port=port, log_config=None, access_log=False,
                            lifespan="on", loop="asyncio")
    http = uvicorn.Server(config)
    log.info("%s", started)
    await http.serve()
    return bool(http.started)


def run(build: Callable[[], Any], *, name: str, host: str, port: int, metrics_port: int,
        log: logging.Logger, started: str) -> int:
    """`recallmesh <name>`'s exit status: 1 when the metrics port or the port is taken."""
    from prometheus_client import start_http_server

    try:
        if metrics_port:
            start_http_server(metrics_port, addr=host)
    except OSError as exc:
        print(f"recallmesh {name}: metrics port {metrics_port}: {exc}", file=sys.stderr)
        return 1
    # uvicorn stops on SIGINT / SIGTERM, then raises the signal again once it has stopped:
    # ignored here, so what the app holds is closed and the exit status is 0.
    previous = signal.signal(signal.SIGTERM, lambda *_: None)
    try:
        return 0 if asyncio.run(serve(build, host, port, log, started)) else 1
    except KeyboardInterrupt:
        return 0
    except SystemExit as exc:  # uvicorn's exit when it cannot start
        return exc.code if isinstance(exc.code, int) else 1
    finally:
        signal.signal(signal.SIGTERM, previous)
