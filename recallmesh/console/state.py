"""The console's shared state, one per app (`request.app.state.console`): its settings, the
signed-in sessions and one gateway client per session, the gateway's health probe and the
templates; and what every handler does with them: sign a key in (by hand or automatically,
from this machine), set the session's cookies, render a page or the error page."""

from __future__ import annotations

import logging
import secrets
from datetime import UTC, datetime
from importlib.resources import files
from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.templating import Jinja2Templates

from recallmesh.client import AsyncClient, Memory, RecallmeshError, UnauthenticatedError
from recallmesh.console import metrics
from recallmesh.console.explain import BAR_WIDTH
from recallmesh.console.origin import loopback, navigation, partial
from recallmesh.console.paths import ns_url
from recallmesh.console.sessions import Session, SessionStore
from recallmesh.console.settings import ConsoleSettings
from recallmesh.wire.health import GatewayHealth

log = logging.getLogger("recallmesh.console")

COOKIE = "recallmesh_session"
# A random id for this browser, sent on top-level navigations from other sites too
# (SameSite=Lax), so that auto sign-in finds this browser's session again instead of making
# another; it signs nothing in by itself.
BROWSER_COOKIE = "recallmesh_browser"
CONTENT_CUT = 160  # characters of a memory's text in a list; the rest is on its page
WITHHELD = "(sensitive: withheld by this console's setting)"


class Console:
    """The console's state: settings, sessions, one gateway client per session."""

    def __init__(self, settings: ConsoleSettings) -> None:
        self.settings = settings
        self.sessions = SessionStore(settings.session_idle_s, settings.session_max_s)
        self.clients: dict[str, AsyncClient] = {}
        self.health = GatewayHealth(settings.target)
        directory = files("recallmesh.console")
        self.templates = Jinja2Templates(directory=str(directory / "templates"))
        self.templates.env.globals.update(bar_width=BAR_WIDTH, shown=self.shown,
                                          cut=_cut, when=_when, qs=_qs, ns_url=ns_url)

    # --- sessions and clients ---------------------------------------------------------------

    def shown(self, memory: Memory) -> bool:
        """Whether the page may show this memory's text, tags and metadata."""
        return self.settings.show_sensitive or not memory.sensitive

    def client(self, session: Session) -> AsyncClient:
        client = self.clients.get(session.id)
        if client is None:
            client = AsyncClient(self.settings.target, token=session.key, tls=None,
                                 timeout=self.settings.call_timeout_s)
            self.clients[session.id] = client
        return client

    async def sweep(self) -> None:
        """Close the clients of sessions that ended."""
        for sid in [sid for sid in self.clients if not self.sessions.alive(sid)]:
            await self.clients.pop(sid).close()
        metrics.SESSIONS.set(len(self.sessions))

    async def close(self) -> None:
        """Close every session's client and the health probe's (the app's shutdown)."""
        for client in self.clients.values():
            await client.close()
        await self.health.aclose()

    async def sign_in(self, key: str, browser: str | None = None) -> Session:
        """A session for this key, if the gateway accepts it (RecallmeshError otherwise);
        `browser`: made by auto sign-in, for the browser of that id."""
        if not (0 < len(key) <= 8192 and all(33 <= ord(c) <= 126 for c in key)):
            raise UnauthenticatedError("that is not an API key")
        client = AsyncClient(self.settings.target, token=key, tls=None,
                             timeout=self.settings.call_timeout_s)
        try:
            caller = (await client.namespaces()).caller
        except BaseException:
            await client.close()
            raise
        session = self.sessions.create(key, subject=caller.subject, scopes=tuple(caller.scopes),
                                       auto=browser is not None, browser=browser or "")
        self.clients[session.id] = client  # the session's own from now on
        return session

    def session_of(self, request: Request) -> Session | None:
        return self.sessions.get(request.cookies.get(COOKIE))

    async def auto_session(self, request: Request) -> Session | None:
        """Sign a browser on this machine in with the configured key file, if any: only on a
        top-level navigation, and into the session this browser already has if it has one."""
        path = self.settings.auto_sign_in_key_file
        if path is None or not loopback(request) or not navigation(request):
            return None
        browser = request.cookies.get(BROWSER_COOKIE, "")
        if (known := self.sessions.auto_for(browser)) is not None:
            return known
        try:
            key = path.read_text(encoding="utf-8").strip()
        except OSError as exc:
            log.warning("auto sign-in: cannot read the key file %s: %s", path, exc)
            return None
        try:
            session = await self.sign_in(key, browser=_browser_id(browser))
        except RecallmeshError as exc:
            log.warning("auto sign-in refused by the gateway: %s", exc)
            return None
        metrics.SIGN_INS.labels("auto").inc()
        log.info("signed in automatically from loopback as %s (key %s)", session.subject,
                 session.key_name)
        return session

    def set_cookies(self, response: Response, session: Session) -> None:
        """The session's cookie on a response (and its browser's, for auto sign-in)."""
        settings = self.settings
        response.set_cookie(COOKIE, session.id, httponly=True, samesite="strict",
                            secure=settings.secure_cookies, path="/",
                            max_age=int(settings.session_max_s))
        if session.browser:
            response.set_cookie(BROWSER_COOKIE, session.browser, httponly=True, samesite="lax",
                                secure=settings.secure_cookies, path="/",
                                max_age=int(settings.session_max_s))

    # --- rendering ----------------------------------------------------------------------------

    def page(self, request: Request, name: str, session: Session | None,
             status: int = 200, **context: Any) -> HTMLResponse:
        context.setdefault("namespace", None)  # else a template finds Jinja's own global
        context.update(request=request, session=session,
                       csrf=session.csrf if session else "",
                       can_write="write" in (session.scopes if session else ()),
                       show_sensitive=self.settings.show_sensitive, withheld_text=WITHHELD)
        return self.templates.TemplateResponse(request, name, context, status_code=status)

    def error(self, request: Request, session: Session | None, status: int,
              message: str) -> HTMLResponse:
        """The error page; for an htmx request only its message, in place of the part it
        asked for."""
        name = "_error.html" if partial(request) else "error.html"
        return self.page(request, name, session, status=status, message=message)


def console_of(request: Request) -> Console:
    """The console a request reached (set on the app by build_app)."""
    console: Console = request.app.state.console
    return console


def see_other(url: str) -> RedirectResponse:
    return RedirectResponse(url, status_code=303)


def _cut(text: str, limit: int = CONTENT_CUT) -> str:
    return text if len(text) <= limit else text[:limit].rstrip() + "…"


def _when(value: datetime | None, short: bool = False) -> str:
    """A time in UTC, to the second (to the minute in lists)."""
    if value is None:
        return ""
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M" if short else
                                          "%Y-%m-%d %H:%M:%S UTC")


def _qs(params: dict[str, Any]) -> str:
    return urlencode({k: v for k, v in params.items() if v not in (None, "")})


def _browser_id(sent: str) -> str:
    """The id a browser sent back, or a new one (not one a page could have chosen: a new id
    is random, and a sent one is only ever looked up)."""
    return sent if 16 <= len(sent) <= 64 and sent.isascii() else secrets.token_urlsafe(24)
