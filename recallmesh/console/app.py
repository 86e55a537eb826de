"""The web console: server-rendered pages over the gateway's MemoryService, through the typed
client, with the signed-in key's own namespaces and scopes (docs/console.md,
docs/decisions/0019-console.md). This module builds the app: the console's shared state
(state.py), the route table (routes/), and what wraps every request.

Every page is rendered on the server (Jinja2); htmx, shipped in the package, swaps the parts a
filter or a recall changes. Nothing runs in the browser that the Content-Security-Policy below
does not allow: scripts and styles from this origin only, no inline code, no third-party
asset. Every POST must come from this origin and carry the session's CSRF token (guard.py)."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from recallmesh.console import bounds, metrics
from recallmesh.console.paths import NamespaceSegment
from recallmesh.console.routes import ROUTES, route_name
from recallmesh.console.settings import ConsoleSettings
from recallmesh.console.state import Console

log = logging.getLogger("recallmesh.console")

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
       "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
]


def build_app(settings: ConsoleSettings) -> Starlette:
    """The console's ASGI app: its state on `app.state.console`, the route table, and
    around them the namespace's raw segment, metrics, security headers and body limits."""
    console = Console(settings)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        await console.close()

    app = Starlette(routes=list(ROUTES), lifespan=lifespan,
                    exception_handlers={HTTPException: _bare_status})
    app.state.console = console
    return NamespaceSegment(  # type: ignore[return-value]
        Timed(SecurityHeaders(bounds.BodyLimit(app)), console))


async def _bare_status(request: Request, exc: Exception) -> Response:
    """A URL no route serves (or a method it does not take): the status alone."""
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    return PlainTextResponse(f"{status}\n", status_code=status)


class SecurityHeaders:
    """Adds the security headers to every response, and no-store to every page."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        static = scope["path"].startswith("/static/")

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers += SECURITY_HEADERS
                if not static:
                    headers.append((b"cache-control", b"no-store"))
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, with_headers)


class Timed:
    """Counts and times every request by its route template (never the raw path, which holds
    namespaces and ids: routes.route_name), and logs one line per request without its query
    string."""

    def __init__(self, app: ASGIApp, console: Console) -> None:
        self.app = app
        self.console = console

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = {"code": 500}

        async def record(message: Message) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, record)
        finally:
            route = route_name(scope.get("path", ""))
            elapsed = time.perf_counter() - started
            metrics.REQUESTS.labels(route, scope["method"], str(status["code"])).inc()
            metrics.LATENCY.labels(route).observe(elapsed)
            if route not in ("/healthz", "/readyz", "/static"):
                log.info("%s %s %d %.1f ms", scope["method"], route, status["code"],
                         elapsed * 1000)
            await self.console.sweep()
