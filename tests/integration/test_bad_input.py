"""Integration: every bad input gets a clear status and writes nothing."""

from __future__ import annotations

import time
import urllib.request
from typing import Any

import grpc
import psycopg
import pytest
from google.protobuf.timestamp_pb2 import Timestamp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recallmesh.stack.supervisor import Stack
from recallmesh.v1 import memory_pb2, memory_pb2_grpc, retriever_pb2, retriever_pb2_grpc
from recallmesh.wire.validation import MAX_CONTENT_BYTES
from tests.helpers import expect_status, row_count, store

pytestmark = pytest.mark.integration
INVALID = grpc.StatusCode.INVALID_ARGUMENT


def mem(**fields: Any) -> memory_pb2.Memory:
    fields.setdefault("content", "a valid memory")
    return memory_pb2.Memory(**fields)


BAD_STORES = {
    "missing namespace": (memory_pb2.StoreRequest(namespace="", memory=mem()), "namespace"),
    "blank namespace": (memory_pb2.StoreRequest(namespace="   ", memory=mem()), "namespace"),
    "no memory": (memory_pb2.StoreRequest(namespace="ns"), "memory"),
    "empty content": (memory_pb2.StoreRequest(namespace="ns", memory=mem(content="")), "content"),
    "whitespace content": (
        memory_pb2.StoreRequest(namespace="ns", memory=mem(content=" \n\t ")), "content"),
    "content too long": (
        memory_pb2.StoreRequest(namespace="ns", memory=mem(content="x" * (MAX_CONTENT_BYTES + 1))),
        "32768 bytes"),
    "NUL in content": (
        memory_pb2.StoreRequest(namespace="ns", memory=mem(content="a\x00b")), "NUL"),
    "importance above 1": (
        memory_pb2.StoreRequest(namespace="ns", memory=mem(importance=1.5)), "importance"),
    "importance below 0": (
        memory_pb2.StoreRequest(namespace="ns", memory=mem(importance=-0.1)), "importance"),
    "importance NaN": (
        memory_pb2.StoreRequest(namespace="ns", memory=mem(importance=float("nan"))), "importance"),
    "foreign namespace in memory": (
        memory_pb2.StoreRequest(namespace="ns", memory=mem(namespace="other")), "namespace"),
    "empty tag": (memory_pb2.StoreRequest(namespace="ns", memory=mem(tags=["ok", " "])), "tags[1]"),
    "validity inverted": (
        memory_pb2.StoreRequest(namespace="ns", memory=mem(
            valid_from=Timestamp(seconds=2000), valid_to=Timestamp(seconds=1000))), "valid_from"),
    "thread too long": (
        memory_pb2.StoreRequest(namespace="ns", memory=mem(thread="t" * 129)),
        "memory.thread must be at most 128 characters"),
    "timestamp out of range": (
        memory_pb2.StoreRequest(namespace="ns", memory=mem(
            created_at=Timestamp(seconds=10**12))), "created_at"),
}


@pytest.mark.parametrize("case", sorted(BAD_STORES))
def test_bad_store_is_rejected_and_writes_nothing(gateway: memory_pb2_grpc.MemoryServiceStub,
                                                  db: psycopg.Connection, case: str) -> None:
    request, mentions = BAD_STORES[case]
    before = row_count(db)
    details = expect_status(INVALID, gateway.Store, request)
    assert mentions in details
    assert "Traceback" not in details
    assert row_count(db) == before


def test_bad_batch_writes_nothing_and_names_the_index(gateway: memory_pb2_grpc.MemoryServiceStub,
                                                      db: psycopg.Connection, ns: str) -> None:
    before = row_count(db)
    memories = [mem(content=f"fine {i}") for i in range(5)] + [mem(importance=7.0)]
    details = expect_status(INVALID, gateway.StoreBatch,
                            memory_pb2.StoreBatchRequest(namespace=ns, memories=memories))
    assert "memories[5]" in details
    expect_status(INVALID, gateway.StoreBatch, memory_pb2.StoreBatchRequest(namespace=ns))
    expect_status(INVALID, gateway.StoreBatch, memory_pb2.StoreBatchRequest(
        namespace=ns, memories=[mem()] * 1001))
    assert row_count(db) == before


