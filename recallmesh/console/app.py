"""The web console: server-rendered pages over the gateway's MemoryService, through the typed
client, with the signed-in key's own namespaces and scopes (docs/console.md,
docs/decisions/0019-console.md).

Every page is rendered here (Jinja2); htmx, shipped in the package, swaps the parts a filter
or a recall changes. Nothing runs in the browser that the Content-Security-Policy below does
not allow: scripts and styles from this origin only, no inline code, no third-party asset.
Every POST must come from this origin and carry the session's CSRF token."""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from importlib.resources import files
from typing import Any
from urllib.parse import quote, urlencode

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData, UploadFile
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from recallmesh.client import (
    AsyncClient,
    Memory,
    NotFoundError,
    PermissionDeniedError,
    RecallmeshError,
    UnauthenticatedError,
)
from recallmesh.client.jsonl import InputError, export_line
from recallmesh.console import bounds, forms, metrics, pictures
from recallmesh.console.explain import BAR_WIDTH, explain_view
from recallmesh.console.paths import NamespaceSegment, namespace_name, ns_url, route_name, safe_next
from recallmesh.console.sessions import Session, SessionStore, key_digest, valid_csrf
from recallmesh.console.settings import ConsoleSettings
from recallmesh.shared.errors import InvalidArgument
from recallmesh.wire import validation
from recallmesh.wire.health import GatewayHealth
from recallmesh.wire.http_status import HTTP_STATUS

log = logging.getLogger("recallmesh.console")

COOKIE = "recallmesh_session"
# A random id for this browser, sent on top-level navigations from other sites too
# (SameSite=Lax), so that auto sign-in finds this browser's session again instead of making
# another; it signs nothing in by itself.
BROWSER_COOKIE = "recallmesh_browser"
PAGE_SIZE = 25
SEARCH_HITS = 50  # a search on a namespace's list shows at most this many, best first
CONTENT_CUT = 160  # characters of a memory's text in a list; the rest is on its page
MAX_CHAIN = 20  # superseded-by steps followed on a memory's page
WITHHELD = "(sensitive: withheld by this console's setting)"

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


