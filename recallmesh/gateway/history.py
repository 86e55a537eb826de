"""A memory's past and a namespace that travels: History, Export, Import (plain SQL).

Every Update keeps the state it replaces as a version (memory_versions, migration 0014; the
store writes it in the Update's transaction). Relations are the memory_edges rows, read both
ways. Export pages through List's keyset (oldest first) and adds each memory's relations and
versions; Import writes such records back exactly: the same ids, timestamps, validity, pins,
relations and versions, with no duplicate rule and no validity ended by a relation, so
export -> import reproduces a namespace and a second import changes nothing.
"""

from __future__ import annotations

from dataclasses import replace

from recallmesh.gateway.listing import PageTokens, list_page
from recallmesh.gateway.store import MemoryStore
from recallmesh.gateway.store_reads import successors
from recallmesh.gateway.store_writes import VERSION_COLUMNS, column_params
from recallmesh.gateway.write_keys import LOCAL, Writer, content_key, same_write
from recallmesh.shared.cjk import index_terms
from recallmesh.shared.db import WRITE, Conn, lock_for_write, transaction
from recallmesh.shared.errors import AlreadyExists, NotFound
from recallmesh.wire.filters import live
from recallmesh.wire.memory_fields import (
    BY_NAME,
    COLUMNS,
    UPDATABLE,
    VERSIONED_COLUMNS,
    VERSIONED_PARAMS,
    Link,
    Record,
    StoredMemory,
    Version,
    from_column,
)
from recallmesh.wire.validation import ImportedMemory, ListQuery

_VERSIONS = f"""
SELECT memory_id::text, version, updated_at, {VERSIONED_COLUMNS}, replaced_at, replaced_by,
       changed, imported_by
FROM memory_versions WHERE namespace = %s AND memory_id = ANY(%s::uuid[])
ORDER BY memory_id, version
"""


async def _versions(conn: Conn, ns: str, current: list[StoredMemory]
                    ) -> dict[str, list[Version]]:
    by_id = {m.id: m for m in current}
    cur = await conn.execute(_VERSIONS, (ns, list(by_id)))
    out: dict[str, list[Version]] = {m: [] for m in by_id}
    kept = len(UPDATABLE)
    for r in await cur.fetchall():
        fields = {name: from_column(BY_NAME[name].kind, value)
                  for name, value in zip(UPDATABLE, r[3:3 + kept], strict=True)}
        was = replace(by_id[r[0]], **fields, updated_at=r[2], superseded_by="", deleted_at=None)
        replaced_at, replaced_by, changed, imported_by = r[3 + kept:]
        out[r[0]].append(Version(int(r[1]), was, replaced_at, replaced_by, tuple(changed),
                                 imported_by))
    return out


async def _links(conn: Conn, ns: str, ids: list[str], both_ways: bool) -> list[Link]:
    naming = "src = ANY(%(ids)s::uuid[])" + (" OR dst = ANY(%(ids)s::uuid[])" if both_ways
                                              else "")
    cur = await conn.execute(
        "SELECT rel_type, src::text, dst::text, created_at FROM memory_edges "
        f"WHERE namespace = %(ns)s AND ({naming}) ORDER BY created_at, src, dst, rel_type",
        {"ns": ns, "ids": ids})
    return [Link(*r) for r in await cur.fetchall()]


async def history(store: MemoryStore, ns: str, memory_id: str
                  ) -> tuple[StoredMemory, list[Version], list[Link]]:
    """The memory now (deleted or not; never an expired one), its earlier versions oldest
    first, and its relations both ways."""
    async with store.pool.connection() as conn:
        cur = await conn.execute(
            f"SELECT {COLUMNS} FROM memories WHERE namespace = %s AND id = %s "
            f"AND {live(include_deleted=True)}", (ns, memory_id))
        row = await cur.fetchone()
        if row is None:
            raise NotFound(f"memory {memory_id} not found in namespace {ns!r}")
        memory = (await successors(conn, ns, [StoredMemory.from_row(row)]))[0]
        versions = (await _versions(conn, ns, [memory]))[memory.id]
        links = await _links(conn, ns, [memory.id], both_ways=True)
    return memory, versions, links


