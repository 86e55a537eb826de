"""From a call's metadata to a verified Principal (the gateway), checked before any SQL of
the call itself: the only query an API key costs is its own lookup, cached for
RECALLMESH_AUTH_CACHE_S."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from recallmesh.auth.keys import KEY_PREFIX, ApiKey, KeyStore, secret_matches, split_key
from recallmesh.auth.principal import UNAUTHENTICATED_LOCAL, Principal
from recallmesh.shared.errors import Unauthenticated
from recallmesh.shared.settings import AuthSettings

if TYPE_CHECKING:  # not imported at run time: the verifier is handed in
    from recallmesh.auth.jwt_tokens import JwtVerifier

log = logging.getLogger(__name__)

AUTHORIZATION = "authorization"  # gRPC metadata keys are lower case
MISSING = ("missing credential: send metadata 'authorization: Bearer <API key or JWT>' "
           "(the CLI reads RECALLMESH_API_KEY, else the key `recallmesh up` wrote under .data/)")
TOUCH_EVERY_S = 60.0  # last_used_at is written at most this often per key and gateway


def bearer_token(metadata: Iterable[tuple[str, Any]] | None) -> str:
    """The token of the one `authorization: Bearer <token>` entry; UNAUTHENTICATED if none."""
    values = [v for k, v in (metadata or ()) if k.lower() == AUTHORIZATION]
    if not values:
        raise Unauthenticated(MISSING)
    if len(values) > 1:
        raise Unauthenticated("malformed credential: more than one authorization entry")
    value = values[0] if isinstance(values[0], str) else ""
    scheme, _, token = value.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthenticated("malformed credential: expected 'Bearer <API key or JWT>'")
    return token.strip()


def presented_key_id(metadata: Iterable[tuple[str, Any]] | None) -> str:
    """The id of the well-formed API key the call carries, "" for none, a JWT or a malformed
    one: it names a refused caller in the audit line. The id is not the secret (it is the
    first part of the key, listed by ListApiKeys); the secret is never returned."""
    try:
        token = bearer_token(metadata)
        return split_key(token)[0] if token.startswith(KEY_PREFIX) else ""
    except Unauthenticated:
        return ""


@dataclass
class _Cached:
    key: ApiKey
    digest: bytes
    until: float


class Authenticator:
    def __init__(self, settings: AuthSettings, keys: KeyStore | None,
                 jwt: JwtVerifier | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.settings = settings
        self.keys = keys
        self.jwt = jwt  # recallmesh.auth.jwt_tokens.JwtVerifier, or None: JWTs refused
        self.clock = clock
        self._cache: dict[str, _Cached] = {}
        self._touched: dict[str, float] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    async def authenticate(self, metadata: Iterable[tuple[str, Any]] | None) -> Principal:
        if not self.settings.required:
            return UNAUTHENTICATED_LOCAL
        token = bearer_token(metadata)
        if token.startswith(KEY_PREFIX):
            return await self._api_key(token)
        if token.count(".") == 2:
            if self.jwt is None:
                raise Unauthenticated("JWT bearer tokens are not accepted here (no "
                                      "RECALLMESH_JWT_JWKS configured); use an API key")
            return await self.jwt.verify(token)
        raise Unauthenticated("malformed credential: neither an API key (rmk_...) nor a JWT")

    async def _api_key(self, token: str) -> Principal:
        key_id, secret = split_key(token)
        now = self.clock()
        cached = self._cache.get(key_id)
        if cached is None or cached.until <= now:
            assert self.keys is not None
            found = await self.keys.lookup(key_id)
            if found is None:
                self._cache.pop(key_id, None)
                raise Unauthenticated("unknown API key")
            cached = _Cached(found[0], found[1], now + self.settings.key_cache_s)
            if self.settings.key_cache_s > 0:
                self._cache[key_id] = cached
        if not secret_matches(secret, cached.digest):
            raise Unauthenticated("unknown API key")  # same words: an id alone proves nothing
        if reason := cached.key.usable():
            raise Unauthenticated(reason)
        self._touch(key_id, now)
        return cached.key.principal()

    def _touch(self, key_id: str, now: float) -> None:
        """Record the use in the background, at most every TOUCH_EVERY_S per key."""
        if now - self._touched.get(key_id, -TOUCH_EVERY_S) < TOUCH_EVERY_S or self.keys is None:
            return
        self._touched[key_id] = now
        task = asyncio.get_running_loop().create_task(self._record_use(key_id))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _record_use(self, key_id: str) -> None:
        assert self.keys is not None
        try:
            await self.keys.touch(key_id)
        except Exception as exc:  # bookkeeping only: never fails a call
            log.warning("could not record API key use: %s", exc, extra={"key_id": key_id})

    def forget(self, key_id: str) -> None:
        """Drop a cached key (this gateway revoked it: no need to wait for the cache)."""
        self._cache.pop(key_id, None)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()


