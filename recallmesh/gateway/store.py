"""Memory persistence: store, batch store, get, soft delete, hydrate.

A write that says what a live, current memory of the namespace already says (the same
`content_key`: content after normalising case and white space, thread, category, tags,
metadata, sensitivity and validity) stores nothing and answers that memory, marked existing;
so does a repeat inside one batch. A write with relations, or with an expiry of its own, is
always stored (its relations are new; it asks for its own lifetime). A read fills
`superseded_by`: the memory that superseded an ended one.

Every memory records who wrote it (`written_by`). A writer without the read scope is answered
about the memories it wrote only: the duplicate rule and a retry's answer look at those alone,
so no answer tells it what another writer stored (docs/decisions/0011-hostile-input-rules.md).

Every write transaction starts with `lock_for_write` (recallmesh/shared/db.py): its locks in
one order before its first row, so two writers never wait for each other inside an index
(docs/decisions/0020-write-locks.md).

Plain async psycopg over a pool; no gRPC here. Every statement is scoped to a
namespace, so an id from another namespace behaves exactly like an unknown id. Reads run
under the pool's READ timeouts, writes under WRITE's and purges under ADMIN's
(recallmesh/shared/db.py).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
import unicodedata
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from psycopg.types.json import Jsonb

from recallmesh.gateway.settings import NamespaceTTL
from recallmesh.shared.cjk import index_terms
from recallmesh.shared.db import ADMIN, WRITE, lock_for_write, transaction
from recallmesh.shared.errors import AlreadyExists, InvalidArgument, NotFound
from recallmesh.shared.replicas import Reads, as_reads, wal_position
from recallmesh.wire.filters import Filters, filter_sql, live
from recallmesh.wire.memory_fields import (
    COLUMNS,
    UPDATABLE,
    UPDATE_PATHS,
    VERSIONED_COLUMNS,
    NewMemory,
    StoredMemory,
    column_values,
)
from recallmesh.wire.real import as_real
from recallmesh.wire.validation import MAX_VERSIONS

LIVE = live()


@dataclass(frozen=True)
class Writer:
    """Who writes: what memories.written_by records (Principal.writer), and whether the
    caller may read. Without read, a write is answered about the writer's own memories only."""

    name: str = "local"
    may_read: bool = True

    def told_of(self, written_by: str | None) -> bool:
        """Whether an answer may tell this writer of a memory `written_by` wrote (the rule
        _SEEN_BY_WRITER says in SQL)."""
        return self.may_read or written_by == self.name


# Internal writers (the demo loader, the tests' helpers, authentication off): may read.
LOCAL = Writer()
# The condition a writer's answers add: every memory if it may read, else its own
# (parameters: may_read, name; Writer.told_of in Python).
_SEEN_BY_WRITER = "(%s OR written_by = %s)"


# A client-supplied id that already exists inserts nothing (and returns no row): the write
# is then a retry, or a conflict (_existing). Without an expires_at of its own a memory gets
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


def normalised_content(content: str) -> str:
    """A memory's content as the duplicate rule compares it: NFKC, casefolded, runs of white
    space as one space."""
    return " ".join(unicodedata.normalize("NFKC", content).casefold().split())


def content_key(memory: Any) -> str:
    """What a write says, as a digest (a NewMemory or a StoredMemory): its content with case
    and white space normalised (NFKC, casefold, runs of space as one), thread, category, tags,
    metadata, sensitivity and validity window; not when it was recorded (a fact said again
    later is the same fact). Equal keys: the same memory."""
    said = [normalised_content(memory.content), memory.thread, memory.category, sorted(memory.tags),
            sorted(memory.metadata.items()), bool(memory.sensitive),
            memory.valid_from.isoformat() if memory.valid_from else None,
            memory.valid_to.isoformat() if memory.valid_to else None]
    return hashlib.sha256(json.dumps(said, ensure_ascii=False).encode()).hexdigest()


# The live, current memories (validity not ended) of a namespace holding these keys, that the
# writer may be told of: the oldest one per key.
_SAME_KEYS = f"""
SELECT DISTINCT ON (content_key) content_key, {COLUMNS} FROM memories
WHERE namespace = %s AND content_key = ANY(%s) AND {LIVE}
  AND (valid_to IS NULL OR valid_to > clock_timestamp()) AND {_SEEN_BY_WRITER}
ORDER BY content_key, created_at, id
"""


async def successors(conn: Any, ns: str, stored: list[StoredMemory]) -> list[StoredMemory]:
    """`stored` with superseded_by filled (the newest SUPERSEDES relation naming each; only a
    memory whose validity is set can have one)."""
    dated = [m.id for m in stored if m.valid_to is not None]
    if not dated:
        return stored
    cur = await conn.execute(
        "SELECT DISTINCT ON (dst) dst::text, src::text FROM memory_edges "
        "WHERE namespace = %s AND dst = ANY(%s::uuid[]) AND rel_type = 'supersedes' "
        "ORDER BY dst, created_at DESC, src", (ns, dated))
    by = dict(await cur.fetchall())
    return [replace(m, superseded_by=by[m.id]) if m.id in by else m for m in stored]


