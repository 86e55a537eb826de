"""Serving the HTTP/JSON API (recallmesh.wire.asgi: uvicorn, metrics on their own port)."""

from __future__ import annotations

import logging

from recallmesh.http_api.app import build_app
from recallmesh.http_api.settings import HttpSettings
from recallmesh.shared.logs import configure_logging
from recallmesh.wire import asgi

log = logging.getLogger("recallmesh.http")


def run(settings: HttpSettings) -> int:
    configure_logging("http")
    return asgi.run(lambda: build_app(settings), name="http", host=settings.host,
                    port=settings.port, metrics_port=settings.metrics_port, log=log,
                    started=f"HTTP/JSON API at http://{asgi.url_host(settings.host)}:"
                            f"{settings.port} (gateway {settings.target})")