async def export_page(store: MemoryStore, query: ListQuery, pages: PageTokens
                      ) -> tuple[list[Record], bool]:
    """One page of records, and whether more follow (`pages.make` on a record's memory
    continues after it)."""
    memories, more = await list_page(store, query, pages)
    if not memories:
        return [], more
    ids = [m.id for m in memories]
    async with store.pool.connection() as conn:
        versions = await _versions(conn, query.namespace, memories)
        links = await _links(conn, query.namespace, ids, both_ways=False)
    stated: dict[str, list[Link]] = {i: [] for i in ids}
    for link in links:
        stated[link.source_id].append(link)
    return [Record(m, stated[m.id], versions[m.id]) for m in memories], more


_IMPORT = f"""
INSERT INTO memories (id, namespace, created_at, updated_at, keywords, content_key, written_by,
                      {VERSIONED_COLUMNS})
VALUES (%(id)s, %(ns)s, %(created_at)s, %(updated_at)s, %(keywords)s, %(content_key)s,
        %(written_by)s, {VERSIONED_PARAMS})
ON CONFLICT (id) DO NOTHING
RETURNING id
"""

_IMPORT_VERSION = f"""
INSERT INTO memory_versions ({VERSION_COLUMNS}, imported_by)
VALUES (%(id)s, %(version)s, %(ns)s, %(updated_at)s, {VERSIONED_PARAMS}, %(replaced_at)s,
        %(replaced_by)s, %(changed)s, %(imported_by)s)
"""


def _held(i: int, memory_id: str) -> AlreadyExists:
    return AlreadyExists(f"records[{i}]: memory {memory_id} already exists with other content "
                         "(or deleted)")


async def import_records(store: MemoryStore, ns: str, records: list[ImportedMemory],
                         by: str = "", writer: Writer = LOCAL) -> tuple[int, int, int, int]:
    """(imported, unchanged, relations written, relations skipped), in one transaction. Each
    version is written as exported (replaced_by says who replaced it where it was made) and
    records `by`, who imported it: an imported history never passes for one made here. A
    record is unchanged only where the writer may be told so: it may read, or it wrote the
    memory held (write_keys.Writer); else a held id is ALREADY_EXISTS like other content."""
    ids = [r.memory.id for r in records if r.memory.id is not None]
    async with transaction(store.pool, WRITE) as conn:
        # The records' ids are reserved with the namespace: a write of one of them in another
        # namespace waits here or is seen by the read below, never meets this one in an index.
        await lock_for_write(conn, [ns], ids)
        cur = await conn.execute(
            f"SELECT written_by, {COLUMNS} FROM memories WHERE id = ANY(%s::uuid[])", (ids,))
        rows = await cur.fetchall()
        held = {row[1]: StoredMemory.from_row(row[1:]) for row in rows}
        told = {row[1] for row in rows if writer.told_of(row[0])}
        imported = unchanged = 0
        for i, record in enumerate(records):
            memory = record.memory
            assert memory.id is not None
            stored = held.get(memory.id)
            if stored is not None:
                if (memory.id in told and stored.namespace == ns and stored.deleted_at is None
                        and same_write(stored, memory, set())
                        and stored.updated_at == record.updated_at):
                    unchanged += 1
                    continue
                raise _held(i, memory.id)
            cur = await conn.execute(_IMPORT, column_params(memory) | {
                "id": memory.id, "ns": ns, "created_at": memory.created_at,
                "updated_at": record.updated_at, "keywords": index_terms(memory.content),
                "content_key": content_key(memory), "written_by": writer.name})
            if await cur.fetchone() is None:
                raise _held(i, memory.id)
            for version in record.versions:
                await conn.execute(_IMPORT_VERSION, column_params(version.fields) | {
                    "id": memory.id, "ns": ns, "version": version.version,
                    "updated_at": version.updated_at, "replaced_at": version.replaced_at,
                    "replaced_by": version.replaced_by, "changed": list(version.changed),
                    "imported_by": by})
            imported += 1
        targets = sorted({t for r in records for _, t, _ in r.relations})
        cur = await conn.execute(
            "SELECT id::text FROM memories WHERE namespace = %s AND id = ANY(%s::uuid[])",
            (ns, targets))
        present = {r[0] for r in await cur.fetchall()}
        written = skipped = 0
        for record in records:
            for rel, target, created_at in record.relations:
                if target not in present:
                    skipped += 1
                    continue
                written += 1
                await conn.execute(
                    "INSERT INTO memory_edges (namespace, src, dst, rel_type, created_at) "
                    "VALUES (%s, %s, %s, %s, coalesce(%s, now())) ON CONFLICT DO NOTHING",
                    (ns, record.memory.id, target, rel, created_at))
    return imported, unchanged, written, skipped
