"""The console's URLs: a namespace's pages under /ns/<namespace>, the namespace's name in one
path segment whatever it holds (a namespace may hold "/", "%", "?" or "#"), and where sign-in
may send a browser on (`safe_next`). The route names that metrics and logs use come from the
route table (routes.route_name).

A link writes the name percent-encoded with nothing left safe (`ns_url`). A server decodes
the whole path before routing, which would turn an encoded "/" into a separator and open
another namespace's page; `NamespaceSegment` routes on the request's raw path instead, so the
router sees the namespace's segment still encoded and `namespace_name` decodes it once."""

from __future__ import annotations

import string
from urllib.parse import quote, quote_from_bytes, unquote

from starlette.types import ASGIApp, Receive, Scope, Send

PREFIX = "/ns/"
_SENT_AS_IS = "".join(c for c in string.printable if not c.isspace() and c != "/")


def ns_url(namespace: str, *rest: str) -> str:
    """The path of a namespace's page (`rest`: the page within it)."""
    return PREFIX + "/".join(quote(part, safe="") for part in (namespace, *rest))


def namespace_name(segment: str) -> str:
    """The namespace a routed segment names (still percent-encoded: see NamespaceSegment).
    ValueError when its bytes are not UTF-8."""
    return unquote(segment, errors="strict")


class NamespaceSegment:
    """For a path under /ns/, the path the router sees keeps the namespace's segment as the
    client encoded it and decodes the rest as usual."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        raw: bytes | None = scope.get("raw_path") if scope["type"] == "http" else None
        if raw and raw.startswith(PREFIX.encode()):
            parts = raw.split(b"?", 1)[0].split(b"/")
            # ["", "ns", <namespace as sent>, <the page, decoded>...]
            segment = quote_from_bytes(parts[2], safe=_SENT_AS_IS)
            rest = [unquote(p.decode("latin-1")) for p in parts[3:]]
            scope = dict(scope, path="/".join(["", "ns", segment, *rest]))
        await self.app(scope, receive, send)


def safe_next(raw: str | None) -> str:
    """Where to go after sign-in: a path of this console only (never another site)."""
    if raw and raw.startswith("/") and not raw.startswith("//") and "\\" not in raw:
        return raw
    return "/"
