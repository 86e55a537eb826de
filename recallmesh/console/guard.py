"""The sign-in guard every page but sign-in passes (`signed_in`), and what a signed-in
handler reads from its request: its form, within the console's limits, and its namespace.

The guard finds the request's session (or signs a browser on this machine in), refuses a POST
from another origin or without the session's CSRF token, and turns what a handler raises into
the error page: a refusal of the console's own, a form it cannot read, or the gateway's
answer (a revoked key signs its sessions out)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from urllib.parse import urlencode

from starlette.datastructures import FormData
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from recallmesh.client import (
    NotFoundError,
    PermissionDeniedError,
    RecallmeshError,
    UnauthenticatedError,
)
from recallmesh.console import bounds, forms, metrics
from recallmesh.console.origin import partial, same_origin
from recallmesh.console.paths import namespace_name
from recallmesh.console.sessions import Session, valid_csrf
from recallmesh.console.state import Console, console_of, see_other
from recallmesh.shared.errors import InvalidArgument
from recallmesh.wire import validation
from recallmesh.wire.http_status import HTTP_STATUS

log = logging.getLogger("recallmesh.console")

Handler = Callable[[Request, Session], Awaitable[Response]]
Endpoint = Callable[[Request], Awaitable[Response]]


class Refused(Exception):
    """A request refused by the console itself (status, message)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def signed_in(handler: Handler) -> Endpoint:
    """The endpoint that runs `handler` with the request's session, if it has one."""

    async def endpoint(request: Request) -> Response:
        console = console_of(request)
        session = console.session_of(request)
        fresh = None
        if session is None:
            fresh = session = await console.auto_session(request)
        if session is None:
            if request.method == "POST" or partial(request):
                return PlainTextResponse("signed out: sign in again\n", status_code=401,
                                         headers={"HX-Redirect": "/sign-in"})
            return see_other("/sign-in?" + urlencode({"next": request.url.path}))
        try:
            if request.method == "POST":
                await _check_post(request, session)
            response = await handler(request, session)
        except Refused as exc:
            response = console.error(request, session, exc.status, exc.message)
        except forms.FormError as exc:
            response = console.error(request, session, 400, str(exc))
        except UnauthenticatedError:  # the key was revoked or has expired
            console.sessions.drop_key(session.key)
            return see_other("/sign-in")
        except RecallmeshError as exc:
            response = _gateway_error(console, request, session, exc)
        if fresh is not None:
            console.set_cookies(response, fresh)
        return response

    return endpoint


async def _check_post(request: Request, session: Session) -> None:
    """A POST from this origin whose form carries the session's CSRF token (Refused
    otherwise); its form is then `request.state.form`."""
    if not same_origin(request):
        metrics.REFUSED.labels("origin").inc()
        raise Refused(403, "refused: this form was not sent from the console")
    form = await read_form(request)
    request.state.form = form
    token = form.get("csrf")
    if not valid_csrf(session, token if isinstance(token, str) else None):
        metrics.REFUSED.labels("csrf").inc()
        log.warning("refused a form without this session's CSRF token on %s "
                    "(key %s)", request.url.path, session.key_name)
        raise Refused(403, "refused: the form carried no valid CSRF token "
                           "(reload the page and try again)")


def _gateway_error(console: Console, request: Request, session: Session,
                   exc: RecallmeshError) -> Response:
    """The error page for a call the gateway refused or failed."""
    code = exc.code.name
    metrics.GATEWAY_ERRORS.labels(code).inc()
    status = HTTP_STATUS.get(code, 502)  # an upstream failure
    if isinstance(exc, PermissionDeniedError):
        message = f"this key may not do that: {exc.details}"
    elif isinstance(exc, NotFoundError):
        message = f"not found: {exc.details}"
    else:
        message = f"the gateway answered {code}: {exc.details}"
    return console.error(request, session, status, message)


async def read_form(request: Request) -> FormData:
    """A POST's form within the console's limits (the body's size was checked before it was
    read: bounds.BodyLimit); Refused (400) past them."""
    importing = request.url.path.endswith(bounds.IMPORT_SUFFIX)
    try:
        return await request.form(max_files=1 if importing else 0,
                                  max_fields=bounds.MAX_FORM_FIELDS,
                                  max_part_size=bounds.MAX_FORM_BYTES)
    except HTTPException as exc:  # the parser's own limit or a malformed body
        raise Refused(400, f"refused: {exc.detail}") from None


def strings(form: FormData) -> dict[str, str]:
    """A form's text fields (an uploaded file is not one)."""
    return {k: v for k, v in form.items() if isinstance(v, str)}


def namespace_of(request: Request) -> str:
    """The namespace a page under /ns/ is of (Refused, 400, when it names none)."""
    try:
        return validation.namespace(namespace_name(request.path_params["namespace"]),
                                    "namespace")
    except (ValueError, InvalidArgument) as exc:
        raise Refused(400, f"not a namespace name: {exc}") from None
