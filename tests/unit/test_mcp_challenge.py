"""The MCP server's HTTP refusals (recallmesh/mcp_server/auth.py BearerChallenge): in words,
in a Bearer challenge. Here the gateway is nowhere (a closed port), so a key cannot be
checked: 503 with Retry-After, not a 401 that would call a good key wrong. The refusals
a running gateway gives are in tests/integration/test_mcp.py."""

from __future__ import annotations

import asyncio

import httpx
from starlette.types import Receive, Scope, Send

from recallmesh.mcp_server.auth import BearerChallenge, ClientPool, GatewayTokenVerifier


async def _inner(scope: Scope, receive: Receive, send: Send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"inner"})


def ask(path: str, headers: dict[str, str]) -> httpx.Response:
    async def go() -> httpx.Response:
        pool = ClientPool("127.0.0.1:1", "ns", timeout=1.0)
        app = BearerChallenge(_inner, GatewayTokenVerifier(pool, timeout=1.0))
        transport = httpx.ASGITransport(app=app)
        try:
            async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as c:
                return await c.post(path, headers=headers, content=b"{}")
        finally:
            await pool.aclose()

    return asyncio.run(go())


def test_a_key_the_gateway_cannot_check_is_not_called_wrong() -> None:
    reply = ask("/mcp", {"authorization": "Bearer rmk_some_key_0123456789"})
    assert reply.status_code == 503 and reply.headers["retry-after"] == "5"
    assert "could not check the key now" in reply.json()["error_description"]
    assert reply.headers["www-authenticate"].startswith('Bearer realm="recallmesh"')


def test_a_token_no_header_can_carry_is_refused_in_words() -> None:
    reply = ask("/mcp", {"authorization": "Bearer \x7fkey"})
    assert reply.status_code == 401
    assert "not printable ASCII" in reply.json()["error_description"]


def test_other_paths_pass_through_unchecked() -> None:
    assert ask("/healthz", {}).text == "inner"
