"""Issue 54: the management API against a hostile caller, through real gRPC on the session's
stack. Each test is one repro of the issue (and its neighbours), failing without its fix:
a write-only key that read content, single-precision underflow, an Import racing a write of
the same id, forged page tokens, unbounded versions, forged authorship, blank metadata keys,
and the documented edges (pins under min_score 1, as_of with include_deleted, upper-case ids,
a DeleteMatching condition every memory meets)."""

from __future__ import annotations

import base64
import json
import threading
import uuid
from datetime import UTC, datetime, timedelta

import grpc
import psycopg
import pytest
from google.protobuf import field_mask_pb2
from google.protobuf.timestamp_pb2 import Timestamp

from recallmesh.stack.supervisor import Stack
from recallmesh.v1 import memory_pb2, memory_pb2_grpc
from recallmesh.wire.timestamps import to_proto_timestamp
from recallmesh.wire.validation import MAX_IMPORT_VERSIONS, MAX_RESPONSE_BYTES, MAX_VERSIONS
from tests.helpers import api_key, expect_status, store

pytestmark = pytest.mark.integration

OK = grpc.StatusCode.OK
INVALID = grpc.StatusCode.INVALID_ARGUMENT
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def stub_for(stack: Stack,
             token: str | None = None) -> tuple[grpc.Channel, memory_pb2_grpc.MemoryServiceStub]:
    channel = stack.dial(token=token)
    return channel, memory_pb2_grpc.MemoryServiceStub(channel)


def ts(when: datetime) -> Timestamp:
    msg = memory_pb2.Memory().created_at
    to_proto_timestamp(when, msg)
    return msg


def record(memory_id: str, content: str, versions: int = 0, version_content: str = "",
           first_version: int = 1, replaced_by: str = "someone else") -> memory_pb2.MemoryRecord:
    rec = memory_pb2.MemoryRecord(memory=memory_pb2.Memory(id=memory_id, content=content))
    rec.memory.created_at.CopyFrom(ts(T0))
    rec.memory.updated_at.CopyFrom(ts(T0 + timedelta(days=1)))
    for j in range(versions):
        v = rec.versions.add(version=first_version + j, replaced_by=replaced_by,
                             changed=["content"])
        v.memory.content = version_content or f"{content} (version {first_version + j})"
        v.memory.updated_at.CopyFrom(ts(T0 + timedelta(minutes=j)))
        v.replaced_at.CopyFrom(ts(T0 + timedelta(minutes=j + 1)))
    return rec


# --- 1. a write-only key never reads content -------------------------------------------------

def test_a_write_only_key_deletes_by_filter_without_reading(
        stack: Stack, gateway: memory_pb2_grpc.MemoryServiceStub, ns: str) -> None:
    secret = store(gateway, ns, "the vault code is 4711", tags=["secret"], sensitive=True)
    plain = store(gateway, ns, "the office opens at nine", tags=["secret"])
    writer = api_key(stack.dsn, (ns,), scopes=("write",), name="writer-only")
    channel, as_writer = stub_for(stack, writer)
    with channel:
        # It matches the memories it wrote only (issue 65): the reader's two tell it nothing
        own = as_writer.Store(memory_pb2.StoreRequest(namespace=ns, memory=memory_pb2.Memory(
            content="the shed opens at ten", tags=["secret"])), timeout=10).memory.id
        dry = as_writer.DeleteMatching(memory_pb2.DeleteMatchingRequest(
            namespace=ns, filters=memory_pb2.RecallFilters(tags=["secret"])), timeout=10)
        assert dry.matched == 1 and dry.deleted == 0 and list(dry.sample) == []
        # Update answers with what identifies the write, not the memory's text
        updated = as_writer.Update(memory_pb2.UpdateRequest(
            namespace=ns, id=plain, memory=memory_pb2.Memory(pinned=True),
            update_mask=field_mask_pb2.FieldMask(paths=["pinned"])), timeout=10).memory
        assert updated.id == plain and updated.content == "" and not updated.tags
        assert updated.HasField("updated_at")
        # paging by created_before reads nothing either
        before = memory_pb2.RecallFilters(tags=["secret"])
        before.created_before.CopyFrom(ts(datetime.now(UTC) + timedelta(days=1)))
        assert list(as_writer.DeleteMatching(memory_pb2.DeleteMatchingRequest(
            namespace=ns, filters=before, sample_size=100), timeout=10).sample) == []
        done = as_writer.DeleteMatching(memory_pb2.DeleteMatchingRequest(
            namespace=ns, filters=memory_pb2.RecallFilters(tags=["secret"]), confirm=True),
            timeout=10)
        assert done.deleted == 1 and list(done.sample) == []
    # a key that may read sees the sample (the admin key here), and the reader's two are there
    again = store(gateway, ns, "the vault code is 4712", tags=["secret"])
    seen = gateway.DeleteMatching(memory_pb2.DeleteMatchingRequest(
        namespace=ns, filters=memory_pb2.RecallFilters(tags=["secret"])), timeout=10)
    assert seen.sample[0].id == again and seen.sample[0].content.endswith("4712")
    assert {m.id for m in seen.sample} == {again, plain, secret}
    expect_status(grpc.StatusCode.NOT_FOUND, gateway.Get,
                  memory_pb2.GetRequest(namespace=ns, id=own))  # the one it wrote went


