"""MemoryStore's writes: store, batch store, update (keeping the state it replaces as a
version), soft delete and purge.

A write that says what a live, current memory already says stores nothing (the duplicate
rule, recallmesh/gateway/write_keys.py). Every write transaction starts with
`lock_for_write` (recallmesh/shared/db.py): its locks in one order before its first row, so
two writers never wait for each other inside an index (docs/decisions/0020-write-locks.md).
Every statement is scoped to a namespace; writes run under the pool's WRITE timeouts and
purges under ADMIN's (recallmesh/shared/db.py).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any

from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool

from recallmesh.gateway.settings import NamespaceTTL
from recallmesh.gateway.store_reads import successors
from recallmesh.gateway.write_keys import (
    LOCAL,
    Writer,
    content_key,
    keyed,
    same_said,
    stored_before,
)
from recallmesh.shared.cjk import index_terms
from recallmesh.shared.db import ADMIN, WRITE, Conn, lock_for_write, one_row, transaction
from recallmesh.shared.errors import InvalidArgument, NotFound
from recallmesh.wire.filters import live
from recallmesh.wire.memory_fields import (
    COLUMNS,
    UPDATABLE,
    UPDATE_PATHS,
    VERSIONED_COLUMNS,
    NewMemory,
    StoredMemory,
    column_values,
)
from recallmesh.wire.validation import MAX_VERSIONS

LIVE = live()


# A client-supplied id that already exists inserts nothing (and returns no row): the write
# is then a retry, or a conflict (stored_before). Without an expires_at of its own a memory gets
# created_at + the namespace's default TTL (%(ttl_s)s; NULL: none, and make_interval is NULL).
# The fields a client sets that the INSERT writes as given (expires_at has its default).
_AS_GIVEN = tuple(name for name in UPDATABLE if name != "expires_at")
_INSERT = f"""
INSERT INTO memories (id, namespace, created_at, updated_at, expires_at, keywords, content_key,
                      written_by, {", ".join(UPDATE_PATHS[name] for name in _AS_GIVEN)})
VALUES (coalesce(%(id)s::uuid, gen_random_uuid()), %(ns)s,
        coalesce(%(created_at)s, clock_timestamp()),
        clock_timestamp(),  -- after created_at's: a new memory is never updated before it was made
        coalesce(%(expires_at)s, coalesce(%(created_at)s, clock_timestamp())
                                 + make_interval(secs => %(ttl_s)s::float8)),
        %(keywords)s, %(content_key)s, %(written_by)s,
        {", ".join(f"%({name})s" for name in _AS_GIVEN)})
ON CONFLICT (id) DO NOTHING
RETURNING {COLUMNS}
"""


def column_params(memory: NewMemory | StoredMemory, names: tuple[str, ...] = UPDATABLE
            ) -> dict[str, Any]:
    """The column values of `memory`'s fields named (by default those a version keeps), as
    the statements' parameters name them (recallmesh/wire/memory_fields.py)."""
    values = column_values(memory, names)
    if "metadata" in values:
        values["metadata"] = Jsonb(values["metadata"])
    return values


def _insert_params(ns: str, memory: NewMemory, ttl_s: int | None, writer: Writer
                   ) -> dict[str, Any]:
    return column_params(memory, (*UPDATABLE, "id", "created_at")) | {
        "ns": ns, "ttl_s": ttl_s, "keywords": index_terms(memory.content),
        "content_key": content_key(memory), "written_by": writer.name}


async def _relate(conn: Conn, ns: str, source: str, memory: NewMemory, where: str) -> None:
    """Write a new memory's explicit relations (same transaction as the memory). Targets
    must be live memories of the namespace; SUPERSEDES ends the target's validity now."""
    if not memory.relations:
        return
    targets = sorted({t for _, t in memory.relations})
    cur = await conn.execute(
        "SELECT id::text FROM memories WHERE namespace = %s AND id = ANY(%s::uuid[]) "
        f"AND {LIVE}", (ns, targets))
    found = {r[0] for r in await cur.fetchall()}
    for i, (_, target) in enumerate(memory.relations):
        if target not in found:
            raise NotFound(f"{where}.relations[{i}]: memory {target} not found in namespace "
                           f"{ns!r}")
    await conn.execute(
        "INSERT INTO memory_edges (namespace, src, dst, rel_type) "
        "SELECT %s, %s, * FROM unnest(%s::uuid[], %s::text[]) ON CONFLICT DO NOTHING",
        (ns, source, [t for _, t in memory.relations], [r for r, _ in memory.relations]))
    superseded = [t for r, t in memory.relations if r == "supersedes"]
    if superseded:
        await conn.execute(
            "UPDATE memories SET valid_to = clock_timestamp(), updated_at = clock_timestamp() "
            "WHERE namespace = %s AND id = ANY(%s::uuid[]) "
            "AND (valid_to IS NULL OR valid_to > clock_timestamp())",
            (ns, superseded))


