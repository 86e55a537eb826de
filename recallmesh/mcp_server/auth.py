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
import logging
from collections.abc import Callable

from cachetools import LRUCache, TTLCache
from mcp.server.auth.provider import AccessToken

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
        except (UnauthenticatedError, PermissionDeniedError) as exc:
            log.info("refused a bearer token (%s...): %s", key[:12], exc)
            self.pool.discard(token)
            self._verdicts[key] = None
            return None
        except RecallmeshError as exc:
            log.warning("could not check a bearer token with the gateway at %s: %s",
                        self.pool.target, exc)
            self.pool.discard(token)
            return None
        verdict = AccessToken(token=token, client_id=f"rm-{key[:16]}", scopes=[])
        self._verdicts[key] = verdict
        return verdict