def test_a_write_only_key_cannot_confirm_a_guess_of_stored_text(
        stack: Stack, gateway: memory_pb2_grpc.MemoryServiceStub, ns: str) -> None:
    """Issue 65: a StoreBatch of 40 guessed PINs answered `existing` at the right guess with
    the sensitive memory's id, and a Store of the right guess returned the stored memory. A
    key without read is now answered about the memories it wrote only: every guess is a new
    memory of its own, and its own repeats are still recognised."""
    pin = gateway.Store(memory_pb2.StoreRequest(namespace=ns, memory=memory_pb2.Memory(
        content="the door PIN is 4721", sensitive=True)), timeout=10).memory
    writer = api_key(stack.dsn, (ns,), scopes=("write",), name="guesser")
    channel, as_writer = stub_for(stack, writer)
    with channel:
        guesses = [memory_pb2.Memory(content=f"the door PIN is {4700 + i}", sensitive=True)
                   for i in range(40)]
        batch = as_writer.StoreBatch(memory_pb2.StoreBatchRequest(
            namespace=ns, memories=guesses), timeout=10)
        assert not any(batch.existing) and pin.id not in batch.ids
        # its own writes said again are its own memories, as for any writer
        again = as_writer.StoreBatch(memory_pb2.StoreBatchRequest(
            namespace=ns, memories=guesses[20:23]), timeout=10)
        assert list(again.existing) == [True] * 3 and list(again.ids) == list(batch.ids[20:23])
    other = api_key(stack.dsn, (ns,), scopes=("write",), name="second-guesser")
    channel, as_other = stub_for(stack, other)
    with channel:
        single = as_other.Store(memory_pb2.StoreRequest(namespace=ns, memory=memory_pb2.Memory(
            content="The door PIN is  4721", sensitive=True)), timeout=10)
        assert not single.existing and single.memory.id not in (pin.id, batch.ids[21])
        assert single.memory.created_at.ToDatetime() > pin.created_at.ToDatetime()
    # a key that may read is still answered by the memory already stored
    reader = gateway.Store(memory_pb2.StoreRequest(namespace=ns, memory=memory_pb2.Memory(
        content="the door PIN is 4721", sensitive=True)), timeout=10)
    assert reader.existing and reader.memory.id == pin.id