BAD_RECALLS: dict[str, tuple[dict[str, Any], str]] = {
    "missing namespace": (dict(namespace="", query="q"), "namespace"),
    "empty query": (dict(query=""), "query"),
    "whitespace query": (dict(query="   "), "query"),
    "query too long": (dict(query="y" * 5000), "query"),
    "k too large": (dict(query="q", k=101), "k"),
    "k negative": (dict(query="q", k=-1), "k"),
    "unknown sort_by": (dict(query="q", sort_by=9), "sort_by"),
    "negative budget": (dict(query="q", budget_ms=-5), "budget_ms"),
    "empty category filter": (
        dict(query="q", filters=memory_pb2.RecallFilters(categories=[""])), "categories[0]"),
    "inverted time range": (
        dict(query="q", filters=memory_pb2.RecallFilters(
            created_after=Timestamp(seconds=2000), created_before=Timestamp(seconds=1000))),
        "created_after"),
    "too many tag filters": (
        dict(query="q", filters=memory_pb2.RecallFilters(tags=[f"t{i}" for i in range(51)])),
        "tags"),
}


@pytest.mark.parametrize("case", sorted(BAD_RECALLS))
def test_bad_recall_is_invalid_argument(gateway: memory_pb2_grpc.MemoryServiceStub,
                                        case: str) -> None:
    fields, mentions = BAD_RECALLS[case]
    fields = {"namespace": "ns", **fields}
    details = expect_status(INVALID, gateway.Recall, memory_pb2.RecallRequest(**fields))
    assert mentions in details


def test_get_and_delete_bad_ids(gateway: memory_pb2_grpc.MemoryServiceStub, db: psycopg.Connection,
                                ns: str) -> None:
    before = row_count(db)
    expect_status(INVALID, gateway.Get, memory_pb2.GetRequest(namespace=ns, id="not-a-uuid"))
    expect_status(INVALID, gateway.Get, memory_pb2.GetRequest(namespace="", id="x"))
    expect_status(INVALID, gateway.Delete, memory_pb2.DeleteRequest(namespace=ns, id="1; DROP"))
    unknown = "00000000-0000-4000-8000-000000000000"
    expect_status(grpc.StatusCode.NOT_FOUND, gateway.Get,
                  memory_pb2.GetRequest(namespace=ns, id=unknown))
    expect_status(grpc.StatusCode.NOT_FOUND, gateway.Delete,
                  memory_pb2.DeleteRequest(namespace=ns, id=unknown))
    assert row_count(db) == before


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(query=st.text(min_size=0, max_size=300))
def test_any_query_text_never_yields_internal(gateway: memory_pb2_grpc.MemoryServiceStub,
                                              query: str) -> None:
    ns = "hypothesis-queries"
    request = memory_pb2.RecallRequest(namespace=ns, query=query)
    try:
        gateway.Recall(request, timeout=10)
    except grpc.RpcError as exc:
        assert exc.code() == INVALID, (query, exc.code(), exc.details())


def test_bad_namespace_characters_are_rejected_by_every_rpc_and_leg(
        gateway: memory_pb2_grpc.MemoryServiceStub, stack: Stack, db: psycopg.Connection) -> None:
    raw = "tenant-\u200b" + "secret" * 10  # a zero-width space hidden in a namespace
    uid = "00000000-0000-4000-8000-000000000000"
    before = row_count(db)
    calls = {
        "Store": (gateway.Store, memory_pb2.StoreRequest(namespace=raw, memory=mem())),
        "StoreBatch": (gateway.StoreBatch,
                       memory_pb2.StoreBatchRequest(namespace=raw, memories=[mem()])),
        "Update": (gateway.Update, memory_pb2.UpdateRequest(
            namespace=raw, id=uid, memory=mem(), update_mask={"paths": ["content"]})),
        "Get": (gateway.Get, memory_pb2.GetRequest(namespace=raw, id=uid)),
        "Delete": (gateway.Delete, memory_pb2.DeleteRequest(namespace=raw, id=uid)),
        "Recall": (gateway.Recall, memory_pb2.RecallRequest(namespace=raw, query="q")),
    }
    channels = [stack.dial(leg) for leg in ("lexical", "vector")]
    try:
        for leg, channel in zip(("lexical", "vector"), channels, strict=True):
            calls[f"{leg} leg Search"] = (
                retriever_pb2_grpc.RetrieverServiceStub(channel).Search,
                retriever_pb2.SearchRequest(namespace=raw, query="q", k=5))
        for name, (call, request) in calls.items():
            details = expect_status(INVALID, call, request)
            assert details == ("namespace must not contain U+200B (format character: zero-width, "
                               "bidi control or similar) at character 8; a namespace holds "
                               "printable characters only"), name
    finally:
        for channel in channels:
            channel.close()
    details = expect_status(INVALID, gateway.Store, memory_pb2.StoreRequest(
        namespace="tenant", memory=mem(namespace="tenant\u202e")))
    assert details.startswith("memory.namespace must not contain U+202E")
    assert row_count(db) == before