def _keyed(memory: NewMemory) -> bool:
    """Whether a write may be answered by a memory that already says the same: not when it
    brings relations or an expiry of its own (see the module's docstring)."""
    return not memory.relations and memory.expires_at is None


async def _same_said(conn: Any, ns: str, memories: list[NewMemory], writer: Writer
                     ) -> dict[str, StoredMemory]:
    """content_key -> the live, current memory of `ns` that already says it (one the writer
    wrote, when it may not read), for the writes without relations (a write with relations is
    always new)."""
    keys = [content_key(m) for m in memories if _keyed(m)]
    if not keys:
        return {}
    cur = await conn.execute(_SAME_KEYS, (ns, keys, writer.may_read, writer.name))
    return {row[0]: StoredMemory.from_row(row[1:]) for row in await cur.fetchall()}


async def _relate(conn: Any, ns: str, source: str, memory: NewMemory, where: str) -> None:
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


def same_write(stored: StoredMemory, memory: NewMemory, relations: set[tuple[str, str]]) -> bool:
    """Whether `stored` (and its relations) is what writing `memory` stores: every field the
    write sets; created_at and expires_at only when the write gave them (else the server chose
    them); importance as the column holds it."""
    for name in (*UPDATABLE, "created_at"):
        want, have = getattr(memory, name), getattr(stored, name)
        if want is None and name in ("created_at", "expires_at"):
            continue
        if name == "importance":
            want, have = as_real(want), as_real(have)
        if want != have:
            return False
    return relations == set(memory.relations)


async def _existing(conn: Any, ns: str, memory: NewMemory, writer: Writer) -> StoredMemory:
    """The memory a retried write (its client-supplied id already stored) stored before.

    The same id with another write, in another namespace, deleted or expired, or (for a writer
    that may not read) written by another, is ALREADY_EXISTS, with one wording for all, so the
    answer never tells whether or where another tenant holds it, nor what another writer
    stored under it."""
    cur = await conn.execute(
        f"SELECT {COLUMNS} FROM memories WHERE id = %s AND namespace = %s AND {LIVE} "
        f"AND {_SEEN_BY_WRITER}", (memory.id, ns, writer.may_read, writer.name))
    row = await cur.fetchone()
    if row is not None:
        stored = StoredMemory.from_row(row)
        cur = await conn.execute(
            "SELECT rel_type, dst::text FROM memory_edges WHERE namespace = %s AND src = %s",
            (ns, memory.id))
        if same_write(stored, memory, {(r[0], r[1]) for r in await cur.fetchall()}):
            return stored
    raise AlreadyExists(f"memory {memory.id} already exists with other content")


async def _pin(conn: Any, ns: str, memory_ids: list[str]) -> None:
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


# A memory keeps its newest MAX_VERSIONS versions (recallmesh/wire/validation.py).
_DROP_OLD_VERSIONS = """
DELETE FROM memory_versions
WHERE namespace = %(ns)s AND memory_id = %(id)s
  AND version <= (SELECT max(version) FROM memory_versions
                  WHERE namespace = %(ns)s AND memory_id = %(id)s) - %(keep)s
"""


def _ids(memories: list[NewMemory]) -> list[str]:
    """The client-supplied ids of a write (a server-made id meets no other writer)."""
    return [m.id for m in memories if m.id is not None]


