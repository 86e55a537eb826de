"""Serving the console (recallmesh.wire.asgi: uvicorn, metrics on their own port)."""

from __future__ import annotations

import logging

from recallmesh.console.app import build_app
from recallmesh.console.settings import ConsoleSettings
from recallmesh.shared.logs import configure_logging
from recallmesh.wire import asgi

log = logging.getLogger("recallmesh.console")


def run(settings: ConsoleSettings) -> int:
    configure_logging("console")
    return asgi.run(lambda: build_app(settings), name="console", host=settings.host,
                    port=settings.port, metrics_port=settings.metrics_port, log=log,
                    started=f"console at http://{asgi.url_host(settings.host)}:{settings.port} "
                            f"(gateway {settings.target}; sensitive text "
                            f"{'shown' if settings.show_sensitive else 'withheld'})")