def test_a_write_only_key_cannot_confirm_a_guess_through_an_id(
        stack: Stack, gateway: memory_pb2_grpc.MemoryServiceStub, ns: str) -> None:
    """A retry's answer (the same id and the same write: OK with the stored memory) and an
    Import's `unchanged` would confirm a guess of another writer's text under a known id: for
    a key without read both are ALREADY_EXISTS, worded as for other content, unless it wrote
    the memory itself."""
    theirs = str(uuid.uuid4())
    gateway.Store(memory_pb2.StoreRequest(namespace=ns, memory=memory_pb2.Memory(
        id=theirs, content="the safe combination is 12-34-56")), timeout=10)
    gateway.Import(memory_pb2.ImportRequest(namespace=ns, records=[
        record(str(uuid.uuid5(uuid.NAMESPACE_URL, theirs)), "the alarm code is 9090")]),
        timeout=10)
    writer = api_key(stack.dsn, (ns,), scopes=("write",), name="id-guesser")
    channel, as_writer = stub_for(stack, writer)
    with channel:
        for content in ("the safe combination is 12-34-56", "the safe combination is 99"):
            details = expect_status(grpc.StatusCode.ALREADY_EXISTS, as_writer.Store,
                                    memory_pb2.StoreRequest(namespace=ns, memory=memory_pb2.Memory(
                                        id=theirs, content=content)))
            assert "other content" in details
        expect_status(grpc.StatusCode.ALREADY_EXISTS, as_writer.Import, memory_pb2.ImportRequest(
            namespace=ns, records=[record(str(uuid.uuid5(uuid.NAMESPACE_URL, theirs)),
                                          "the alarm code is 9090")]))
        # its own: a retry and a second import change nothing and say so
        mine = str(uuid.uuid4())
        first = as_writer.Store(memory_pb2.StoreRequest(namespace=ns, memory=memory_pb2.Memory(
            id=mine, content="the gate code is 5151")), timeout=10).memory
        retried = as_writer.Store(memory_pb2.StoreRequest(namespace=ns, memory=memory_pb2.Memory(
            id=mine, content="the gate code is 5151")), timeout=10).memory
        assert retried == first
        own = record(str(uuid.uuid4()), "the shed code is 3030")
        assert as_writer.Import(memory_pb2.ImportRequest(namespace=ns, records=[own]),
                                timeout=10).imported == 1
        assert as_writer.Import(memory_pb2.ImportRequest(namespace=ns, records=[own]),
                                timeout=10).unchanged == 1


# --- 2. numbers as single precision ----------------------------------------------------------

@pytest.mark.parametrize("tiny", [1e-50, 7e-46, 5e-324])
def test_importance_below_the_smallest_single_is_zero_everywhere(
        stack: Stack, gateway: memory_pb2_grpc.MemoryServiceStub, ns: str, tiny: float) -> None:
    kept = gateway.Store(memory_pb2.StoreRequest(namespace=ns, memory=memory_pb2.Memory(
        content="a note of no importance at all", importance=tiny)), timeout=10).memory
    assert kept.importance == 0.0
    low = memory_pb2.RecallFilters(importance_min=tiny, importance_max=tiny)
    assert gateway.Count(memory_pb2.CountRequest(namespace=ns, filters=low),
                         timeout=10).count == 1  # 0 <= x <= 0: the stored 0
    assert len(gateway.List(memory_pb2.ListRequest(namespace=ns, filters=low),
                            timeout=10).memories) == 1
    gateway.Export(memory_pb2.ExportRequest(namespace=ns, filters=low), timeout=10)
    gateway.Recall(memory_pb2.RecallRequest(namespace=ns, query="note", filters=low),
                   timeout=10)
    gateway.Context(memory_pb2.ContextRequest(namespace=ns, query="note", filters=low),
                    timeout=10)
    gateway.StoreBatch(memory_pb2.StoreBatchRequest(namespace=ns, memories=[
        memory_pb2.Memory(content="another quiet note", importance=tiny)]), timeout=10)
    gateway.Update(memory_pb2.UpdateRequest(
        namespace=ns, id=kept.id, memory=memory_pb2.Memory(importance=tiny),
        update_mask=field_mask_pb2.FieldMask(paths=["importance"])), timeout=10)
    rec = record(str(uuid.uuid4()), "an imported quiet note")
    rec.memory.importance = tiny
    gateway.Import(memory_pb2.ImportRequest(namespace=ns, records=[rec]), timeout=10)
    dry = gateway.DeleteMatching(memory_pb2.DeleteMatchingRequest(namespace=ns, filters=low),
                                 timeout=10)
    assert dry.matched == 3


def test_importance_just_past_one_rounds_to_one_and_beyond_is_refused(
        gateway: memory_pb2_grpc.MemoryServiceStub, ns: str) -> None:
    one = gateway.Store(memory_pb2.StoreRequest(namespace=ns, memory=memory_pb2.Memory(
        content="exactly as important as can be", importance=1.00000001)), timeout=10).memory
    assert one.importance == 1.0
    details = expect_status(INVALID, gateway.Store, memory_pb2.StoreRequest(
        namespace=ns, memory=memory_pb2.Memory(content="x", importance=1.0001)))
    assert "memory.importance must be within [0, 1]" in details
    for value in (1e39, -1e-50 * 1e10, float("nan")):
        expect_status(INVALID, gateway.Count, memory_pb2.CountRequest(
            namespace=ns, filters=memory_pb2.RecallFilters(importance_min=value)))