class Refused(Exception):
    """A request refused by the console itself (status, message)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


LOCAL_NAMES = ("localhost", "127.0.0.1", "[::1]")


def _navigation(request: Request) -> bool:
    """A browser's top-level navigation to a page: what its fetch metadata says (an image,
    script, frame or fetch of another site's page says otherwise). A client that sends no
    fetch metadata is no browser page: curl, a script on this machine."""
    mode = request.headers.get("sec-fetch-mode")
    dest = request.headers.get("sec-fetch-dest")
    return mode in (None, "navigate") and dest in (None, "document") \
        and request.method == "GET" and not request.headers.get("hx-request")


def _partial(request: Request) -> bool:
    """Whether htmx asked for a part of a page (a history restore asks for the whole)."""
    return bool(request.headers.get("hx-request")) \
        and not request.headers.get("hx-history-restore-request")


def _loopback(request: Request) -> bool:
    """A request from this machine to a local name: from a loopback address, with a Host
    header naming localhost (a page of another site whose name resolves to 127.0.0.1, DNS
    rebinding, sends its own name there and is not signed in)."""
    host = request.client.host if request.client else ""
    try:
        if not ipaddress.ip_address(host).is_loopback:
            return False
    except ValueError:
        return False
    name = request.headers.get("host", "").lower()
    name = name.rsplit(":", 1)[0] if not name.endswith("]") else name
    return name in LOCAL_NAMES


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
        self.static = StaticFiles(directory=str(directory / "static"))

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
        if path is None or not _loopback(request) or not _navigation(request):
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
        name = "_error.html" if _partial(request) else "error.html"
        return self.page(request, name, session, status=status, message=message)


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


def _set_cookie(response: Response, session: Session, settings: ConsoleSettings) -> None:
    response.set_cookie(COOKIE, session.id, httponly=True, samesite="strict",
                        secure=settings.secure_cookies, path="/",
                        max_age=int(settings.session_max_s))
    if session.browser:
        response.set_cookie(BROWSER_COOKIE, session.browser, httponly=True, samesite="lax",
                            secure=settings.secure_cookies, path="/",
                            max_age=int(settings.session_max_s))


def _see_other(url: str) -> RedirectResponse:
    return RedirectResponse(url, status_code=303)


Handler = Callable[[Request, Session], Awaitable[Response]]


def build_app(settings: ConsoleSettings) -> Starlette:
    console = Console(settings)

    def origin_ok(request: Request) -> bool:
        """A POST from this origin: Sec-Fetch-Site same-origin, or an Origin header naming
        this host (a browser sends one of them on every form POST)."""
        site = request.headers.get("sec-fetch-site")
        if site is not None:
            return site in ("same-origin", "none")
        origin = request.headers.get("origin")
        if origin is None:
            return True  # not a browser (curl, tests): the CSRF token still guards it
        host = request.headers.get("host", "")
        return origin in (f"http://{host}", f"https://{host}")

    def signed_in(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            session = console.session_of(request)
            fresh = None
            if session is None:
                fresh = session = await console.auto_session(request)
            if session is None:
                if request.method == "POST" or _partial(request):
                    return PlainTextResponse("signed out: sign in again\n", status_code=401,
                                             headers={"HX-Redirect": "/sign-in"})
                return _see_other("/sign-in?" + urlencode({"next": request.url.path}))
            try:
                if request.method == "POST":
                    if not origin_ok(request):
                        metrics.REFUSED.labels("origin").inc()
                        raise Refused(403, "refused: this form was not sent from the console")
                    form = await _read_form(request)
                    request.state.form = form
                    token = form.get("csrf")
                    if not valid_csrf(session, token if isinstance(token, str) else None):
                        metrics.REFUSED.labels("csrf").inc()
                        log.warning("refused a form without this session's CSRF token on %s "
                                    "(key %s)", request.url.path, session.key_name)
                        raise Refused(403, "refused: the form carried no valid CSRF token "
                                           "(reload the page and try again)")
                response = await handler(request, session)
            except Refused as exc:
                response = console.error(request, session, exc.status, exc.message)
            except forms.FormError as exc:
                response = console.error(request, session, 400, str(exc))
            except UnauthenticatedError:  # the key was revoked or has expired
                console.sessions.drop_key(session.key)
                return _see_other("/sign-in")
            except RecallmeshError as exc:
                code = exc.code.name
                metrics.GATEWAY_ERRORS.labels(code).inc()
                status = HTTP_STATUS.get(code, 502)  # an upstream failure
                if isinstance(exc, PermissionDeniedError):
                    message = f"this key may not do that: {exc.details}"
                elif isinstance(exc, NotFoundError):
                    message = f"not found: {exc.details}"
                else:
                    message = f"the gateway answered {code}: {exc.details}"
                response = console.error(request, session, status, message)
            if fresh is not None:
                _set_cookie(response, fresh, settings)
            return response

        return endpoint

    # --- sign-in ------------------------------------------------------------------------------

    async def sign_in_page(request: Request) -> Response:
        session = console.session_of(request) or await console.auto_session(request)
        if session is not None:
            response = _see_other(safe_next(request.query_params.get("next")))
            _set_cookie(response, session, settings)
            return response
        return console.page(request, "sign_in.html", None, next=request.query_params.get("next"))

    async def sign_in(request: Request) -> Response:
        if not origin_ok(request):
            metrics.REFUSED.labels("origin").inc()
            return console.page(request, "sign_in.html", None, status=403,
                                error="refused: this form was not sent from the console")
        try:
            form = await _read_form(request)
        except Refused as exc:
            return console.page(request, "sign_in.html", None, status=exc.status,
                                error=exc.message)
        key = str(form.get("key") or "").strip()
        try:
            session = await console.sign_in(key)
        except RecallmeshError as exc:
            metrics.SIGN_INS.labels("refused").inc()
            log.info("sign-in refused (%s): %s", key_digest(key) if key else "empty",
                     exc.code.name)
            message = ("the gateway refused this key" if exc.code.name in (
                "UNAUTHENTICATED", "PERMISSION_DENIED") else f"the gateway answered "
                f"{exc.code.name}: {exc.details}")
            return console.page(request, "sign_in.html", None, status=401, error=message,
                                next=safe_next(str(form.get("next") or "")))
        metrics.SIGN_INS.labels("ok").inc()
        log.info("signed in as %s (key %s)", session.subject, session.key_name)
        response = _see_other(safe_next(str(form.get("next") or "")))
        _set_cookie(response, session, settings)
        return response

    async def sign_out(request: Request, session: Session) -> Response:
        console.sessions.drop(session.id)
        await console.sweep()
        response = _see_other("/sign-in")
        response.delete_cookie(COOKIE, path="/")
        # nothing of the pages seen stays in this browser (htmx keeps no history snapshot:
        # base.html's historyCacheSize 0; this clears what an older page may have left)
        response.headers["clear-site-data"] = '"cache", "storage"'
        return response

    # --- pages --------------------------------------------------------------------------------

    async def namespaces(request: Request, session: Session) -> Response:
        listed = await console.client(session).namespaces(
            prefix=request.query_params.get("prefix", ""))
        return console.page(request, "namespaces.html", session, listed=listed,
                            prefix=request.query_params.get("prefix", ""))

    def namespace_of(request: Request) -> str:
        try:
            return validation.namespace(namespace_name(request.path_params["namespace"]),
                                        "namespace")
        except (ValueError, InvalidArgument) as exc:
            raise Refused(400, f"not a namespace name: {exc}") from None

    async def memories(request: Request, session: Session) -> Response:
        namespace = namespace_of(request)
        params = dict(request.query_params)
        options = forms.list_options(params)
        client = console.client(session)
        query = params.get("q", "").strip()
        found = None
        if query:  # a search: the namespace's memories by relevance, under the same filters
            result = await client.recall(query, namespace=namespace, k=SEARCH_HITS,
                                         **forms.filter_options(params))
            found = result.hits
            page, total = None, len(found)
        else:
            page, total = await asyncio.gather(
                client.list(namespace=namespace, page_size=PAGE_SIZE,
                            page_token=params.get("page_token", ""), **options),
                client.count(namespace=namespace, **forms.count_options(options)))
        partial = _partial(request)
        written = [] if partial else await weekly_counts(client, namespace)
        kept = {k: v for k, v in params.items() if k != "page_token"}
        return console.page(request, "_memory_rows.html" if partial else "memories.html",
                            session, namespace=namespace, page=page, found=found, query=query,
                            total=total, params=params, kept=kept, weeks=written,
                            bars=pictures.bars(written), picture_size=(
                                pictures.WIDTH, pictures.HEIGHT, pictures.LABEL_H),
                            filter_fields=forms.FILTER_FORM_FIELDS, orders=forms.ORDERS)

    async def weekly_counts(client: AsyncClient, namespace: str) -> list[pictures.Week]:
        spans = pictures.weeks(datetime.now(UTC))
        counts = await asyncio.gather(*(
            client.count(namespace=namespace, created_after=w.start, created_before=w.end)
            for w in spans))
        return [pictures.Week(w.start, w.end, n) for w, n in zip(spans, counts, strict=True)]

    async def store(request: Request, session: Session) -> Response:
        namespace = namespace_of(request)
        content, fields = forms.new_memory(_strings(request.state.form))
        stored = await console.client(session).store(content, namespace=namespace, **fields)
        log.info("stored %s in %s as %s", stored.memory.id, namespace, session.subject)
        return _see_other(ns_url(namespace, "m", stored.memory.id))

    async def supersede(request: Request, session: Session) -> Response:
        namespace = namespace_of(request)
        memory_id = request.path_params["memory_id"]
        content, fields = forms.new_memory(_strings(request.state.form))
        stored = await console.client(session).store(content, namespace=namespace,
                                                     supersedes=[memory_id], **fields)
        log.info("stored %s in %s superseding %s as %s", stored.memory.id, namespace,
                 memory_id, session.subject)
        return _see_other(ns_url(namespace, "m", stored.memory.id))

    async def memory(request: Request, session: Session) -> Response:
        namespace = namespace_of(request)
        memory_id = request.path_params["memory_id"]
        client = console.client(session)
        history = await client.history(memory_id, namespace=namespace)
        chain: list[Memory] = []
        current = history.memory
        while current.superseded_by and len(chain) < MAX_CHAIN:
            try:
                current = await client.get(current.superseded_by, namespace=namespace)
            except NotFoundError:
                break
            chain.append(current)
        return console.page(request, "memory.html", session, namespace=namespace,
                            memory=history.memory, history=history, chain=chain,
                            sensitive_ever=history.memory.sensitive or any(
                                v.memory.sensitive for v in history.versions))

    async def update(request: Request, session: Session) -> Response:
        namespace = namespace_of(request)
        memory_id = request.path_params["memory_id"]
        client = console.client(session)
        current = await client.get(memory_id, namespace=namespace)
        form = _strings(request.state.form)
        if not console.shown(current):
            form.pop("content", None)  # the page did not show it: it cannot have changed it
            form.pop("tags", None)
        changed = forms.update_fields(form, current)
        if changed:
            await client.update(memory_id, namespace=namespace, **changed)
            log.info("updated %s in %s (%s) as %s", memory_id, namespace,
                     ", ".join(sorted(changed)), session.subject)
        return _see_other(ns_url(namespace, "m", memory_id))

    async def pin(request: Request, session: Session) -> Response:
        namespace = namespace_of(request)
        memory_id = request.path_params["memory_id"]
        pinned = request.url.path.endswith("/pin")
        await console.client(session).update(memory_id, namespace=namespace, pinned=pinned)
        log.info("%s %s in %s as %s", "pinned" if pinned else "unpinned", memory_id, namespace,
                 session.subject)
        return _see_other(ns_url(namespace, "m", memory_id))

    async def delete(request: Request, session: Session) -> Response:
        namespace = namespace_of(request)
        memory_id = request.path_params["memory_id"]
        purge = _strings(request.state.form).get("purge") == "on"
        await console.client(session).delete(memory_id, namespace=namespace, purge=purge)
        log.info("%s %s in %s as %s", "purged" if purge else "deleted", memory_id, namespace,
                 session.subject)
        return _see_other(ns_url(namespace) + "?" + urlencode(
            {"done": f"{'purged' if purge else 'deleted'} {memory_id}"}))

    async def recall(request: Request, session: Session) -> Response:
        namespace = namespace_of(request)
        params = dict(request.query_params)
        query = params.get("q", "").strip()
        result = context = view = None
        if query:
            client = console.client(session)
            result, context = await asyncio.gather(
                client.recall(query, namespace=namespace, **forms.recall_options(params)),
                client.context(query, namespace=namespace, **forms.context_options(params)))
            view = explain_view(result)
        template = "_recall_result.html" if _partial(request) else "recall.html"
        memories_by_id = {hit.memory.id: hit.memory for hit in result.hits} if result else {}
        return console.page(request, template, session, namespace=namespace, query=query,
                            params=params, result=result, context=context, view=view,
                            memories_by_id=memories_by_id, sorts=forms.SORTS,
                            filter_fields=forms.FILTER_FORM_FIELDS)

    async def delete_matching(request: Request, session: Session) -> Response:
        namespace = namespace_of(request)
        if request.method == "GET":
            return console.page(request, "delete_matching.html", session, namespace=namespace,
                                params=dict(request.query_params), dry=None,
                                filter_fields=forms.FILTER_FORM_FIELDS)
        form = _strings(request.state.form)
        filters = forms.filter_options(form)
        if not filters:
            raise forms.FormError("give at least one filter: delete-matching never deletes a "
                                  "whole namespace (that is DeleteNamespace)")
        purge = form.get("purge") == "on"
        client = console.client(session)
        if form.get("confirm") != "yes":
            dry = await client.delete_matching(namespace=namespace, purge=purge, sample_size=10,
                                               **filters)
            return console.page(request, "delete_matching.html", session, namespace=namespace,
                                params=form, dry=dry, filter_fields=forms.FILTER_FORM_FIELDS)
        done = await client.delete_matching(namespace=namespace, purge=purge, confirm=True,
                                            **filters)
        log.info("deleted %d memories matching filters in %s as %s", done.deleted, namespace,
                 session.subject)
        return _see_other(ns_url(namespace) + "?" + urlencode(
            {"done": f"{'purged' if purge else 'deleted'} {done.deleted} memories"}))

    async def export(request: Request, session: Session) -> Response:
        namespace = namespace_of(request)
        filters = forms.filter_options(dict(request.query_params))
        client = console.client(session)
        records = client.export(namespace=namespace, **filters)
        first = [record async for record in _take(records, 1)]  # errors before the headers

        async def lines() -> AsyncIterator[bytes]:
            for record in first:
                yield export_line(record).encode()
            async for record in records:
                yield export_line(record).encode()

        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        name = f"{namespace}-{stamp}.jsonl".replace('"', "")
        log.info("export of %s started as %s", namespace, session.subject)
        return StreamingResponse(lines(), media_type="application/x-ndjson", headers={
            "content-disposition": f"attachment; filename*=UTF-8''{quote(name)}"})

    async def import_(request: Request, session: Session) -> Response:
        namespace = namespace_of(request)
        upload = request.state.form.get("file")
        if not isinstance(upload, UploadFile):
            raise forms.FormError("import: choose a JSONL file (as export writes)")
        if (upload.size or 0) > bounds.MAX_IMPORT_BYTES:
            raise forms.FormError(f"import: the file is larger than "
                                  f"{bounds.MAX_IMPORT_BYTES // (1024 * 1024)} MiB; use "
                                  f"`recallmesh import`")
        name = (upload.filename or "the file")[:200]
        try:  # parsed in a worker thread: the event loop goes on serving other requests
            records = await run_in_threadpool(bounds.read_export, upload.file, name)
        except InputError as exc:
            raise forms.FormError(f"import: {exc}") from None
        result = await console.client(session).import_records(records, namespace=namespace)
        log.info("imported %d memories into %s as %s", result.imported, namespace,
                 session.subject)
        return _see_other(ns_url(namespace) + "?" + urlencode(
            {"done": f"imported {result.imported} memories ({result.unchanged} unchanged, "
                     f"{result.relations_written} relations)"}))

    # --- probes -------------------------------------------------------------------------------

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        for client in console.clients.values():
            await client.close()
        await console.health.aclose()

    routes = [
        Route("/healthz", console.health.healthz),
        Route("/readyz", console.health.readyz),
        Mount("/static", app=console.static, name="static"),
        Route("/sign-in", sign_in_page, methods=["GET"]),
        Route("/sign-in", sign_in, methods=["POST"]),
        Route("/sign-out", signed_in(sign_out), methods=["POST"]),
        Route("/", signed_in(namespaces)),
        Route("/ns/{namespace}", signed_in(memories)),
        Route("/ns/{namespace}/recall", signed_in(recall)),
        Route("/ns/{namespace}/export", signed_in(export)),
        Route("/ns/{namespace}/import", signed_in(import_), methods=["POST"]),
        Route("/ns/{namespace}/delete-matching", signed_in(delete_matching),
              methods=["GET", "POST"]),
        Route("/ns/{namespace}/m/{memory_id}", signed_in(memory)),
        Route("/ns/{namespace}/store", signed_in(store), methods=["POST"]),
        Route("/ns/{namespace}/m/{memory_id}/update", signed_in(update), methods=["POST"]),
        Route("/ns/{namespace}/m/{memory_id}/supersede", signed_in(supersede),
              methods=["POST"]),
        Route("/ns/{namespace}/m/{memory_id}/pin", signed_in(pin), methods=["POST"]),
        Route("/ns/{namespace}/m/{memory_id}/unpin", signed_in(pin), methods=["POST"]),
        Route("/ns/{namespace}/m/{memory_id}/delete", signed_in(delete), methods=["POST"]),
    ]

    async def not_found(request: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        return PlainTextResponse(f"{status}\n", status_code=status)

    app = Starlette(routes=routes, lifespan=lifespan,
                    exception_handlers={HTTPException: not_found})
    app.state.console = console
    return NamespaceSegment(  # type: ignore[return-value]
        Timed(SecurityHeaders(bounds.BodyLimit(app)), console))


class Timed:
    """Counts and times every request by its route template (never the raw path, which holds
    namespaces and ids), and logs one line per request without its query string."""

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


async def _read_form(request: Request) -> FormData:
    """A POST's form within the console's limits (the body's size was checked before it was
    read: bounds.BodyLimit); Refused (400) past them."""
    importing = request.url.path.endswith(bounds.IMPORT_SUFFIX)
    try:
        return await request.form(max_files=1 if importing else 0,
                                  max_fields=bounds.MAX_FORM_FIELDS,
                                  max_part_size=bounds.MAX_FORM_BYTES)
    except HTTPException as exc:  # the parser's own limit or a malformed body
        raise Refused(400, f"refused: {exc.detail}") from None


def _strings(form: FormData) -> dict[str, str]:
    return {k: v for k, v in form.items() if isinstance(v, str)}


async def _take(records: AsyncIterator[dict[str, Any]], n: int) -> AsyncIterator[dict[str, Any]]:
    for _ in range(n):
        try:
            yield await anext(records)
        except StopAsyncIteration:
            return
