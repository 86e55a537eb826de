"""Expiry (issue 24, data that goes away): a memory past its expires_at is never read (Get,
Recall, every leg, context propagation, the time-window boost) even before the sweeper runs,
and the indexer's sweeper then purges it with everything derived from it. A namespace's
default TTL (RECALLMESH_NAMESPACE_TTL) gives a memory stored without expires_at one."""

from __future__ import annotations

import asyncio
import time
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import grpc
import psycopg
import pytest
from google.protobuf.field_mask_pb2 import FieldMask
from google.protobuf.timestamp_pb2 import Timestamp

from recallmesh.migrations.vector_schema import prepare_database
from recallmesh.services.indexer.expiry import sweep_expired
from recallmesh.shared.db import open_pool
from recallmesh.stack.supervisor import Stack
from recallmesh.v1 import memory_pb2, memory_pb2_grpc
from recallmesh.wire.validation import MAX_INDEX_WAIT_MS
from tests.fixtures import extra_gateway, scratch_database, stack_env
from tests.helpers import expect_status, one_row, recall
from tests.integration.test_context import QUERY, TURNS, at, context_entries, overrides
from tests.integration.test_purge import traces

pytestmark = pytest.mark.integration

WAIT = memory_pb2.IndexWait(wait=True, timeout_ms=MAX_INDEX_WAIT_MS)
WORD = "Xylocarpine"  # only in the memory that expires


def ts_in(seconds: float) -> Timestamp:
    ts = Timestamp()
    ts.FromDatetime(datetime.now(UTC) + timedelta(seconds=seconds))
    return ts


def wait_until(ts: Timestamp) -> None:
    time.sleep(max(0.0, ts.ToDatetime(tzinfo=UTC).timestamp() - time.time()) + 0.2)


def row_exists(db: psycopg.Connection, memory_id: str) -> bool:
    return db.execute("SELECT 1 FROM memories WHERE id = %s", (memory_id,)).fetchone() is not None


def candidates(gateway: memory_pb2_grpc.MemoryServiceStub, ns: str, query: str) -> dict[str, int]:
    """How many candidates each leg found (leg depth well above the namespace's size)."""
    return {leg.leg: leg.candidates for leg in recall(gateway, ns, query, k=50).legs}