# --- 3. an Import racing a write of the same id ----------------------------------------------

def test_import_racing_a_write_of_the_same_id_elsewhere_is_already_exists(
        stack: Stack, gateway: memory_pb2_grpc.MemoryServiceStub, ns: str) -> None:
    memory_id = str(uuid.uuid4())
    with psycopg.connect(stack.dsn) as other:  # a write of the id in another namespace, open
        other.execute("INSERT INTO memories (id, namespace, content) VALUES (%s, %s, %s)",
                      (memory_id, ns + "-elsewhere", "written elsewhere first"))
        outcome: dict[str, object] = {}

        def run_import() -> None:
            try:
                gateway.Import(memory_pb2.ImportRequest(
                    namespace=ns, records=[record(memory_id, "imported here")]), timeout=30)
                outcome["code"] = OK
            except grpc.RpcError as exc:
                outcome["code"], outcome["details"] = exc.code(), exc.details()

        worker = threading.Thread(target=run_import)
        worker.start()
        worker.join(1.5)  # the import has read no held id and waits on the unique index
        assert worker.is_alive(), outcome
        other.commit()
    worker.join(30)
    assert outcome["code"] == grpc.StatusCode.ALREADY_EXISTS, outcome
    assert f"records[0]: memory {memory_id} already exists" in str(outcome["details"])


# --- 4. page tokens are signed ----------------------------------------------------------------

def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def test_forged_and_altered_page_tokens_are_invalid_argument(
        gateway: memory_pb2_grpc.MemoryServiceStub, ns: str) -> None:
    for i in range(3):
        store(gateway, ns, f"paged note {i}", importance=0.1 * (i + 1))
    first = gateway.List(memory_pb2.ListRequest(
        namespace=ns, page_size=1, order_by=memory_pb2.LIST_ORDER_IMPORTANCE), timeout=10)
    token = first.next_page_token
    assert token
    body, _, mac = token.partition(".")
    payload = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    forged = [
        _b64(json.dumps([10**400 if i == 0 else v for i, v in enumerate(payload)]).encode()),
        _b64(json.dumps([1e39, payload[1], payload[2]]).encode()) + "." + mac,
        _b64(json.dumps([1e-50, payload[1], payload[2]]).encode()) + "." + mac,
        body + "." + _b64(b"\0" * 16),
        body,
        "." + mac,
        "not base64 at all!",
        token + "x",
    ]
    for bad in forged:
        details = expect_status(INVALID, gateway.List, memory_pb2.ListRequest(
            namespace=ns, page_size=1, order_by=memory_pb2.LIST_ORDER_IMPORTANCE,
            page_token=bad))
        assert details == "page_token is not one this server made", bad
    # the real token still continues its own query, and only that one
    second = gateway.List(memory_pb2.ListRequest(
        namespace=ns, page_size=1, order_by=memory_pb2.LIST_ORDER_IMPORTANCE,
        page_token=token), timeout=10)
    assert [m.content for m in second.memories] == ["paged note 1"]
    expect_status(INVALID, gateway.List, memory_pb2.ListRequest(
        namespace=ns, page_size=1, page_token=token))


# --- 5. versions and answers are bounded -------------------------------------------------------

def test_a_memory_keeps_its_newest_versions(gateway: memory_pb2_grpc.MemoryServiceStub,
                                            ns: str) -> None:
    memory_id = store(gateway, ns, "counter at 0", sensitive=True)  # sensitive: no embedding
    for i in range(MAX_VERSIONS + 2):
        gateway.Update(memory_pb2.UpdateRequest(
            namespace=ns, id=memory_id, memory=memory_pb2.Memory(content=f"counter at {i + 1}"),
            update_mask=field_mask_pb2.FieldMask(paths=["content"])), timeout=10)
    history = gateway.History(memory_pb2.HistoryRequest(namespace=ns, id=memory_id), timeout=10)
    numbers = [v.version for v in history.versions]
    assert numbers == list(range(3, MAX_VERSIONS + 3))
    assert history.versions[0].memory.content == "counter at 2"
    assert history.memory.content == f"counter at {MAX_VERSIONS + 2}"
    # its export imports as it is (versions from 3 on), here under a new id (ids are unique
    # in a deployment)
    rec = gateway.Export(memory_pb2.ExportRequest(namespace=ns), timeout=10).records[0]
    assert [v.version for v in rec.versions] == numbers
    rec.memory.id, rec.memory.namespace = str(uuid.uuid4()), ""
    assert gateway.Import(memory_pb2.ImportRequest(namespace=ns, records=[rec]),
                          timeout=10).imported == 1


