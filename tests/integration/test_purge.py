"""Data that really goes away (issue 24): a purged memory leaves no row, vector, posting, lexeme,
concept, alias or edge evidence behind in any table, while what another memory also evidences
stays; a deleted namespace leaves nothing with its name. Checked by scanning every text-like
column of every table with SQL, so a table added later is covered too."""

from __future__ import annotations

import grpc
import psycopg
import pytest

from recallmesh.v1 import memory_pb2, memory_pb2_grpc
from tests.helpers import expect_status, one_row
from tests.integration.test_graph import store_wait

pytestmark = pytest.mark.integration

GONE = "Zanzibarian"  # only in the purged memory
SHARED = "Quillon Vexmoor"  # in both memories


def columns(db: psycopg.Connection) -> list[tuple[str, str, str]]:
    """(table, column, type) of every column that can hold text or an id, in public tables."""
    return db.execute(
        "SELECT c.table_name, c.column_name, c.udt_name FROM information_schema.columns c "
        "JOIN information_schema.tables t USING (table_schema, table_name) "
        "WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE' "
        "AND c.udt_name IN ('text', 'varchar', 'uuid', '_uuid', '_text', 'jsonb', 'tsvector')"
    ).fetchall()


def traces(db: psycopg.Connection, needle: str, memory_id: str | None = None) -> list[str]:
    """Where `needle` (a word, case-insensitive) or `memory_id` still appears: 'table.column'."""
    found = []
    stem = one_row(db.execute("SELECT to_tsvector('english', %s)::text", (needle,)))[0]
    for table, column, kind in columns(db):
        if kind in ("text", "varchar", "jsonb", "_text"):
            hit = db.execute(f'SELECT 1 FROM "{table}" WHERE "{column}"::text ILIKE %s LIMIT 1',
                             (f"%{needle}%",)).fetchone()
            # lexemes: the stemmed form of a word (not of an id: Postgres splits a uuid into
            # hex fragments such as '9617', which another memory's text may well hold)
            if hit is None and kind in ("text", "varchar") and needle != memory_id:
                lexeme = stem.split("'")[1] if "'" in stem else needle.lower()
                hit = db.execute(f'SELECT 1 FROM "{table}" WHERE "{column}" = %s LIMIT 1',
                                 (lexeme,)).fetchone()
        elif kind == "tsvector":
            hit = db.execute(f'SELECT 1 FROM "{table}" WHERE "{column}" @@ '
                             "plainto_tsquery('english', %s) LIMIT 1", (needle,)).fetchone()
        elif memory_id and kind == "uuid":
            hit = db.execute(f'SELECT 1 FROM "{table}" WHERE "{column}" = %s LIMIT 1',
                             (memory_id,)).fetchone()
        elif memory_id and kind == "_uuid":
            hit = db.execute(f'SELECT 1 FROM "{table}" WHERE %s = ANY ("{column}") LIMIT 1',
                             (memory_id,)).fetchone()
        else:
            hit = None
        if hit is not None:
            found.append(f"{table}.{column}")
    return found


def test_purge_removes_the_memory_and_what_only_it_evidenced(
        gateway: memory_pb2_grpc.MemoryServiceStub, db: psycopg.Connection, ns: str) -> None:
    gone, kept = store_wait(
        gateway, ns,
        f"{SHARED} founded the {GONE} orchard cooperative in Lisbon.",
        f"{SHARED} drinks green tea every morning in Lisbon.")
    assert traces(db, GONE, gone)  # the memory, its postings and its concepts are there
    shared_concepts = one_row(db.execute(
        "SELECT count(*) FROM concept_aliases WHERE namespace = %s AND alias ILIKE %s",
        (ns, f"%{SHARED.split()[1].lower()}%")))[0]
    assert shared_concepts > 0, "the indexer extracted no concept; the test would prove nothing"
    # an update keeps the text it replaces as a version (History): the purge takes it too
    gateway.Update(memory_pb2.UpdateRequest(namespace=ns, id=gone, memory=memory_pb2.Memory(
        content=f"{SHARED} founded the {GONE} orchard cooperative in Lisbon in 1998."),
        update_mask={"paths": ["content"]}), timeout=10)
    assert one_row(db.execute(
        "SELECT count(*) FROM memory_versions WHERE memory_id = %s AND content "
        "LIKE %s", (gone, f"%{GONE}%")))[0] == 1

    response = gateway.Delete(memory_pb2.DeleteRequest(namespace=ns, id=gone, purge=True),
                              timeout=10)
    assert response.purged and response.id == gone
    assert traces(db, GONE, gone) == []
    # what the other memory evidences stays: its row, its concepts, the shared concept
    assert one_row(db.execute("SELECT count(*) FROM memories WHERE id = %s", (kept,)))[0] == 1
    assert one_row(db.execute(
        "SELECT count(*) FROM concept_aliases WHERE namespace = %s AND alias ILIKE %s",
        (ns, f"%{SHARED.split()[1].lower()}%")))[0] > 0
    assert one_row(db.execute("SELECT count(*) FROM memory_concepts WHERE memory_id = %s",
                              (kept,)))[0] > 0
    # no edge keeps the purged id; none is left without evidence it had before
    assert one_row(db.execute(
        "SELECT count(*) FROM concept_edges WHERE namespace = %s AND %s = ANY "
        "(evidence)", (ns, gone)))[0] == 0
    hits = gateway.Recall(memory_pb2.RecallRequest(namespace=ns, query=f"{GONE} orchard"),
                          timeout=10).hits
    assert gone not in [h.memory.id for h in hits]
    expect_status(grpc.StatusCode.NOT_FOUND, gateway.Get,
                  memory_pb2.GetRequest(namespace=ns, id=gone))
    # purging again: it is not there any more
    expect_status(grpc.StatusCode.NOT_FOUND, gateway.Delete,
                  memory_pb2.DeleteRequest(namespace=ns, id=gone, purge=True))


