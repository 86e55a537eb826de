"""HTTP mode's credentials: the caller's bearer token, checked by the gateway itself.

The MCP server holds no credential of its own over HTTP. Every request carries
`Authorization: Bearer <API key or JWT>`, the same credential the gateway takes;
`GatewayTokenVerifier` asks the gateway whether it opens the configured namespace (a Get of
the nil id: NOT_FOUND means yes), and every tool call then goes to the gateway with that
same token (`ClientPool`), so the gateway enforces the key's scopes call by call (a
read-only key can recall but not store).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass

from cachetools import LRUCache, TTLCache
from mcp.server.auth.provider import AccessToken
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from recallmesh.client import (
    AsyncClient,
    NotFoundError,
    PermissionDeniedError,
    RecallmeshError,
    UnauthenticatedError,
)

log = logging.getLogger("recallmesh.mcp")

NIL_ID = "00000000-0000-0000-0000-000000000000"  # never a stored memory's id


def token_digest(token: str) -> str:
    """A token's name in caches and logs (never the token itself)."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def plausible_token(token: str) -> bool:
    """Non-empty printable ASCII without spaces: what a gRPC metadata value can carry. An
    empty token must never reach AsyncClient, which would fall back to this process's own
    credential (RECALLMESH_API_KEY or the local key file)."""
    return 0 < len(token) <= 8192 and all(33 <= ord(c) <= 126 for c in token)


class _ClosingLRU(LRUCache[str, AsyncClient]):
    """An LRU cache of clients that hands each evicted client to `on_evict`."""

    def __init__(self, maxsize: int, on_evict: Callable[[AsyncClient], None]) -> None:
        super().__init__(maxsize)
        self._on_evict = on_evict

    def popitem(self) -> tuple[str, AsyncClient]:
        key, client = super().popitem()
        self._on_evict(client)
        return key, client


class ClientPool:
    """One AsyncClient per caller token (bounded, least recently used evicted). An evicted
    client is closed once the calls it may still carry have had their deadline."""

    def __init__(self, target: str, namespace: str, *, maxsize: int = 64,
                 timeout: float = 10.0) -> None:
        self.target = target
        self.namespace = namespace
        self.timeout = timeout
        self._clients: _ClosingLRU = _ClosingLRU(maxsize, self._close_later)
        self._closing: set[asyncio.Task[None]] = set()

    def get(self, token: str) -> AsyncClient:
        if not plausible_token(token):
            raise UnauthenticatedError("no usable bearer token")
        key = token_digest(token)
        client = self._clients.get(key)
        if client is None:
            client = AsyncClient(self.target, namespace=self.namespace, token=token, tls=None,
                                 timeout=self.timeout)
            self._clients[key] = client
        return client

    def discard(self, token: str) -> None:
        """Drop (and close) the client of a token the gateway refused."""
        client = self._clients.pop(token_digest(token), None)
        if client is not None:
            self._close_later(client, delay=0.0)

    def __len__(self) -> int:
        return len(self._clients)

    def _close_later(self, client: AsyncClient, delay: float | None = None) -> None:
        wait = self.timeout + 5.0 if delay is None else delay

        async def close() -> None:
            try:
                await asyncio.sleep(wait)
            finally:
                await client.close()

        task = asyncio.get_running_loop().create_task(close())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def aclose(self) -> None:
        for task in list(self._closing):
            task.cancel()  # its finally closes the client now
        await asyncio.gather(*self._closing, return_exceptions=True)
        clients = list(self._clients.values())
        self._clients.clear()
        for client in clients:
            await client.close()