def test_namespaces_are_nfc_normalised(gateway: memory_pb2_grpc.MemoryServiceStub, ns: str) -> None:
    composed, decomposed = f"{ns}-caf\u00e9", f"{ns}-cafe\u0301"
    stored = gateway.Store(memory_pb2.StoreRequest(
        namespace=decomposed, memory=mem(content="normalised namespace probe")), timeout=10)
    assert stored.memory.namespace == composed
    got = gateway.Get(memory_pb2.GetRequest(namespace=composed, id=stored.memory.id), timeout=10)
    assert got.memory.content == "normalised namespace probe"
    hits = gateway.Recall(memory_pb2.RecallRequest(
        namespace=composed, query="normalised namespace probe"), timeout=10).hits
    assert [h.memory.id for h in hits] == [stored.memory.id]


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(namespace=st.text(min_size=0, max_size=140))
def test_any_namespace_is_served_or_invalid_argument(gateway: memory_pb2_grpc.MemoryServiceStub,
                                                     namespace: str) -> None:
    request = memory_pb2.RecallRequest(namespace=namespace, query="alpha")
    try:
        gateway.Recall(request, timeout=10)
    except grpc.RpcError as exc:
        assert exc.code() == INVALID, (namespace, exc.code(), exc.details())
        assert exc.details().startswith("namespace ") and exc.details().isascii()


@pytest.fixture(scope="module", autouse=True)
def _hypothesis_corpus(gateway: memory_pb2_grpc.MemoryServiceStub) -> None:
    for text in ["alpha beta gamma", "C++ & Rust <-> tsquery", "emoji 😀 party", "O'Neil's \\"]:
        store(gateway, "hypothesis-queries", text)


MALFORMED = {
    # field 1 (namespace), a string, holding bytes that are not UTF-8
    "invalid UTF-8": ("Store", b"\x0a\x02\xff\xfe"),
    # a length-delimited field that claims more bytes than follow
    "truncated protobuf": ("Recall", b"\x0a\x7fns"),
    # a tag of wire type 7, which does not exist
    "corrupt protobuf": ("Get", b"\x0f\x01\x02\x03"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_request_is_invalid_argument_counted_and_logged_once(stack: Stack,
                                                                         db: psycopg.Connection,
                                                                         case: str) -> None:
    """Without a key even: INVALID_ARGUMENT with a short message (not UNKNOWN with an
    exception's class name), counted in the RPC metrics, one WARNING line and no traceback
    in the gateway's log; nothing written."""
    method, body = MALFORMED[case]
    log_path = stack.log_path("gateway")
    log_before = log_path.read_text(errors="replace")
    before = row_count(db)

    def handled() -> float:
        text = urllib.request.urlopen(f"http://localhost:{stack.metrics['gateway']}/metrics",
                                      timeout=5).read().decode()
        wanted = (f'grpc_method="{method}"', 'grpc_code="INVALID_ARGUMENT"')
        return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                   if line.startswith("grpc_server_handled_total{")
                   and all(w in line for w in wanted))

    counted = handled()
    with grpc.insecure_channel(stack.endpoints["gateway"]) as channel:
        call = channel.unary_unary(f"/recallmesh.v1.MemoryService/{method}")  # raw bytes
        with pytest.raises(grpc.RpcError) as failed:
            call(body, timeout=10)
    assert failed.value.code() == INVALID, (failed.value.code(), failed.value.details())
    assert failed.value.details().startswith(f"malformed request: not a valid {method}Request")
    # an aborted call's status reaches the client before the interceptor's `finally` counts it
    deadline = time.monotonic() + 5
    while handled() == counted and time.monotonic() < deadline:
        time.sleep(0.05)
    assert handled() == counted + 1
    assert row_count(db) == before
    new = log_path.read_text(errors="replace")[len(log_before):]
    assert "Traceback" not in new
    assert [line for line in new.splitlines() if "malformed request" in line][0:1] and sum(
        "malformed request" in line for line in new.splitlines()) == 1