def test_purge_forgets_a_memory_deleted_earlier(gateway: memory_pb2_grpc.MemoryServiceStub,
                                                db: psycopg.Connection, ns: str) -> None:
    (mid,) = store_wait(gateway, ns, f"The {GONE} ferry timetable changed in May.")
    gateway.Delete(memory_pb2.DeleteRequest(namespace=ns, id=mid), timeout=10)
    assert traces(db, GONE, mid)  # a soft delete keeps the row (and its leftovers)
    gateway.Delete(memory_pb2.DeleteRequest(namespace=ns, id=mid, purge=True), timeout=10)
    assert traces(db, GONE, mid) == []


def test_delete_namespace_leaves_nothing_with_its_name(gateway: memory_pb2_grpc.MemoryServiceStub,
                                                       db: psycopg.Connection, ns: str) -> None:
    store_wait(gateway, ns, f"{SHARED} keeps bees near the {GONE} hills.",
               f"{SHARED} sells honey on Saturdays.")
    other = ns + "-neighbour"
    (neighbour,) = store_wait(gateway, other, f"{SHARED} lives next door.")
    removed = gateway.DeleteNamespace(memory_pb2.DeleteNamespaceRequest(namespace=ns),
                                      timeout=30).memories_removed
    assert removed == 2
    with_name = [f"{t}.{c}" for t, c, kind in columns(db) if kind in ("text", "varchar")
                 and db.execute(f'SELECT 1 FROM "{t}" WHERE "{c}" = %s LIMIT 1',
                                (ns,)).fetchone()]
    assert with_name == []
    assert traces(db, GONE) == []
    # the neighbour namespace is untouched
    hits = gateway.Recall(memory_pb2.RecallRequest(namespace=other, query=SHARED),
                          timeout=10).hits
    assert [h.memory.id for h in hits] == [neighbour]
    assert gateway.DeleteNamespace(memory_pb2.DeleteNamespaceRequest(namespace=other),
                                   timeout=30).memories_removed == 1


def test_made_sensitive_a_memory_loses_its_vector_and_derived_concepts_at_once(
        gateway: memory_pb2_grpc.MemoryServiceStub, db: psycopg.Connection, ns: str) -> None:
    flipped, kept = store_wait(
        gateway, ns,
        f"{SHARED} founded the {GONE} orchard cooperative in Lisbon.",
        f"{SHARED} drinks green tea every morning in Lisbon.")
    assert one_row(db.execute("SELECT embedding IS NOT NULL FROM memories WHERE id = %s",
                              (flipped,)))[0]
    graph = [t for t in traces(db, GONE, flipped) if t.startswith("concept")]
    assert graph  # its concepts and edge evidence exist before the flip
    gateway.Update(memory_pb2.UpdateRequest(
        namespace=ns, id=flipped, memory=memory_pb2.Memory(sensitive=True),
        update_mask={"paths": ["sensitive"]}), timeout=10)
    assert one_row(db.execute("SELECT embedding IS NULL FROM memories WHERE id = %s",
                              (flipped,)))[0]
    assert [t for t in traces(db, GONE, flipped)
            if t.startswith(("concept", "memory_concepts"))] == []
    # the other memory keeps its links, and the concept both evidenced stays
    assert one_row(db.execute("SELECT count(*) FROM memory_concepts WHERE memory_id = %s",
                              (kept,)))[0] > 0