async def _pin(conn: Conn, ns: str, memory_ids: list[str]) -> None:
    """A pinned write that an existing memory already says pins that memory (the duplicate
    rule answers it, and the caller asked for it pinned)."""
    if memory_ids:
        await conn.execute("UPDATE memories SET pinned = true, updated_at = clock_timestamp() "
                           "WHERE namespace = %s AND id = ANY(%s::uuid[])", (ns, memory_ids))


# The columns of a memory version (migration 0014), as an Update and an Import write them.
VERSION_COLUMNS = (f"memory_id, version, namespace, updated_at, {VERSIONED_COLUMNS}, "
                   "replaced_at, replaced_by, changed")

# Keeps the state an Update replaces as the memory's next version (History).
_KEEP_VERSION = f"""
INSERT INTO memory_versions ({VERSION_COLUMNS})
SELECT id, coalesce((SELECT max(v.version) FROM memory_versions v WHERE v.memory_id = m.id), 0)
           + 1,
       namespace, updated_at, {VERSIONED_COLUMNS}, clock_timestamp(), %(by)s, %(changed)s
FROM memories m WHERE namespace = %(ns)s AND id = %(id)s AND {LIVE}
"""


# A memory keeps its newest MAX_VERSIONS versions (recallmesh/wire/validation/records.py).
_DROP_OLD_VERSIONS = """
DELETE FROM memory_versions
WHERE namespace = %(ns)s AND memory_id = %(id)s
  AND version <= (SELECT max(version) FROM memory_versions
                  WHERE namespace = %(ns)s AND memory_id = %(id)s) - %(keep)s
"""


def _ids(memories: list[NewMemory]) -> list[str]:
    """The client-supplied ids of a write (a server-made id meets no other writer)."""
    return [m.id for m in memories if m.id is not None]