class MemoryStore:
    def __init__(self, pool: Any, namespace_ttl: NamespaceTTL | None = None,
                 reads: Reads | None = None) -> None:
        self.pool = pool  # the primary: writes and the reads that must see them
        # a recall's reads (hydration, pins, neighbours): a replica's when one is set
        self.reads = reads or as_reads(pool)
        self.namespace_ttl = namespace_ttl or NamespaceTTL()

    async def store(self, ns: str, memory: NewMemory, writer: Writer = LOCAL
                    ) -> tuple[StoredMemory, bool]:
        """The stored memory, and whether it already existed: a live, current memory said the
        same (nothing new is written; a retry of this very write is not that)."""
        async with transaction(self.pool, WRITE) as conn:
            await lock_for_write(conn, [ns], _ids([memory]))
            same = (await _same_said(conn, ns, [memory], writer)).get(content_key(memory))
            if same is not None and same.id != memory.id:
                if memory.pinned and not same.pinned:
                    await _pin(conn, ns, [same.id])
                    same = replace(same, pinned=True)
                return same, True
            cur = await conn.execute(
                _INSERT, _insert_params(ns, memory, self.namespace_ttl.ttl_s(ns), writer))
            row = await cur.fetchone()
            if row is None:  # the client's id is taken: a retry (nothing written) or a conflict
                return await _existing(conn, ns, memory, writer), False
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
            said = await _same_said(conn, ns, memories, writer)
            ids: list[str | None] = [None] * len(memories)
            existing = [False] * len(memories)
            first: dict[str, int] = {}  # key -> the batch's first new memory saying it
            repeats: dict[int, int] = {}
            new: list[int] = []
            for i, memory in enumerate(memories):
                key = content_key(memory) if _keyed(memory) else None
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
                          else (await _existing(conn, ns, memories[i], writer)).id)
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

    async def index_jobs(self, memory_ids: list[str]) -> tuple[int, int]:
        """Embedding jobs of memory_ids: (waiting, parked). A parked job (its text failed the
        embedding RECALLMESH_INDEXER_MAX_ATTEMPTS times) is not retried until an operator
        runs `recallmesh jobs retry`: its memory is found lexically only."""
        async with self.pool.connection() as conn:
            cur = await conn.execute(
                "SELECT count(*) FILTER (WHERE parked_at IS NULL), "
                "count(*) FILTER (WHERE parked_at IS NOT NULL) "
                "FROM embedding_jobs WHERE memory_id = ANY(%s::uuid[])",
                (memory_ids,),
            )
            waiting, parked = await cur.fetchone()
            return int(waiting), int(parked)

    async def pending_index(self, memory_ids: list[str]) -> int:
        """How many of memory_ids lack their vector and still have a job (parked included)."""
        return sum(await self.index_jobs(memory_ids))

    async def wait_indexed(self, memory_ids: list[str], timeout_s: float) -> bool:
        """Poll until no job is left to try for memory_ids, or timeout_s passes. True when no
        job is left at all; False after the timeout, or at once when the only jobs left are
        parked (no wait could end them)."""
        deadline = time.monotonic() + timeout_s
        delay = 0.01
        while True:
            waiting, parked = await self.index_jobs(memory_ids)
            if waiting == 0:
                return parked == 0
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            await asyncio.sleep(min(delay, remaining))
            delay = min(delay * 1.5, 0.1)

    async def visible_to_reads(self, timeout_s: float) -> bool:
        """Wait until a recall's reads see every write committed before the call: at once
        without a read replica, else until the replicas replayed past the primary's WAL
        position now (recallmesh.shared.replicas). False when timeout_s passes first."""
        if self.reads.replica is None:
            return True
        return await self.reads.replayed(await wal_position(self.pool), timeout_s)

    async def pinned(self, ns: str, filters: Filters, limit: int = 50) -> list[StoredMemory]:
        """The namespace's pinned memories that are live, current (as of filters.as_of when
        set, else now) and pass `filters`, most important first (then newest), at most
        `limit`."""
        where_filters, params = filter_sql(filters, alias="m")
        current = "" if filters.as_of else "AND (m.valid_to IS NULL OR m.valid_to > now())"

        async def read(conn: Any) -> list[StoredMemory]:
            cur = await conn.execute(
                f"SELECT {COLUMNS} FROM memories m WHERE m.namespace = %(ns)s AND m.pinned "
                f"AND {live('m')} {current} {where_filters} "
                "ORDER BY m.importance DESC, m.created_at DESC, m.id LIMIT %(limit)s",
                params | {"ns": ns, "limit": limit})
            return [StoredMemory.from_row(r) for r in await cur.fetchall()]

        return await self.reads.run(read)

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
            row = await cur.fetchone()
            assert row is not None  # an aggregate / function call: always one row
            found = row[0]
        if not found:
            raise NotFound(f"memory {memory_id} not found in namespace {ns!r}")

    async def purge_namespace(self, ns: str) -> int:
        """Remove the namespace entirely; how many memories it held."""
        async with transaction(self.pool, ADMIN) as conn:
            cur = await conn.execute("SELECT recallmesh_purge_namespace(%s)", (ns,))
            row = await cur.fetchone()
            assert row is not None  # an aggregate / function call: always one row
            return int(row[0])

    async def hydrate(self, ns: str, memory_ids: list[str]) -> dict[str, StoredMemory]:
        """Live memories of `ns` among memory_ids, in one query, keyed by id."""
        if not memory_ids:
            return {}

        async def read(conn: Any) -> list[StoredMemory]:
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

        async def read(conn: Any) -> list[Any]:
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
        async def read(conn: Any) -> list[tuple[str, str, float]]:
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

        async def read(conn: Any) -> tuple[dict[str, dict[str, StoredMemory]],
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

    async def schema_version(self) -> int:
        async with self.pool.connection() as conn:
            cur = await conn.execute("SELECT to_regclass('schema_migrations')")
            if (await cur.fetchone())[0] is None:
                return 0
            cur = await conn.execute("SELECT coalesce(max(version), 0) FROM schema_migrations")
            row = await cur.fetchone()
            assert row is not None  # an aggregate / function call: always one row
            return int(row[0])
