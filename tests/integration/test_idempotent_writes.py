"""Integration: a client-supplied Memory.id makes Store / StoreBatch idempotent (issue 24)."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import grpc
import psycopg
import pytest
from google.protobuf.timestamp_pb2 import Timestamp

from recallmesh.v1 import memory_pb2, memory_pb2_grpc
from tests.helpers import expect_status, one_row, recall, row_count

pytestmark = pytest.mark.integration
EXISTS = grpc.StatusCode.ALREADY_EXISTS


def store_request(ns: str, uid: str, content: str = "the spare key is under the blue flowerpot",
                  **fields: Any) -> memory_pb2.StoreRequest:
    return memory_pb2.StoreRequest(
        namespace=ns, memory=memory_pb2.Memory(id=uid, content=content, **fields))


def rows_with_id(db: psycopg.Connection, uid: str) -> int:
    count: int = one_row(db.execute("SELECT count(*) FROM memories WHERE id = %s", (uid,)))[0]
    return count


def test_store_retried_after_a_lost_reply_stores_once_and_answers_the_original(
        gateway: memory_pb2_grpc.MemoryServiceStub, db: psycopg.Connection, ns: str) -> None:
    uid = str(uuid.uuid4())
    request = store_request(ns, uid, category="home", tags=["keys"], importance=0.8,
                            metadata={"source": "chat"},
                            created_at=Timestamp(seconds=1_700_000_000))
    first = gateway.Store(request, timeout=10)
    jobs = one_row(db.execute("SELECT count(*) FROM embedding_jobs WHERE memory_id = %s",
                              (uid,)))[0]
    before = row_count(db)
    second = gateway.Store(request, timeout=10)  # the client never saw `first`
    assert second.memory == first.memory  # same id, created_at, updated_at, every field
    assert first.memory.id == uid and second.indexed == first.indexed
    assert row_count(db) == before and rows_with_id(db, uid) == 1
    assert one_row(db.execute("SELECT count(*) FROM embedding_jobs WHERE memory_id = %s",
                              (uid,)))[0] <= jobs  # no second job queued
    # Upper-case and hyphen-less spellings are the same id.
    third = gateway.Store(store_request(ns, uid.replace("-", "").upper(), category="home",
                                        tags=["keys"], importance=0.8, metadata={"source": "chat"},
                                        created_at=Timestamp(seconds=1_700_000_000)), timeout=10)
    assert third.memory == first.memory
    # With a wait, the retry reports indexing like any write.
    waited = gateway.Store(memory_pb2.StoreRequest(
        namespace=ns, memory=request.memory, index_wait=memory_pb2.IndexWait(wait=True)),
        timeout=30)
    assert waited.memory == first.memory and waited.indexed
    hits = recall(gateway, ns, "spare key blue flowerpot").hits
    assert [h.memory.id for h in hits] == [uid]


def test_store_without_id_of_what_is_stored_answers_the_stored_memory(
        gateway: memory_pb2_grpc.MemoryServiceStub, ns: str) -> None:
    """Not a retry but a duplicate (issue 39): nothing new, the stored memory, marked."""
    request = memory_pb2.StoreRequest(namespace=ns, memory=memory_pb2.Memory(content="twice"))
    first, second = gateway.Store(request, timeout=10), gateway.Store(request, timeout=10)
    assert second.memory.id == first.memory.id
    assert (first.existing, second.existing) == (False, True)


def test_concurrent_retries_store_once(gateway: memory_pb2_grpc.MemoryServiceStub,
                                       db: psycopg.Connection, ns: str) -> None:
    uid = str(uuid.uuid4())
    request = store_request(ns, uid)
    with ThreadPoolExecutor(8) as pool:
        replies = list(pool.map(lambda _: gateway.Store(request, timeout=20), range(8)))
    assert {r.memory.id for r in replies} == {uid}
    assert len({r.memory.created_at.SerializeToString() for r in replies}) == 1
    assert rows_with_id(db, uid) == 1


def test_store_batch_retried_stores_once(gateway: memory_pb2_grpc.MemoryServiceStub,
                                         db: psycopg.Connection, ns: str) -> None:
    a, b, c = (str(uuid.uuid4()) for _ in range(3))
    request = memory_pb2.StoreBatchRequest(namespace=ns, memories=[
        memory_pb2.Memory(id=a, content="batch retry one"),
        memory_pb2.Memory(id=b, content="batch retry two", relations=[
            memory_pb2.MemoryRelation(type=memory_pb2.RELATION_TYPE_REFERENCES, target_id=a)]),
        memory_pb2.Memory(id=c, content="batch retry three", sensitive=True),
    ])
    first = gateway.StoreBatch(request, timeout=10)
    before = row_count(db)
    second = gateway.StoreBatch(request, timeout=10)
    assert list(first.ids) == list(second.ids) == [a, b, c]
    assert second.indexed == first.indexed
    assert row_count(db) == before
    assert one_row(db.execute("SELECT count(*) FROM memory_edges WHERE src = ANY(%s::uuid[])",
                              ([a, b, c],)))[0] == 1
    # A batch may mix a retried memory with new ones: only the new ones are written.
    mixed = gateway.StoreBatch(memory_pb2.StoreBatchRequest(namespace=ns, memories=[
        memory_pb2.Memory(content="batch retry four"), request.memories[0]]), timeout=10)
    assert mixed.ids[1] == a and mixed.ids[0] not in (a, b, c)
    assert row_count(db) == before + 1


def conflict_message(uid: str) -> str:
    return f"memory {uid} already exists with other content"


def test_same_id_with_other_content_or_fields_is_already_exists(
        gateway: memory_pb2_grpc.MemoryServiceStub, db: psycopg.Connection, ns: str) -> None:
    uid = str(uuid.uuid4())
    original = gateway.Store(store_request(ns, uid, importance=0.3), timeout=10).memory
    before = row_count(db)
    for changed in (dict(content="the spare key is with the neighbour", importance=0.3),
                    dict(importance=0.4),  # everything the write stores is compared
                    dict(importance=0.3, sensitive=True),
                    dict(importance=0.3, tags=["keys"]),
                    dict(importance=0.3, created_at=Timestamp(seconds=1_000))):
        details = expect_status(EXISTS, gateway.Store, store_request(ns, uid, **changed))
        assert details == conflict_message(uid), changed
    # In a batch, the conflict rolls back the whole batch and names the id.
    details = expect_status(EXISTS, gateway.StoreBatch, memory_pb2.StoreBatchRequest(
        namespace=ns, memories=[memory_pb2.Memory(content="would be new"),
                                memory_pb2.Memory(id=uid, content="other")]))
    assert details == conflict_message(uid)
    assert row_count(db) == before
    got = gateway.Get(memory_pb2.GetRequest(namespace=ns, id=uid), timeout=10).memory
    assert got == original


def test_an_id_of_another_namespace_is_answered_like_other_content(
        gateway: memory_pb2_grpc.MemoryServiceStub, db: psycopg.Connection, ns: str) -> None:
    uid = str(uuid.uuid4())
    owner = f"{ns}-owner"
    request = store_request(owner, uid)
    gateway.Store(request, timeout=10)
    before = row_count(db)
    # Same id and the very same content, another tenant: nothing reveals that `owner` has it.
    details = expect_status(EXISTS, gateway.Store, store_request(ns, uid))
    assert details == conflict_message(uid) and owner not in details
    details = expect_status(EXISTS, gateway.StoreBatch, memory_pb2.StoreBatchRequest(
        namespace=ns, memories=[request.memory]))
    assert details == conflict_message(uid) and owner not in details
    expect_status(grpc.StatusCode.NOT_FOUND, gateway.Get,
                  memory_pb2.GetRequest(namespace=ns, id=uid))
    assert row_count(db) == before and rows_with_id(db, uid) == 1


def test_a_deleted_memorys_id_is_not_reused(gateway: memory_pb2_grpc.MemoryServiceStub,
                                            db: psycopg.Connection, ns: str) -> None:
    uid = str(uuid.uuid4())
    gateway.Store(store_request(ns, uid), timeout=10)
    gateway.Delete(memory_pb2.DeleteRequest(namespace=ns, id=uid), timeout=10)
    details = expect_status(EXISTS, gateway.Store, store_request(ns, uid))
    assert details == conflict_message(uid)
    expect_status(grpc.StatusCode.NOT_FOUND, gateway.Get,
                  memory_pb2.GetRequest(namespace=ns, id=uid))


def test_malformed_or_repeated_ids_are_invalid_argument(gateway: memory_pb2_grpc.MemoryServiceStub,
                                                        db: psycopg.Connection, ns: str) -> None:
    before = row_count(db)
    invalid = grpc.StatusCode.INVALID_ARGUMENT
    details = expect_status(invalid, gateway.Store, store_request(ns, "not-a-uuid"))
    assert details == "memory.id must be a UUID (or empty)"
    uid = str(uuid.uuid4())
    details = expect_status(invalid, gateway.StoreBatch, memory_pb2.StoreBatchRequest(
        namespace=ns, memories=[memory_pb2.Memory(id=uid, content="x"),
                                memory_pb2.Memory(content="y"),
                                memory_pb2.Memory(id=uid.upper(), content="x")]))
    assert details == "memories[2].id repeats memories[0].id"
    assert row_count(db) == before