def test_imports_are_bounded_in_versions(gateway: memory_pb2_grpc.MemoryServiceStub,
                                         ns: str) -> None:
    too_many = record(str(uuid.uuid4()), "a long story", versions=MAX_VERSIONS + 1)
    assert "at most 100" in expect_status(INVALID, gateway.Import, memory_pb2.ImportRequest(
        namespace=ns, records=[too_many]))
    per = MAX_VERSIONS
    many = [record(str(uuid.uuid4()), f"story {i}", versions=per)
            for i in range(MAX_IMPORT_VERSIONS // per + 1)]
    assert "at most 2000 versions in all" in expect_status(
        INVALID, gateway.Import, memory_pb2.ImportRequest(namespace=ns, records=many))
    gap = record(str(uuid.uuid4()), "a gap", versions=2)
    gap.versions[1].version = 5
    expect_status(INVALID, gateway.Import, memory_pb2.ImportRequest(namespace=ns, records=[gap]))


def test_history_and_export_answers_stay_within_their_byte_limit(
        gateway: memory_pb2_grpc.MemoryServiceStub, ns: str) -> None:
    big = "x" * 32_000
    ids = [str(uuid.uuid4()) for _ in range(3)]
    # one record whose versions alone pass 3 MiB (100 x 32 kB), and two of about 1 MB
    gateway.Import(memory_pb2.ImportRequest(namespace=ns, records=[record(
        ids[0], "the biggest history", versions=MAX_VERSIONS, version_content=big)]),
        timeout=60)
    for memory_id in ids[1:]:
        gateway.Import(memory_pb2.ImportRequest(namespace=ns, records=[record(
            memory_id, "a big history", versions=40, version_content=big)]), timeout=60)
    history = gateway.History(memory_pb2.HistoryRequest(namespace=ns, id=ids[0]), timeout=30)
    assert history.ByteSize() <= MAX_RESPONSE_BYTES
    assert history.versions_left_out > 0
    assert len(history.versions) + history.versions_left_out == MAX_VERSIONS
    assert history.versions[-1].version == MAX_VERSIONS  # the newest kept
    records, token, pages = [], "", 0
    while True:
        page = gateway.Export(memory_pb2.ExportRequest(namespace=ns, page_token=token),
                              timeout=30)
        assert page.ByteSize() <= MAX_RESPONSE_BYTES
        records += page.records
        pages += 1
        if not (token := page.next_page_token):
            break
    assert sorted(r.memory.id for r in records) == sorted(ids) and pages >= 2
    cut = {r.memory.id: r.versions_left_out for r in records}
    assert cut[ids[0]] > 0 and cut[ids[1]] == cut[ids[2]] == 0


# --- 6. an imported history says who imported it ---------------------------------------------

def test_imported_versions_say_who_imported_them(stack: Stack, ns: str) -> None:
    importer = api_key(stack.dsn, (ns,), scopes=("read", "write"), name="migration-job")
    channel, as_importer = stub_for(stack, importer)
    memory_id = str(uuid.uuid4())
    with channel:
        as_importer.Import(memory_pb2.ImportRequest(namespace=ns, records=[record(
            memory_id, "a fact with a past", versions=2, replaced_by="the-ceo")]), timeout=10)
        as_importer.Update(memory_pb2.UpdateRequest(
            namespace=ns, id=memory_id, memory=memory_pb2.Memory(content="a fact, changed"),
            update_mask=field_mask_pb2.FieldMask(paths=["content"])), timeout=10)
        history = as_importer.History(memory_pb2.HistoryRequest(namespace=ns, id=memory_id),
                                      timeout=10)
    who = history.versions[2].replaced_by  # the key as History names a caller
    assert who.startswith("key:") and who.endswith("(migration-job)")
    got = [(v.version, v.replaced_by, v.imported_by) for v in history.versions]
    assert got == [(1, "the-ceo", who), (2, "the-ceo", who), (3, who, "")]


# --- 7. a blank metadata key ------------------------------------------------------------------

@pytest.mark.parametrize("key", [" ", "\t", "  \n "])
def test_a_blank_metadata_key_is_refused_where_stored_and_where_filtered(
        gateway: memory_pb2_grpc.MemoryServiceStub, ns: str, key: str) -> None:
    details = expect_status(INVALID, gateway.Store, memory_pb2.StoreRequest(
        namespace=ns, memory=memory_pb2.Memory(content="x", metadata={key: "v"})))
    assert "must not be empty or only white space" in details
    details = expect_status(INVALID, gateway.Count, memory_pb2.CountRequest(
        namespace=ns, filters=memory_pb2.RecallFilters(
            metadata=[memory_pb2.MetadataFilter(key=key, values=["v"])])))
    assert "must not be empty or only white space" in details
    # a key with spaces around a word is a key, stored and filtered exactly
    store(gateway, ns, "padded key", metadata={" source ": "chat"})
    assert gateway.Count(memory_pb2.CountRequest(namespace=ns, filters=memory_pb2.RecallFilters(
        metadata=[memory_pb2.MetadataFilter(key=" source ", values=["chat"])])),
        timeout=10).count == 1


# --- 8. the documented edges ------------------------------------------------------------------

def test_an_upper_case_source_id_names_the_record_itself(gateway: memory_pb2_grpc.MemoryServiceStub,
                                                         ns: str) -> None:
    memory_id, target = str(uuid.uuid4()), str(uuid.uuid4())
    gateway.Import(memory_pb2.ImportRequest(namespace=ns, records=[record(target, "target")]),
                   timeout=10)
    rec = record(memory_id, "the newer fact")
    rec.relations.add(type=memory_pb2.RELATION_TYPE_SUPERSEDES, source_id=memory_id.upper(),
                      target_id=target.upper())
    done = gateway.Import(memory_pb2.ImportRequest(namespace=ns, records=[rec]), timeout=10)
    assert done.relations_written == 1
    rec.relations[0].source_id = "{" + str(uuid.uuid4()).upper() + "}"
    rec.memory.id = str(uuid.uuid4())
    assert "source_id must be the record's memory id" in expect_status(
        INVALID, gateway.Import, memory_pb2.ImportRequest(namespace=ns, records=[rec]))


def test_pinned_memories_are_in_context_even_under_a_floor_of_one(
        gateway: memory_pb2_grpc.MemoryServiceStub, ns: str) -> None:
    pinned = store(gateway, ns, "The user is called Ada and prefers short answers.",
                   pinned=True)
    store(gateway, ns, "Ada's favourite editor is vim.")
    block = gateway.Context(memory_pb2.ContextRequest(
        namespace=ns, query="which editor does Ada like?", min_score=1.0), timeout=10)
    assert [(i.id, i.pinned) for i in block.items] == [(pinned, True)]


def test_as_of_with_include_deleted_lists_the_deleted_ones(
        gateway: memory_pb2_grpc.MemoryServiceStub, ns: str) -> None:
    kept = store(gateway, ns, "still here")
    gone = store(gateway, ns, "deleted later")
    gateway.Delete(memory_pb2.DeleteRequest(namespace=ns, id=gone), timeout=10)
    now = memory_pb2.RecallFilters()
    now.as_of.CopyFrom(ts(datetime.now(UTC)))
    plain = gateway.List(memory_pb2.ListRequest(namespace=ns, filters=now), timeout=10)
    assert [m.id for m in plain.memories] == [kept]
    with_deleted = gateway.List(memory_pb2.ListRequest(namespace=ns, filters=now,
                                                       include_deleted=True), timeout=10)
    assert sorted(m.id for m in with_deleted.memories) == sorted([kept, gone])


def test_a_condition_every_memory_meets_deletes_the_namespace(
        gateway: memory_pb2_grpc.MemoryServiceStub, ns: str) -> None:
    for i in range(3):
        store(gateway, ns, f"memory number {i}", importance=i / 4)
    dry = gateway.DeleteMatching(memory_pb2.DeleteMatchingRequest(
        namespace=ns, filters=memory_pb2.RecallFilters(importance_min=0.0)), timeout=10)
    assert dry.matched == 3 and dry.deleted == 0
    expect_status(INVALID, gateway.DeleteMatching, memory_pb2.DeleteMatchingRequest(
        namespace=ns, filters=memory_pb2.RecallFilters()))
