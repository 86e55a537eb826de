"""MemoryStore's reads: get, pinned, hydrate (with a hit's thread neighbours), created times
and near-duplicate pairs.

A read fills `superseded_by`: the memory that superseded an ended one (successors). Every
statement is scoped to a namespace, so an id from another namespace behaves exactly like an
unknown id. A recall's reads (hydration, pins, neighbours, similar pairs) run on
`self.reads`, a replica's when one is set; get reads the primary (recallmesh/shared/db.py,
recallmesh/shared/replicas.py).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any

from psycopg_pool import AsyncConnectionPool

from recallmesh.shared.db import Conn
from recallmesh.shared.errors import NotFound
from recallmesh.shared.replicas import Reads
from recallmesh.wire.filters import Filters, filter_sql, live
from recallmesh.wire.memory_fields import COLUMNS, StoredMemory

LIVE = live()


async def successors(conn: Conn, ns: str, stored: list[StoredMemory]) -> list[StoredMemory]:
    """`stored` with superseded_by filled (the newest SUPERSEDES relation naming each; only a
    memory whose validity is set can have one)."""
    dated = [m.id for m in stored if m.valid_to is not None]
    if not dated:
        return stored
    cur = await conn.execute(
        "SELECT DISTINCT ON (dst) dst::text, src::text FROM memory_edges "
        "WHERE namespace = %s AND dst = ANY(%s::uuid[]) AND rel_type = 'supersedes' "
        "ORDER BY dst, created_at DESC, src", (ns, dated))
    by: dict[str, str] = dict(await cur.fetchall())
    return [replace(m, superseded_by=by[m.id]) if m.id in by else m for m in stored]



class MemoryReads:
    """The read half of MemoryStore (recallmesh/gateway/store.py), over its pools."""

    pool: AsyncConnectionPool  # the primary: the reads that must see a write
    reads: Reads  # a recall's reads: a replica's when one is set

    async def get(self, ns: str, memory_id: str) -> StoredMemory:
        async with self.pool.connection() as conn:
            cur = await conn.execute(
                f"SELECT {COLUMNS} FROM memories WHERE namespace = %s AND id = %s AND {LIVE}",
                (ns, memory_id),
            )
            row = await cur.fetchone()
            if row is None:
                raise NotFound(f"memory {memory_id} not found in namespace {ns!r}")
            return (await successors(conn, ns, [StoredMemory.from_row(row)]))[0]

    async def pinned(self, ns: str, filters: Filters, limit: int = 50) -> list[StoredMemory]:
        """The namespace's pinned memories that are live, current (as of filters.as_of when
        set, else now) and pass `filters`, most important first (then newest), at most
        `limit`."""
        where_filters, params = filter_sql(filters, alias="m")
        current = "" if filters.as_of else "AND (m.valid_to IS NULL OR m.valid_to > now())"

        async def read(conn: Conn) -> list[StoredMemory]:
            cur = await conn.execute(
                f"SELECT {COLUMNS} FROM memories m WHERE m.namespace = %(ns)s AND m.pinned "
                f"AND {live('m')} {current} {where_filters} "
                "ORDER BY m.importance DESC, m.created_at DESC, m.id LIMIT %(limit)s",
                params | {"ns": ns, "limit": limit})
            return [StoredMemory.from_row(r) for r in await cur.fetchall()]

        return await self.reads.run(read)

    async def hydrate(self, ns: str, memory_ids: list[str]) -> dict[str, StoredMemory]:
        """Live memories of `ns` among memory_ids, in one query, keyed by id."""
        if not memory_ids:
            return {}

        async def read(conn: Conn) -> list[StoredMemory]:
            cur = await conn.execute(
                f"SELECT {COLUMNS} FROM memories "
                f"WHERE namespace = %s AND id = ANY(%s::uuid[]) AND {LIVE}",
                (ns, memory_ids),
            )
            return await successors(conn, ns, [StoredMemory.from_row(r)
                                                for r in await cur.fetchall()])

        return {m.id: m for m in await self.reads.run(read)}

    async def created_times(self, ns: str, memory_ids: list[str]) -> dict[str, datetime]:
        """created_at of the live memories of `ns` among memory_ids, in one query."""
        if not memory_ids:
            return {}

        async def read(conn: Conn) -> list[Any]:
            cur = await conn.execute(
                "SELECT id::text, created_at FROM memories "
                f"WHERE namespace = %s AND id = ANY(%s::uuid[]) AND {LIVE}",
                (ns, memory_ids),
            )
            rows: list[Any] = await cur.fetchall()
            return rows

        return {row[0]: row[1] for row in await self.reads.run(read)}

    async def similar_pairs(self, ns: str, memory_ids: list[str], min_similarity: float
                            ) -> list[tuple[str, str, float]]:
        """The pairs among memory_ids (live, embedded by one model) whose vectors' cosine
        similarity is at least min_similarity: (id, id, similarity), in one query."""
        if len(memory_ids) < 2:
            return []
        async def read(conn: Conn) -> list[tuple[str, str, float]]:
            cur = await conn.execute(
                "SELECT a.id::text, b.id::text, 1 - (a.embedding <=> b.embedding) "
                "FROM memories a JOIN memories b ON a.id < b.id "
                "AND b.namespace = a.namespace AND b.embedding_model = a.embedding_model "
                "WHERE a.namespace = %(ns)s AND a.id = ANY(%(ids)s::uuid[]) "
                "AND b.id = ANY(%(ids)s::uuid[]) "
                "AND a.embedding IS NOT NULL AND b.embedding IS NOT NULL "
                "AND 1 - (a.embedding <=> b.embedding) >= %(min)s",
                {"ns": ns, "ids": memory_ids, "min": min_similarity},
            )
            return [(r[0], r[1], float(r[2])) for r in await cur.fetchall()]

        return await self.reads.run(read)

    async def hydrate_adjacent(
        self, ns: str, memory_ids: list[str], seed_ids: list[str], filters: Filters,
    ) -> tuple[dict[str, StoredMemory], dict[str, StoredMemory], dict[str, StoredMemory]]:
        """hydrate(ns, memory_ids) and, in the same round trip, for each of seed_ids the live
        memory of its thread stored next after it and the one stored just before it (in
        (created_at, id) order, passing `filters`): (memories, next by seed id, previous by
        seed id). As in hydrate, an ended memory's superseded_by is read too (a second query on
        the same connection, only when a hit has a valid_to).

        Only along a thread (Memory.thread, set by the client): a memory without one has no
        neighbours, however close in time other memories were stored. A sensitive memory is
        never a neighbour: it is found by the lexical leg only (it may still be a hit, and
        pass a share to its own neighbours).
        """
        if not memory_ids:
            return {}, {}, {}
        where_filters, params = filter_sql(filters, alias="m")
        columns = ", ".join(f"n.{c.strip()}" for c in COLUMNS.split(","))

        def side(direction: str, later: bool) -> str:
            op, order = (">", "") if later else ("<", " DESC")
            return (
                f"SELECT '{direction}', s.id::text, {columns} "
                "FROM memories s CROSS JOIN LATERAL ("
                "  SELECT m.* FROM memories m"
                "  WHERE m.namespace = s.namespace AND m.thread = s.thread AND m.thread <> ''"
                f"    AND {live('m')} AND (m.created_at, m.id) {op} (s.created_at, s.id)"
                f"   {where_filters}"
                f"  ORDER BY m.created_at{order}, m.id{order} LIMIT 1) n "
                "WHERE s.namespace = %(ns)s AND s.id = ANY(%(seeds)s::uuid[]) "
                "AND s.thread <> ''"
                # a sensitive memory is found by the lexical leg only, never as a neighbour
                " AND NOT n.is_sensitive"
            )

        async def read(conn: Conn) -> tuple[dict[str, dict[str, StoredMemory]],
                                           list[StoredMemory]]:
            cur = await conn.execute(
                f"SELECT 'self', n.id::text, {columns} FROM memories n "
                "WHERE n.namespace = %(ns)s AND n.id = ANY(%(ids)s::uuid[]) "
                f"AND {live('n')} "
                f"UNION ALL {side('next', True)} UNION ALL {side('prev', False)}",
                params | {"ns": ns, "ids": memory_ids, "seeds": seed_ids},
            )
            rows = await cur.fetchall()
            found: dict[str, dict[str, StoredMemory]] = {"self": {}, "next": {}, "prev": {}}
            for row in rows:
                found[row[0]][row[1]] = StoredMemory.from_row(row[2:])
            # the hits read with their successors, as hydrate reads them
            return found, await successors(conn, ns, list(found["self"].values()))

        found, hits = await self.reads.run(read)
        return {m.id: m for m in hits}, found["next"], found["prev"]
