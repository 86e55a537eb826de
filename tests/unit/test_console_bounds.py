"""What one request may cost the console (recallmesh/console/bounds.py, paths.py, sessions.py;
docs/decisions/0019-console.md "Bounded requests"): bodies refused by their stated size
before they are read, an import read line by line with every bad line named, any namespace
name reachable in one path segment, and automatic sessions in a pool of their own, made only
for a browser's top-level navigation.

The app is the real one over ASGI (httpx's in-process transport); the requests here are
answered before the gateway is needed, so no stack runs."""

from __future__ import annotations

import asyncio
import io
import json
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from starlette.requests import Request

from recallmesh.client.jsonl import InputError
from recallmesh.console import bounds, origin
from recallmesh.console.app import build_app
from recallmesh.console.paths import NamespaceSegment, namespace_name, ns_url
from recallmesh.console.routes import route_name
from recallmesh.console.sessions import MAX_AUTO_SESSIONS, SessionStore
from recallmesh.console.settings import ConsoleSettings

WHEN = {"created_at": "2026-03-01T09:00:00Z", "updated_at": "2026-03-01T09:00:00Z"}
RECORD = {"memory": {"id": "0b4e7f9e-0000-4000-8000-000000000001", "content": "x", **WHEN}}


def line(obj: Any) -> bytes:
    return (json.dumps(obj) + "\n").encode()


def call(method: str, path: str, headers: dict[str, str] | None = None,
         content: Any = None) -> httpx.Response:
    """One request to a console whose gateway is nowhere (built in the loop it serves in)."""

    async def go() -> httpx.Response:
        app = build_app(ConsoleSettings(target="127.0.0.1:1", metrics_port=0))
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as c:
            return await c.request(method, path, headers=headers, content=content)

    return asyncio.run(go())


# --- bodies, by their stated size ----------------------------------------------------------

def test_a_body_over_its_routes_limit_is_refused_before_it_is_read() -> None:
    over = bounds.MAX_FORM_BYTES + 1
    reply = call("POST", "/sign-in", {"content-length": str(over),
                                      "content-type": "application/x-www-form-urlencoded"},
                 b"k" * over)
    assert reply.status_code == 413 and "larger than this page takes" in reply.text
    # every form but an import's is small; an import takes a file of MAX_IMPORT_BYTES
    assert bounds.body_limit({"path": "/ns/a/m/x/update"}) == bounds.MAX_FORM_BYTES
    assert bounds.body_limit({"path": "/ns/a/import"}) > bounds.MAX_IMPORT_BYTES
    reply = call("POST", "/ns/a/import", {"content-length": str(bounds.MAX_IMPORT_BODY + 1)},
                 b"")
    assert reply.status_code == 413
    # the refusal carries the console's security headers like every answer
    assert reply.headers["x-content-type-options"] == "nosniff"


def test_a_body_that_does_not_state_its_size_is_refused() -> None:
    async def chunks() -> Any:
        yield b"key=x"

    reply = call("POST", "/sign-in", content=chunks())
    assert reply.status_code == 411


def test_a_form_of_too_many_fields_is_a_clear_refusal() -> None:
    body = "&".join(f"f{i}=v" for i in range(bounds.MAX_FORM_FIELDS + 5)).encode()
    reply = call("POST", "/sign-in", {"content-type": "application/x-www-form-urlencoded",
                                      "sec-fetch-site": "same-origin"}, body)
    assert reply.status_code == 400 and "Too many fields" in reply.text


# --- an import's file, line by line ----------------------------------------------------------

@pytest.mark.parametrize(("second", "says"), [
    (b"[" * 100_000 + b"]" * 100_000 + b"\n", "nested too deep"),
    (b'{"memory": {"id": "x", "content": "y", "importance": ' + b"9" * 5000 + b"}}\n",
     "not readable JSON"),
    (b'{"memory": {"content": "caf\xe9"}}\n', "not UTF-8"),
    (b"{not json\n", "not valid JSON"),
    (b'{"content": "a plain memory"}\n', "not an exported record"),
    (b'{"memory": {"content": "no id"}}\n', "has no id"),
    (b'{"memory": {"id": "0b4e7f9e-0000-4000-8000-000000000002", "bogus": 1}}\n',
     "not an exported record"),
    # what the gateway's Import would refuse, named by the line instead of records[i]
    (line({"memory": {"id": "0b4e7f9e-0000-4000-8000-000000000003", "content": "x"}}),
     "memory.created_at is required"),
    (line({"memory": {"id": "0b4e7f9e-0000-4000-8000-000000000004",
                      "content": "x" * 40_000, **WHEN}}), "memory.content exceeds"),
    (b" " * (bounds.MAX_LINE_BYTES + 1) + b"\n", "longer than"),
])
def test_every_bad_line_of_an_import_is_named(second: bytes, says: str) -> None:
    with pytest.raises(InputError, match=rf"upload\.jsonl:2: .*{says}"):
        bounds.read_export(io.BytesIO(line(RECORD) + second), "upload.jsonl")