class GatewayTokenVerifier:
    """The SDK's TokenVerifier: a bearer token is valid when the gateway accepts it for the
    configured namespace. Verdicts are cached briefly (`ttl_s`); a gateway that does not
    answer makes the token invalid for this request (logged), without caching that."""

    def __init__(self, pool: ClientPool, *, ttl_s: float = 30.0, maxsize: int = 1024,
                 timeout: float = 5.0) -> None:
        self.pool = pool
        self.timeout = timeout
        self._verdicts: TTLCache[str, AccessToken | None] = TTLCache(maxsize=maxsize, ttl=ttl_s)
        # why a token was refused, in words (BearerChallenge says it to the client)
        self._reasons: TTLCache[str, Refusal] = TTLCache(maxsize=maxsize, ttl=ttl_s)

    async def verify_token(self, token: str) -> AccessToken | None:
        if not plausible_token(token):
            return None
        key = token_digest(token)
        if key in self._verdicts:
            return self._verdicts[key]
        client = self.pool.get(token)
        try:
            await client.get(NIL_ID, timeout=self.timeout)
        except NotFoundError:
            pass  # authenticated, and granted the namespace with the read scope
        except UnauthenticatedError as exc:
            self._refused(token, key, exc, Refusal(
                401, f"the gateway did not accept this API key or token ({exc.details})"))
            return None
        except PermissionDeniedError as exc:
            self._refused(token, key, exc, Refusal(
                401, f"this key may not read namespace {self.pool.namespace!r} "
                     f"({exc.details})"))
            return None
        except RecallmeshError as exc:
            log.warning("could not check a bearer token with the gateway at %s: %s",
                        self.pool.target, exc)
            self.pool.discard(token)
            self._reasons[key] = Refusal(503, f"the gateway could not check the key now "
                                              f"({exc.code.name}); try again shortly")
            return None
        verdict = AccessToken(token=token, client_id=f"rm-{key[:16]}", scopes=[])
        self._verdicts[key] = verdict
        return verdict

    def _refused(self, token: str, key: str, exc: RecallmeshError,
                 refusal: Refusal) -> None:
        log.info("refused a bearer token (%s...): %s", key[:12], exc)
        self.pool.discard(token)
        self._verdicts[key] = None
        self._reasons[key] = refusal

    def refusal(self, token: str) -> Refusal:
        """Why `token` was refused (after verify_token answered None)."""
        if not plausible_token(token):
            return Refusal(401, "the bearer token is empty or not printable ASCII")
        return self._reasons.get(token_digest(token)) or Refusal(
            401, "the gateway did not accept this API key or token")


@dataclass(frozen=True)
class Refusal:
    status: int  # 401, or 503 when the gateway could not check the key
    reason: str


NO_KEY = ("this MCP server takes a recallmesh API key or JWT as 'Authorization: Bearer <key>' "
          "(no OAuth): make one with 'recallmesh keys create'")
NO_OAUTH = ("this MCP server has no OAuth endpoints: it takes a recallmesh API key or JWT as "
            "'Authorization: Bearer <key>'")


def _header_text(text: str) -> str:
    """`text` as an RFC 6750 quoted string may hold it (no quotes or backslashes, ASCII)."""
    return "".join(c if 32 <= ord(c) < 127 and c not in '"\\' else "'" for c in text)[:300]


class BearerChallenge:
    """In front of the SDK's bearer check on the MCP endpoint: a request without a usable
    credential gets a 401 whose `WWW-Authenticate: Bearer realm="recallmesh", ...` and JSON
    body say why in words (no key; not a Bearer header; the gateway refused the key, or this
    key may not read the namespace), and 503 with Retry-After when the gateway could not
    check it. The SDK's own answer is a bare "Authentication required", which sends a
    spec-following MCP client off to look for OAuth. OAuth discovery paths answer 404 with
    the same plain sentence. A request with an accepted key passes on (the SDK checks it
    again from the verifier's cache)."""

    def __init__(self, app: ASGIApp, verifier: GatewayTokenVerifier, path: str = "/mcp") -> None:
        self.app = app
        self.verifier = verifier
        self.path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        if path.startswith("/.well-known/oauth-"):
            await _answer(send, 404, {"error": "not_found", "error_description": NO_OAUTH})
            return
        if not (path == self.path or path.startswith(self.path + "/")):
            await self.app(scope, receive, send)
            return
        header = Headers(scope=scope).get("authorization", "")
        scheme, _, token = header.strip().partition(" ")
        token = token.strip()
        if not header.strip():
            await _challenge(send, 401, None, NO_KEY)
            return
        if scheme.lower() != "bearer" or not token:
            await _challenge(send, 401, "invalid_request",
                             "the Authorization header must be 'Bearer <key>'")
            return
        if await self.verifier.verify_token(token) is None:
            refusal = self.verifier.refusal(token)
            await _challenge(send, refusal.status,
                             "invalid_token" if refusal.status == 401 else None, refusal.reason)
            return
        await self.app(scope, receive, send)


async def _challenge(send: Send, status: int, error: str | None, description: str) -> None:
    parts = ['realm="recallmesh"']
    if error:
        parts.append(f'error="{error}"')
    parts.append(f'error_description="{_header_text(description)}"')
    headers = [(b"www-authenticate", ("Bearer " + ", ".join(parts)).encode())]
    if status == 503:
        headers.append((b"retry-after", b"5"))
    await _answer(send, status, {"error": error or ("unavailable" if status == 503
                                                    else "unauthorized"),
                                 "error_description": description}, headers)


async def _answer(send: Send, status: int, body: dict[str, str],
                  headers: list[tuple[bytes, bytes]] | None = None) -> None:
    data = json.dumps(body).encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()),
        *(headers or [])]})
    await send({"type": "http.response.body", "body": data})