def test_an_expired_memory_is_never_read(gateway: memory_pb2_grpc.MemoryServiceStub,
                                         db: psycopg.Connection, ns: str) -> None:
    # Everything that must outlive it is stored (and embedded) first, so that the memory's
    # few seconds of life are not spent waiting for the indexer.
    kept = gateway.Store(memory_pb2.StoreRequest(namespace=ns, memory=memory_pb2.Memory(
        content="The front gate code is 1234."), index_wait=WAIT), timeout=90).memory.id
    # context: the reply after the matched question expires with the memory below
    stored_turns = gateway.StoreBatch(memory_pb2.StoreBatchRequest(namespace=ns, memories=[
        memory_pb2.Memory(content=c, category=cat, created_at=at(s), thread=thread)
        for s, c, cat, thread in TURNS], index_wait=WAIT), timeout=90)
    assert stored_turns.indexed
    turns = list(stored_turns.ids)
    expires = ts_in(6)
    stored = gateway.Store(memory_pb2.StoreRequest(namespace=ns, memory=memory_pb2.Memory(
        content=f"The {WORD} garden gate code is 4711.", expires_at=expires),
        index_wait=WAIT), timeout=90)
    gone = stored.memory.id
    assert stored.memory.expires_at == expires
    gateway.Update(memory_pb2.UpdateRequest(
        namespace=ns, id=turns[1], memory=memory_pb2.Memory(expires_at=expires),
        update_mask=FieldMask(paths=["expires_at"])), timeout=10)
    assert gateway.Get(memory_pb2.GetRequest(namespace=ns, id=gone),
                       timeout=10).memory.expires_at == expires
    assert gone in [h.memory.id for h in recall(gateway, ns, f"{WORD} gate code").hits]
    assert candidates(gateway, ns, WORD) == {"lexical": 1, "vector": len(TURNS) + 2}
    assert context_entries(recall(gateway, ns, QUERY, explain=True, fusion=overrides(
        context_hits=1, context_next_weight=0.5)))[turns[1]] == [
            ("context_next", 1, "stored next after hit 1")]

    wait_until(expires)
    assert row_exists(db, gone)  # not swept yet: the reads themselves leave it out
    expect_status(grpc.StatusCode.NOT_FOUND, gateway.Get,
                  memory_pb2.GetRequest(namespace=ns, id=gone))
    response = recall(gateway, ns, f"{WORD} gate code", k=20)
    assert gone not in [h.memory.id for h in response.hits]
    assert kept in [h.memory.id for h in response.hits]
    # the legs' own SQL leaves it out: it takes no candidate slot
    assert candidates(gateway, ns, WORD) == {"lexical": 0, "vector": len(TURNS)}
    for sort_by in (memory_pb2.SORT_BY_RECENCY, memory_pb2.SORT_BY_IMPORTANCE):
        assert gone not in [h.memory.id for h in recall(gateway, ns, WORD,
                                                        sort_by=sort_by).hits]
    # context propagation skips it: the next live turn after the question gains instead
    after = recall(gateway, ns, QUERY, explain=True, k=20,
                   fusion=overrides(context_hits=1, context_next_weight=0.5))
    entries = context_entries(after)
    assert turns[1] not in entries
    assert entries[turns[2]] == [("context_next", 1, "stored next after hit 1")]
    # nor can it be changed, deleted softly or related to
    expect_status(grpc.StatusCode.NOT_FOUND, gateway.Update, memory_pb2.UpdateRequest(
        namespace=ns, id=gone, memory=memory_pb2.Memory(content="x"),
        update_mask=FieldMask(paths=["content"])))
    expect_status(grpc.StatusCode.NOT_FOUND, gateway.Delete,
                  memory_pb2.DeleteRequest(namespace=ns, id=gone))
    expect_status(grpc.StatusCode.NOT_FOUND, gateway.Store, memory_pb2.StoreRequest(
        namespace=ns, memory=memory_pb2.Memory(content="y", relations=[
            memory_pb2.MemoryRelation(type=memory_pb2.RELATION_TYPE_ABOUT, target_id=gone)])))


def test_the_sweeper_purges_expired_memories_and_what_they_evidenced(
        gateway: memory_pb2_grpc.MemoryServiceStub, db: psycopg.Connection, ns: str,
        dsn: str) -> None:
    expires = ts_in(2)
    gone = gateway.Store(memory_pb2.StoreRequest(namespace=ns, memory=memory_pb2.Memory(
        content=f"Quillon Vexmoor planted the {WORD} orchard in Lisbon.", expires_at=expires),
        index_wait=WAIT), timeout=90).memory.id
    later = gateway.Store(memory_pb2.StoreRequest(namespace=ns, memory=memory_pb2.Memory(
        content="Quillon Vexmoor drinks green tea.", expires_at=ts_in(3600)),
        index_wait=WAIT), timeout=90).memory.id
    assert traces(db, WORD, gone)
    wait_until(expires)

    async def sweep() -> int:
        pool = await open_pool(dsn, name="test-sweeper")
        try:
            return await sweep_expired(pool, batch=2)
        finally:
            await pool.close()

    assert asyncio.run(sweep()) >= 1
    assert not row_exists(db, gone)
    assert traces(db, WORD, gone) == []
    assert row_exists(db, later)  # not expired yet: kept
    assert asyncio.run(sweep()) == 0 or not row_exists(db, gone)


