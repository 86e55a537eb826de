"""Signing in and out: the sign-in page and its form (a key the gateway accepts starts a
session), and sign-out, which ends the session and clears what the browser kept."""

from __future__ import annotations

import logging

from starlette.requests import Request
from starlette.responses import Response

from recallmesh.client import RecallmeshError
from recallmesh.console import metrics
from recallmesh.console.guard import Refused, read_form
from recallmesh.console.origin import same_origin
from recallmesh.console.paths import safe_next
from recallmesh.console.sessions import Session, key_digest
from recallmesh.console.state import COOKIE, console_of, see_other

log = logging.getLogger("recallmesh.console")


async def sign_in_page(request: Request) -> Response:
    console = console_of(request)
    session = console.session_of(request) or await console.auto_session(request)
    if session is not None:
        response = see_other(safe_next(request.query_params.get("next")))
        console.set_cookies(response, session)
        return response
    return console.page(request, "sign_in.html", None, next=request.query_params.get("next"))


async def sign_in(request: Request) -> Response:
    console = console_of(request)
    if not same_origin(request):
        metrics.REFUSED.labels("origin").inc()
        return console.page(request, "sign_in.html", None, status=403,
                            error="refused: this form was not sent from the console")
    try:
        form = await read_form(request)
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
    response = see_other(safe_next(str(form.get("next") or "")))
    console.set_cookies(response, session)
    return response


async def sign_out(request: Request, session: Session) -> Response:
    console = console_of(request)
    console.sessions.drop(session.id)
    await console.sweep()
    response = see_other("/sign-in")
    response.delete_cookie(COOKIE, path="/")
    # nothing of the pages seen stays in this browser (htmx keeps no history snapshot:
    # base.html's historyCacheSize 0; this clears what an older page may have left)
    response.headers["clear-site-data"] = '"cache", "storage"'
    return response
