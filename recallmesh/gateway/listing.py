"""Seeing and managing what a namespace holds: List, Count, DeleteMatching (plain SQL).

List pages by keyset: each page continues after the last (sort key, id) of the one before,
read from an opaque page token, so a page deep in a million memories costs what the first one
costs (an index on (namespace, sort key, id), migration 0014). A token carries a digest of the
query that made it and continues only that query, and is signed (PageTokens).

Which memories a call sees: never an expired one (it is gone as for every read), deleted ones
only with include_deleted, ended ones (valid_to passed: superseded) only with include_ended;
as of T (Filters.as_of) validity is read at T instead of now. The filters are the recall
legs' own (`filter_sql`).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import uuid
from dataclasses import asdict
from datetime import datetime
from typing import Any

from psycopg_pool import AsyncConnectionPool

from recallmesh.gateway.store import MemoryStore
from recallmesh.gateway.store_reads import successors
from recallmesh.gateway.write_keys import LOCAL, Writer
from recallmesh.shared.db import ADMIN, WRITE, Conn, lock_for_write, one_row, transaction
from recallmesh.shared.errors import InvalidArgument
from recallmesh.wire.filters import filter_sql, live
from recallmesh.wire.memory_fields import COLUMNS, StoredMemory
from recallmesh.wire.validation import PAGE_TOKEN_NOT_OURS, ListQuery


def _digest(query: ListQuery) -> str:
    """What a page token continues: everything of the query but its page size and token."""
    said = {**asdict(query), "page_size": None, "page_token": None}
    return hashlib.sha256(json.dumps(said, default=str, sort_keys=True).encode()).hexdigest()[:16]


class PageTokens:
    """Makes and reads page tokens: the (sort key, id) a page ends at and the digest of its
    query, signed with HMAC-SHA256 under the deployment's page-token secret (migration 0015,
    shared by every gateway on the database). A token is checked before anything is read
    from it, so a forged or altered one is INVALID_ARGUMENT and never reaches SQL
    (docs/decisions/0011).
    """

    def __init__(self, key: bytes) -> None:
        self._key = key

    @classmethod
    async def load(cls, pool: AsyncConnectionPool) -> PageTokens:
        async with pool.connection() as conn:
            cur = await conn.execute(
                "SELECT secret FROM server_secrets WHERE name = 'page_token'")
            row = await cur.fetchone()
        if row is None:
            raise RuntimeError("no page-token secret in server_secrets: run `recallmesh migrate`")
        return cls(bytes(row[0]))

    def _mac(self, payload: bytes) -> bytes:
        return hmac.new(self._key, payload, hashlib.sha256).digest()[:16]

    def seal(self, values: list[Any]) -> str:
        """A token carrying `values` (JSON), signed."""
        payload = json.dumps(values).encode()
        return f"{_b64(payload)}.{_b64(self._mac(payload))}"

    def unseal(self, token: str) -> list[Any]:
        """The values a token made by `seal` carries; INVALID_ARGUMENT for any other."""
        try:
            body, _, mac = token.partition(".")
            payload = _unb64(body)
            if not hmac.compare_digest(self._mac(payload), _unb64(mac)):
                raise ValueError("signature")
            values = json.loads(payload)
        except (ValueError, TypeError):
            raise InvalidArgument(PAGE_TOKEN_NOT_OURS) from None
        if not isinstance(values, list):
            raise InvalidArgument(PAGE_TOKEN_NOT_OURS)
        return values

    def make(self, query: ListQuery, last: StoredMemory) -> str:
        key: Any = getattr(last, query.order_by)
        value = key.isoformat() if isinstance(key, datetime) else key
        return self.seal([value, last.id, _digest(query)])

    def after(self, query: ListQuery) -> tuple[Any, str] | None:
        """The (sort key, id) a page token continues after; None for the first page."""
        if not query.page_token:
            return None
        try:
            value, last_id, digest = self.unseal(query.page_token)
        except ValueError:
            raise InvalidArgument(PAGE_TOKEN_NOT_OURS) from None
        if digest != _digest(query):
            raise InvalidArgument("page_token continues another query (namespace, filters, "
                                  "order and flags must stay the same from page to page)")
        key: Any = float(value) if query.order_by == "importance" else \
            datetime.fromisoformat(value)
        return key, str(uuid.UUID(last_id))


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def current(alias: str = "m") -> str:
    """The condition of a memory whose validity has not ended (not superseded, valid_to not
    passed): what List and Count see without include_ended."""
    return f"({alias}.valid_to IS NULL OR {alias}.valid_to > now())"


def where(query: ListQuery, alias: str = "m") -> tuple[str, dict[str, Any]]:
    """The WHERE clause (without WHERE) of the memories `query` sees, and its parameters."""
    a = alias
    parts = [f"{a}.namespace = %(ns)s", live(a, include_deleted=query.include_deleted)]
    if not query.include_ended and query.filters.as_of is None:
        parts.append(current(a))
    filters, params = filter_sql(query.filters, alias=a)
    return " AND ".join(parts) + " " + filters, params | {"ns": query.namespace}


async def list_page(store: MemoryStore, query: ListQuery, pages: PageTokens
                    ) -> tuple[list[StoredMemory], bool]:
    """One page of `query`, and whether more follow it (`pages.make` on the page's last
    memory continues it)."""
    clause, params = where(query)
    direction, op = ("ASC", ">") if query.ascending else ("DESC", "<")
    cast = "::real" if query.order_by == "importance" else ""
    after = pages.after(query)
    if after is not None:
        clause += (f" AND (m.{query.order_by}, m.id) {op} "
                   f"(%(after_key)s{cast}, %(after_id)s::uuid)")
        params |= {"after_key": after[0], "after_id": after[1]}
    sql = (f"SELECT {COLUMNS} FROM memories m WHERE {clause} "
           f"ORDER BY m.{query.order_by} {direction}, m.id {direction} LIMIT %(limit)s")
    async with store.pool.connection() as conn:
        cur = await conn.execute(sql, params | {"limit": query.page_size + 1})
        rows = [StoredMemory.from_row(r) for r in await cur.fetchall()]
        page = await successors(conn, query.namespace, rows[:query.page_size])
    return page, len(rows) > query.page_size


async def count(store: MemoryStore, query: ListQuery) -> int:
    clause, params = where(query)
    async with store.pool.connection() as conn:
        return await _count(conn, clause, params)


async def _count(conn: Conn, clause: str, params: dict[str, Any]) -> int:
    cur = await conn.execute(f"SELECT count(*) FROM memories m WHERE {clause}", params)
    row = await one_row(cur)
    return int(row[0])


async def delete_matching(store: MemoryStore, query: ListQuery, sample_size: int,
                          confirm: bool, purge: bool, writer: Writer = LOCAL
                          ) -> tuple[int, int, list[StoredMemory]]:
    """(matched, deleted, sample): the live memories `query` sees, deleted (soft, or purged)
    when confirmed; nothing is deleted on a dry run. A writer that may not read matches the
    memories it wrote only: a filter never tells it what tags, metadata or text another writer
    stored (docs/decisions/0011-hostile-input-rules.md)."""
    clause, params = where(query)
    if not writer.may_read:
        clause += " AND m.written_by = %(writer)s"
        params |= {"writer": writer.name}

    async def newest(conn: Conn) -> list[StoredMemory]:
        cur = await conn.execute(
            f"SELECT {COLUMNS} FROM memories m WHERE {clause} "
            "ORDER BY m.created_at DESC, m.id DESC LIMIT %(sample)s",
            params | {"sample": sample_size})
        rows = [StoredMemory.from_row(r) for r in await cur.fetchall()]
        return await successors(conn, query.namespace, rows)

    if not confirm:
        async with store.pool.connection() as conn:
            return await _count(conn, clause, params), 0, await newest(conn)
    async with transaction(store.pool, ADMIN if purge else WRITE) as conn:
        await lock_for_write(conn, [query.namespace])
        sample = await newest(conn)
        if purge:
            cur = await conn.execute(f"SELECT m.id FROM memories m WHERE {clause}", params)
            ids = [r[0] for r in await cur.fetchall()]
            for memory_id in ids:
                await conn.execute("SELECT recallmesh_purge_memory(%s, %s)",
                                   (query.namespace, memory_id))
            deleted = len(ids)
        else:
            # the schema's triggers drop each deleted memory's vector and pending job
            cur = await conn.execute(
                "UPDATE memories m SET deleted_at = now(), updated_at = now() "
                f"WHERE {clause}", params)
            deleted = cur.rowcount
    return deleted, deleted, sample