def test_the_indexer_runs_the_sweeper(stack: Stack, admin_dsn: str, pg_dir: Path) -> None:
    """An indexer with RECALLMESH_EXPIRY_SWEEP_S=1 purges an expired memory on its own and
    counts it in recallmesh_expired_purged_total. On a database of its own: the session
    stack's indexer sweeps too (every 60 s), and purging the memory first it left this
    indexer's count at 0 (seen in CI)."""
    with scratch_database(admin_dsn) as dsn:
        prepare_database(dsn)
        env = stack_env(pg_dir / "sweeper", dsn, RECALLMESH_EXPIRY_SWEEP_S="1",
                        RECALLMESH_CONCEPT_EXTRACTOR="none",
                        RECALLMESH_INDEXER_EMBEDDING_TARGET=stack.endpoints["embedding"],
                        RECALLMESH_INTERNAL_TOKEN=stack.internal_token)
        sweeper = Stack(env=env, services=("indexer",))
        sweeper.start(timeout_s=60)
        try:
            with psycopg.connect(dsn, autocommit=True) as db:
                gone = str(one_row(db.execute(
                    "INSERT INTO memories (namespace, content, is_sensitive, expires_at) "
                    "VALUES ('sweeper', 'A short-lived note.', true, "
                    "now() + interval '1.5 seconds') RETURNING id"))[0])
                deadline = time.monotonic() + 20
                while row_exists(db, gone) and time.monotonic() < deadline:
                    time.sleep(0.2)
                assert not row_exists(db, gone)
            text = urllib.request.urlopen(
                f"http://localhost:{sweeper.metrics['indexer']}/metrics", timeout=5
            ).read().decode()
            purged = [line for line in text.splitlines()
                      if line.startswith("recallmesh_expired_purged_total ")]
            assert purged and float(purged[0].split()[1]) >= 1
        finally:
            sweeper.stop()


def test_expires_at_is_validated(gateway: memory_pb2_grpc.MemoryServiceStub, ns: str) -> None:
    past = ts_in(-60)
    detail = expect_status(grpc.StatusCode.INVALID_ARGUMENT, gateway.Store,
                           memory_pb2.StoreRequest(namespace=ns, memory=memory_pb2.Memory(
                               content="x", expires_at=past)))
    assert "memory.expires_at must be in the future (or unset)" in detail
    detail = expect_status(grpc.StatusCode.INVALID_ARGUMENT, gateway.StoreBatch,
                           memory_pb2.StoreBatchRequest(namespace=ns, memories=[
                               memory_pb2.Memory(content="ok"),
                               memory_pb2.Memory(content="x", expires_at=past)]))
    assert "memories[1].expires_at must be in the future" in detail
    detail = expect_status(grpc.StatusCode.INVALID_ARGUMENT, gateway.Store,
                           memory_pb2.StoreRequest(namespace=ns, memory=memory_pb2.Memory(
                               content="x", created_at=ts_in(7200), expires_at=ts_in(3600))))
    assert "memory.expires_at must be after memory.created_at" in detail
    mid = gateway.Store(memory_pb2.StoreRequest(namespace=ns, memory=memory_pb2.Memory(
        content="x")), timeout=10).memory.id
    detail = expect_status(grpc.StatusCode.INVALID_ARGUMENT, gateway.Update,
                           memory_pb2.UpdateRequest(
                               namespace=ns, id=mid, memory=memory_pb2.Memory(expires_at=past),
                               update_mask=FieldMask(paths=["expires_at"])))
    assert "expires_at must be in the future" in detail


def test_update_sets_and_clears_expires_at(gateway: memory_pb2_grpc.MemoryServiceStub,
                                           ns: str) -> None:
    mid = gateway.Store(memory_pb2.StoreRequest(namespace=ns, memory=memory_pb2.Memory(
        content="A note that may expire.")), timeout=10).memory.id
    later = ts_in(3600)
    updated = gateway.Update(memory_pb2.UpdateRequest(
        namespace=ns, id=mid, memory=memory_pb2.Memory(expires_at=later),
        update_mask=FieldMask(paths=["expires_at"])), timeout=10).memory
    assert updated.expires_at == later
    cleared = gateway.Update(memory_pb2.UpdateRequest(
        namespace=ns, id=mid, memory=memory_pb2.Memory(),
        update_mask=FieldMask(paths=["expires_at"])), timeout=10).memory
    assert not cleared.HasField("expires_at")
    assert not gateway.Get(memory_pb2.GetRequest(namespace=ns, id=mid),
                           timeout=10).memory.HasField("expires_at")


@pytest.fixture(scope="module")
def ttl_gateway(stack: Stack, pg_dir: Path) -> Iterator[memory_pb2_grpc.MemoryServiceStub]:
    """A gateway whose namespaces `ttl-*` keep memories an hour by default, except
    `ttl-keep-*`, and `ttl-short-*` two seconds."""
    with extra_gateway(pg_dir / "ttl-gateway", stack, RECALLMESH_LEGS="lexical",
                       RECALLMESH_LEXICAL_TARGET=stack.endpoints["lexical"],
                       RECALLMESH_FUSION_TARGET=stack.endpoints["fusion"],
                       RECALLMESH_NAMESPACE_TTL="ttl-*=1h, ttl-keep-*=0, ttl-short-*=2s") as stub:
        yield stub