def test_an_import_holds_at_most_its_cap_of_records(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bounds, "MAX_IMPORT_RECORDS", 3)
    def records(n: int) -> bytes:
        return b"".join(line({"memory": {**RECORD["memory"], "id": f"{i:08x}-0000-4000-8000-"
                                         "000000000000"}}) for i in range(n))

    assert len(bounds.read_export(io.BytesIO(records(3) + b"\n\n"), "f")) == 3
    with pytest.raises(InputError, match=r"f:4: the console imports at most 3 records"):
        bounds.read_export(io.BytesIO(records(4)), "f")
    monkeypatch.setattr(bounds, "MAX_IMPORT_LINES", 5)  # blank lines are lines too
    with pytest.raises(InputError, match=r"f:6: the console reads at most 5 lines"):
        bounds.read_export(io.BytesIO(records(1) + b"\n" * 10**6), "f")


# --- any namespace name, one path segment ----------------------------------------------------

NAMES = ["team/a", "a%2Fb", "what?", "#1", "Ünïcødé 名前", "..", "a/../b", "100%", "a b",
         "x/m/0b4e7f9e-0000-4000-8000-000000000000"]


def routed_path(url: str) -> str:
    """The path the router sees for a URL, as uvicorn passes it on (path decoded, raw kept)."""
    from urllib.parse import unquote

    seen: dict[str, str] = {}

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen["path"] = scope["path"]

    async def nothing(*_: Any) -> Any:
        return None

    scope = {"type": "http", "path": unquote(url), "raw_path": url.encode()}
    asyncio.run(NamespaceSegment(app)(scope, nothing, nothing))
    return seen["path"]


@pytest.mark.parametrize("name", NAMES)
def test_any_namespace_name_is_one_segment_and_comes_back_whole(name: str) -> None:
    path = routed_path(ns_url(name, "m", "0b4e7f9e-0000-4000-8000-000000000000", "pin"))
    parts = path.split("/")
    assert len(parts) == 6 and parts[3:] == ["m", "0b4e7f9e-0000-4000-8000-000000000000",
                                             "pin"]
    assert namespace_name(parts[2]) == name
    assert route_name(path) == "/ns/{namespace}/m/{id}/pin"


@given(st.text(alphabet=st.characters(exclude_categories=["Cs"]), min_size=1,
               max_size=40))
def test_every_name_round_trips(name: str) -> None:
    path = routed_path(ns_url(name, "recall"))
    assert namespace_name(path.split("/")[2]) == name and path.endswith("/recall")


def test_routes_never_name_a_word_a_client_made_up() -> None:
    for path in ("/ns/a/xyz", "/ns/a/m/id/xyz", "/ns/a/recall%20me", "/other"):
        assert route_name(path) == "other"


# --- automatic sessions -----------------------------------------------------------------------

def test_automatic_sessions_never_sign_out_one_typed_in() -> None:
    store = SessionStore(60, 600)
    typed = store.create("rmk_typed")
    autos = [store.create("rmk_local", auto=True, browser=f"b{i}")
             for i in range(MAX_AUTO_SESSIONS + 20)]
    assert store.get(typed.id) is typed
    assert sum(1 for s in autos if store.alive(s.id)) == MAX_AUTO_SESSIONS
    assert not store.alive(autos[0].id) and store.alive(autos[-1].id)  # oldest went first
    # a browser finds its own automatic session again, and only its own
    assert store.auto_for(f"b{MAX_AUTO_SESSIONS + 19}") is autos[-1]
    assert store.auto_for("b0") is None and store.auto_for("") is None


@pytest.mark.parametrize(("headers", "navigation"), [
    ({"sec-fetch-mode": "navigate", "sec-fetch-dest": "document"}, True),
    ({}, True),  # no fetch metadata: not a browser page (curl, a script here)
    ({"sec-fetch-mode": "no-cors", "sec-fetch-dest": "image"}, False),  # another site's <img>
    ({"sec-fetch-mode": "navigate", "sec-fetch-dest": "iframe"}, False),
    ({"sec-fetch-mode": "cors", "sec-fetch-dest": "empty"}, False),  # fetch()
    ({"sec-fetch-mode": "no-cors", "sec-fetch-dest": "script"}, False),
    ({"hx-request": "true"}, False),
])
def test_auto_sign_in_only_for_a_top_level_navigation(headers: dict[str, str],
                                                      navigation: bool) -> None:
    request = Request({"type": "http", "method": "GET", "path": "/", "headers": [
        (k.encode(), v.encode()) for k, v in headers.items()]})
    assert origin.navigation(request) is navigation