class MemoryWrites:
    """The write half of MemoryStore (recallmesh/gateway/store.py), over its primary."""

    pool: AsyncConnectionPool  # the primary
    namespace_ttl: NamespaceTTL

    async def store(self, ns: str, memory: NewMemory, writer: Writer = LOCAL
                    ) -> tuple[StoredMemory, bool]:
        """The stored memory, and whether it already existed: a live, current memory said the
        same (nothing new is written; a retry of this very write is not that)."""
        async with transaction(self.pool, WRITE) as conn:
            await lock_for_write(conn, [ns], _ids([memory]))
            same = (await same_said(conn, ns, [memory], writer)).get(content_key(memory))
            if same is not None and same.id != memory.id:
                if memory.pinned and not same.pinned:
                    await _pin(conn, ns, [same.id])
                    same = replace(same, pinned=True)
                return same, True
            cur = await conn.execute(
                _INSERT, _insert_params(ns, memory, self.namespace_ttl.ttl_s(ns), writer))
            row = await cur.fetchone()
            if row is None:  # the client's id is taken: a retry (nothing written) or a conflict
                return await stored_before(conn, ns, memory, writer), False
            await _relate(conn, ns, str(row[0]), memory, "memory")
        return StoredMemory.from_row(row), False

    async def store_batch(self, ns: str, memories: list[NewMemory], writer: Writer = LOCAL
                          ) -> tuple[list[str], list[bool]]:
        """All-or-nothing: one transaction; ids in input order, and per id whether it already
        existed (a live, current memory, or an earlier one of the batch, said the same:
        nothing new written). A memory whose client-supplied id is already stored, as the
        same write, is a retry: nothing is written for it, and it is not marked existing."""
        ttl_s = self.namespace_ttl.ttl_s(ns)
        async with transaction(self.pool, WRITE) as conn:
            await lock_for_write(conn, [ns], _ids(memories))
            said = await same_said(conn, ns, memories, writer)
            ids: list[str | None] = [None] * len(memories)
            existing = [False] * len(memories)
            first: dict[str, int] = {}  # key -> the batch's first new memory saying it
            repeats: dict[int, int] = {}
            new: list[int] = []
            for i, memory in enumerate(memories):
                key = content_key(memory) if keyed(memory) else None
                if key is not None and key in said and said[key].id != memory.id:
                    ids[i], existing[i] = said[key].id, True
                elif key is not None and key in first:
                    repeats[i] = first[key]
                else:
                    if key is not None:
                        first[key] = i
                    new.append(i)
            rows: list[Any] = []
            if new:
                cur = conn.cursor()
                await cur.executemany(
                    _INSERT, [_insert_params(ns, memories[i], ttl_s, writer) for i in new],
                    returning=True)
                while True:
                    rows.append(await cur.fetchone())
                    if not cur.nextset():
                        break
            for i, row in zip(new, rows, strict=True):
                ids[i] = (row[0] if row is not None
                          else (await stored_before(conn, ns, memories[i], writer)).id)
            for i, row in zip(new, rows, strict=True):
                if row is not None:
                    await _relate(conn, ns, str(row[0]), memories[i], f"memories[{i}]")
            for i, j in repeats.items():
                ids[i], existing[i] = ids[j], True
            await _pin(conn, ns, [said[content_key(m)].id for i, m in enumerate(memories)
                              if existing[i] and i not in repeats and m.pinned
                              and not said[content_key(m)].pinned])
        return [str(i) for i in ids], existing

    async def update(self, ns: str, memory_id: str, changes: dict[str, Any],
                     changed: list[str] | None = None, by: str = "") -> StoredMemory:
        """Apply validated column changes (recallmesh.wire.validation.memory_update) in one
        transaction, keeping the state they replace as the memory's next version (`changed`:
        the update_mask paths; `by`: who asked, e.g. the API key's name).

        The schema's triggers keep the vector consistent in the same
        transaction: a content change clears the vector and re-enqueues the
        memory; marking it sensitive drops the vector and any pending job, and here its id
        leaves the concept graph's evidence and the concepts only it evidenced go
        (recallmesh_forget_derived, migration 0007).
        """
        if "content" in changes:  # the CJK tokens beside the text (legs/lexical/cjk.py)
            changes = {**changes, "keywords": index_terms(changes["content"])}
        assignments = ", ".join(f"{column} = %({column})s" for column in changes)
        params = {
            column: Jsonb(value) if column == "metadata" else value
            for column, value in changes.items()
        }
        async with transaction(self.pool, WRITE) as conn:
            await lock_for_write(conn, [ns])
            await conn.execute(_KEEP_VERSION, {"ns": ns, "id": memory_id, "by": by,
                                               "changed": changed or sorted(changes)})
            await conn.execute(_DROP_OLD_VERSIONS, {"ns": ns, "id": memory_id,
                                                     "keep": MAX_VERSIONS})
            cur = await conn.execute(
                f"UPDATE memories SET {assignments}, updated_at = clock_timestamp() "
                f"WHERE namespace = %(ns)s AND id = %(id)s AND {LIVE} "
                f"RETURNING {COLUMNS}",
                {**params, "ns": ns, "id": memory_id},
            )
            row = await cur.fetchone()
            if row is None:
                raise NotFound(f"memory {memory_id} not found in namespace {ns!r}")
            stored = StoredMemory.from_row(row)
            await conn.execute("UPDATE memories SET content_key = %s "
                               "WHERE namespace = %s AND id = %s",
                               (content_key(stored), ns, memory_id))
            stored = (await successors(conn, ns, [stored]))[0]
            if changes.get("is_sensitive"):  # made sensitive: what the graph derived goes too
                await conn.execute("SELECT recallmesh_forget_derived(%s, %s)", (ns, memory_id))
            if (
                stored.valid_from is not None
                and stored.valid_to is not None
                and stored.valid_from > stored.valid_to
            ):
                raise InvalidArgument("valid_from must not be after valid_to")  # rolls back
        return stored

    async def delete(self, ns: str, memory_id: str) -> datetime:
        async with transaction(self.pool, WRITE) as conn:
            # The schema's triggers drop the vector and any pending embedding job.
            await lock_for_write(conn, [ns])
            cur = await conn.execute(
                "UPDATE memories SET deleted_at = now(), updated_at = now() "
                f"WHERE namespace = %s AND id = %s AND {LIVE} RETURNING deleted_at",
                (ns, memory_id),
            )
            row = await cur.fetchone()
        if row is None:
            raise NotFound(f"memory {memory_id} not found in namespace {ns!r}")
        deleted_at: datetime = row[0]
        return deleted_at

    async def purge(self, ns: str, memory_id: str) -> None:
        """Remove the memory and what was derived from it (recallmesh_purge_memory, migration
        0007), live or already deleted; NotFound when `ns` has no such memory."""
        async with transaction(self.pool, ADMIN) as conn:
            cur = await conn.execute("SELECT recallmesh_purge_memory(%s, %s)", (ns, memory_id))
            row = await one_row(cur)
            found = row[0]
        if not found:
            raise NotFound(f"memory {memory_id} not found in namespace {ns!r}")

    async def purge_namespace(self, ns: str) -> int:
        """Remove the namespace entirely; how many memories it held."""
        async with transaction(self.pool, ADMIN) as conn:
            cur = await conn.execute("SELECT recallmesh_purge_namespace(%s)", (ns,))
            row = await one_row(cur)
            return int(row[0])