def test_a_namespace_default_ttl_applies_to_memories_stored_without_one(
        ttl_gateway: memory_pb2_grpc.MemoryServiceStub, ns: str) -> None:
    def store(namespace: str, **fields: Any) -> memory_pb2.Memory:
        stored: memory_pb2.StoreResponse = ttl_gateway.Store(memory_pb2.StoreRequest(
            namespace=namespace, memory=memory_pb2.Memory(content="A note.", **fields)),
            timeout=10)
        return stored.memory

    hour = store(f"ttl-{ns}")
    assert (hour.expires_at.ToDatetime() - hour.created_at.ToDatetime()).total_seconds() == \
        pytest.approx(3600, abs=1)
    assert not store(f"ttl-keep-{ns}").HasField("expires_at")
    assert not store(ns).HasField("expires_at")  # no rule matches
    own = ts_in(600)
    assert store(f"ttl-{ns}", expires_at=own).expires_at == own  # its own wins
    ids = ttl_gateway.StoreBatch(memory_pb2.StoreBatchRequest(
        namespace=f"ttl-{ns}", memories=[memory_pb2.Memory(content="a"),
                                         memory_pb2.Memory(content="b")]), timeout=10).ids
    for mid in ids:
        assert ttl_gateway.Get(memory_pb2.GetRequest(namespace=f"ttl-{ns}", id=mid),
                               timeout=10).memory.HasField("expires_at")
    # an import older than the TTL is stored already expired: never read
    old = Timestamp()
    old.FromDatetime(datetime.now(UTC) - timedelta(hours=2))
    imported = ttl_gateway.Store(memory_pb2.StoreRequest(  # another text: not a duplicate
        namespace=f"ttl-{ns}", memory=memory_pb2.Memory(content="An old note.",
                                                        created_at=old)), timeout=10).memory
    expect_status(grpc.StatusCode.NOT_FOUND, ttl_gateway.Get,
                  memory_pb2.GetRequest(namespace=f"ttl-{ns}", id=imported.id))
    # a short default TTL: recalled now, not after
    short = store(f"ttl-short-{ns}", tags=["brief"])
    assert [h.memory.id for h in recall(ttl_gateway, f"ttl-short-{ns}", "note").hits] == [short.id]
    wait_until(short.expires_at)
    assert recall(ttl_gateway, f"ttl-short-{ns}", "note").hits == []


def test_the_graph_leg_drops_an_expired_memory_from_its_cached_graph(
        graph_gateway: memory_pb2_grpc.MemoryServiceStub, ns: str) -> None:
    """The graph leg caches a namespace's graph until its version changes; the cached graph
    also expires when one of its memories does, so the leg itself stops returning it."""
    expires = ts_in(6)
    gone = gateway_store_wait(graph_gateway, ns, "Arjun's favourite editor is Emacs.",
                              expires_at=expires)
    kept = gateway_store_wait(graph_gateway, ns, "Arjun's laptop runs Debian.")
    # the graph leg alone, every candidate (its list-relative scores, cut by no floor)
    only_graph = overrides(skip_legs=["lexical", "vector"], min_score=0.0)

    def graph_leg(query: str) -> tuple[int, set[str]]:
        response = recall(graph_gateway, ns, query, fusion=only_graph)
        (leg,) = [leg for leg in response.legs if leg.leg == "graph"]
        assert leg.state == memory_pb2.LEG_STATE_OK
        return leg.candidates, {h.memory.id for h in response.hits}

    assert graph_leg("Arjun editor") == (2, {gone, kept})  # cached now
    wait_until(expires)
    assert graph_leg("Arjun editor") == (1, {kept})


def gateway_store_wait(gateway: memory_pb2_grpc.MemoryServiceStub, ns: str, text: str,
                       **fields: Any) -> str:
    stored: memory_pb2.StoreResponse = gateway.Store(memory_pb2.StoreRequest(
        namespace=ns, memory=memory_pb2.Memory(content=text, **fields), index_wait=WAIT),
        timeout=90)
    return stored.memory.id
