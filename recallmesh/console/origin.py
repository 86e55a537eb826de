"""Where a request comes from and what it asks for, read from its headers: a browser's
top-level navigation, an htmx request for a part of a page, a request from this machine, a
POST from this origin. The sign-in guard (guard.py) and auto sign-in (state.py) read them."""

from __future__ import annotations

import ipaddress

from starlette.requests import Request

LOCAL_NAMES = ("localhost", "127.0.0.1", "[::1]")


def navigation(request: Request) -> bool:
    """A browser's top-level navigation to a page: what its fetch metadata says (an image,
    script, frame or fetch of another site's page says otherwise). A client that sends no
    fetch metadata is no browser page: curl, a script on this machine."""
    mode = request.headers.get("sec-fetch-mode")
    dest = request.headers.get("sec-fetch-dest")
    return mode in (None, "navigate") and dest in (None, "document") \
        and request.method == "GET" and not request.headers.get("hx-request")


def partial(request: Request) -> bool:
    """Whether htmx asked for a part of a page (a history restore asks for the whole)."""
    return bool(request.headers.get("hx-request")) \
        and not request.headers.get("hx-history-restore-request")


def loopback(request: Request) -> bool:
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


def same_origin(request: Request) -> bool:
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
