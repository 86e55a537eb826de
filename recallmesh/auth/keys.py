"""API keys: their format, their hash, and their rows (table api_keys, migration 0009).

A key reads ``rmk_<id>_<secret>``: `id` (16 hex characters) finds the row, `secret` (43
URL-safe characters, 256 random bits) proves possession. Only SHA-256(secret) is stored: a
256-bit random secret needs no slow password hash, and a leaked table yields no usable key.
The whole key is returned once, by `create`, and never again.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
from psycopg_pool import AsyncConnectionPool

from recallmesh.auth.principal import ALL_SCOPES, WILDCARD, Principal, Scope
from recallmesh.shared.db import one_row
from recallmesh.shared.errors import Unauthenticated

KEY_PREFIX = "rmk_"
_KEY_RE = re.compile(r"^rmk_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$")
_KEY_ID_RE = re.compile(r"^[0-9a-f]{16}$")

LOCAL_ADMIN_NAME = "local admin (recallmesh up)"

_COLUMNS = ("id, name, namespaces, scopes, created_at, created_by, expires_at, revoked_at, "
            "last_used_at")
INSERT_SQL = (f"INSERT INTO api_keys (id, name, secret_sha256, namespaces, scopes, created_by, "
              f"expires_at) VALUES (%s, %s, %s, %s, %s, %s, %s) RETURNING {_COLUMNS}")
LOOKUP_SQL = f"SELECT {_COLUMNS}, secret_sha256 FROM api_keys WHERE id = %s"
LIST_SQL = (f"SELECT {_COLUMNS} FROM api_keys WHERE %s OR revoked_at IS NULL "
            "ORDER BY created_at DESC, id")
REVOKE_SQL = (f"UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE id = %s "
              f"RETURNING {_COLUMNS}")
TOUCH_SQL = "UPDATE api_keys SET last_used_at = now() WHERE id = %s"


@dataclass(frozen=True)
class ApiKey:
    id: str
    name: str
    namespaces: tuple[str, ...]
    scopes: frozenset[Scope]
    created_at: datetime
    created_by: str = ""
    expires_at: datetime | None = None
    revoked_at: datetime | None = None
    last_used_at: datetime | None = None

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> ApiKey:
        return cls(row[0], row[1], tuple(row[2]), frozenset(Scope(s) for s in row[3]), row[4],
                   row[5], row[6], row[7], row[8])

    def usable(self, now: datetime | None = None) -> str:
        """"" when the key may be used now, else why not (the UNAUTHENTICATED message)."""
        now = now or datetime.now(UTC)
        if self.revoked_at is not None:
            return "API key revoked"
        if self.expires_at is not None and self.expires_at <= now:
            return "API key expired"
        return ""

    def principal(self) -> Principal:
        return Principal(f"key:{self.id} ({self.name})", self.namespaces, self.scopes,
                         kind="api_key", key_id=self.id)


def secret_hash(secret: str) -> bytes:
    return hashlib.sha256(secret.encode()).digest()


def new_key() -> tuple[str, str, bytes]:
    """(the whole key, its id, the hash of its secret)."""
    key_id, secret = secrets.token_hex(8), secrets.token_urlsafe(32)
    return f"{KEY_PREFIX}{key_id}_{secret}", key_id, secret_hash(secret)


def is_key_id(value: str) -> bool:
    """Whether `value` has the form of a key id (16 lower-case hex characters)."""
    return _KEY_ID_RE.fullmatch(value) is not None


def split_key(token: str) -> tuple[str, str]:
    """(id, secret) of a well-formed key; UNAUTHENTICATED otherwise (never echoing it)."""
    found = _KEY_RE.match(token)
    if found is None:
        raise Unauthenticated("malformed API key (expected rmk_<16 hex>_<43 characters>)")
    return found.group(1), found.group(2)


def secret_matches(secret: str, stored: bytes) -> bool:
    return hmac.compare_digest(secret_hash(secret), bytes(stored))


def _params(key_id: str, digest: bytes, name: str, grants: Iterable[str],
            scopes: Iterable[Scope], created_by: str, expires_at: datetime | None,
            ) -> tuple[Any, ...]:
    return (key_id, name, digest, list(grants), sorted(s.value for s in scopes), created_by,
            expires_at)


class KeyStore:
    """API key rows over an async psycopg pool (the gateway)."""

    def __init__(self, pool: AsyncConnectionPool) -> None:
        self.pool = pool

    async def create(self, name: str, grants: Sequence[str], scopes: Iterable[Scope],
                     created_by: str, expires_at: datetime | None = None) -> tuple[str, ApiKey]:
        token, key_id, digest = new_key()
        async with self.pool.connection() as conn:
            cur = await conn.execute(INSERT_SQL, _params(key_id, digest, name, grants, scopes,
                                                         created_by, expires_at))
            row = await one_row(cur)
        return token, ApiKey.from_row(row)

    async def lookup(self, key_id: str) -> tuple[ApiKey, bytes] | None:
        async with self.pool.connection() as conn:
            cur = await conn.execute(LOOKUP_SQL, (key_id,))
            row = await cur.fetchone()
        return None if row is None else (ApiKey.from_row(row), bytes(row[-1]))

    async def list(self, include_revoked: bool) -> list[ApiKey]:
        async with self.pool.connection() as conn:
            cur = await conn.execute(LIST_SQL, (include_revoked,))
            return [ApiKey.from_row(row) for row in await cur.fetchall()]

    async def revoke(self, key_id: str) -> ApiKey | None:
        async with self.pool.connection() as conn:
            cur = await conn.execute(REVOKE_SQL, (key_id,))
            row = await cur.fetchone()
        return None if row is None else ApiKey.from_row(row)

    async def touch(self, key_id: str) -> None:
        async with self.pool.connection() as conn:
            await conn.execute(TOUCH_SQL, (key_id,))


def ensure_local_admin_key(dsn: str, path: Path) -> tuple[str, bool]:
    """The local admin key of `recallmesh up`: the one in `path` while the database still
    accepts it, else a new one (grants "*", every scope) written there owner-only.
    Returns (key, created)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        if path.is_file():
            token = path.read_text().strip()
            try:
                key_id, secret = split_key(token)
            except Unauthenticated:
                key_id = secret = ""
            row = conn.execute(LOOKUP_SQL, (key_id,)).fetchone() if key_id else None
            if (row is not None and secret_matches(secret, row[-1])
                    and not ApiKey.from_row(row).usable()):
                return token, False
        token, _ = insert_key(conn, LOCAL_ADMIN_NAME, [WILDCARD], ALL_SCOPES, "recallmesh up")
    write_private(path, token + "\n")
    return token, True


def insert_key(conn: psycopg.Connection, name: str, grants: Sequence[str],
               scopes: Iterable[Scope], created_by: str,
               expires_at: datetime | None = None) -> tuple[str, ApiKey]:
    """KeyStore.create over a blocking connection (`recallmesh up`, `keys create
    --database`: the first admin key of a deployment, before any key can call the API)."""
    token, key_id, digest = new_key()
    row = conn.execute(INSERT_SQL, _params(key_id, digest, name, grants, scopes, created_by,
                                           expires_at)).fetchone()
    assert row is not None
    return token, ApiKey.from_row(row)


def write_private(path: Path, text: str) -> None:
    """Write `text` to `path` readable by its owner only (created 0600, then renamed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)
