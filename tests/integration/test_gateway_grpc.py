"""Integration: the real gateway and legs over gRPC on a real Postgres (lexical behaviour)."""

from __future__ import annotations

import urllib.request
from datetime import UTC, datetime
from typing import Any

import grpc
import psycopg
import pytest
from google.protobuf.timestamp_pb2 import Timestamp
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from recallmesh.stack.supervisor import Stack
from recallmesh.v1 import memory_pb2, memory_pb2_grpc
from tests.helpers import expect_status, one_row, recall, recalled_contents, store

pytestmark = pytest.mark.integration


def ts(year: int, month: int = 1, day: int = 1) -> Timestamp:
    t = Timestamp()
    t.FromDatetime(datetime(year, month, day, tzinfo=UTC))
    return t


def test_store_then_recall_round_trip(gateway: memory_pb2_grpc.MemoryServiceStub,
                                      lexical_gateway: memory_pb2_grpc.MemoryServiceStub,
                                      ns: str) -> None:
    gateway = lexical_gateway  # exact leg details below are the lexical baseline's
    memory_id = store(
        gateway, ns, "Prefers Svelte for frontend work", category="preference",
        tags=["frontend"], importance=0.8, metadata={"source": "chat"},
    )
    response = recall(gateway, ns, "svelte frontend", explain=True)
    assert [h.memory.id for h in response.hits] == [memory_id]
    hit = response.hits[0]
    assert hit.memory.category == "preference"
    assert list(hit.memory.tags) == ["frontend"]
    assert hit.memory.importance == pytest.approx(0.8)
    assert dict(hit.memory.metadata) == {"source": "chat"}
    assert hit.memory.namespace == ns
    # (a "ranker" entry follows where the model has a calibration: not this stack's stub)
    assert [(c.leg, c.rank) for c in hit.legs if c.leg != "ranker"] == [("lexical", 1)]
    assert hit.legs[0].score > 0
    assert not response.degraded
    [leg] = response.legs
    assert leg.leg == "lexical" and leg.state == memory_pb2.LEG_STATE_OK
    assert leg.candidates == 1 and leg.latency_ms > 0


def test_explain_off_has_no_leg_contributions(gateway: memory_pb2_grpc.MemoryServiceStub,
                                              ns: str) -> None:
    store(gateway, ns, "Tea with lemon in the afternoon")
    [hit] = recall(gateway, ns, "lemon tea").hits
    assert len(hit.legs) == 0


def test_get_returns_what_was_stored(gateway: memory_pb2_grpc.MemoryServiceStub, ns: str) -> None:
    stored = gateway.Store(
        memory_pb2.StoreRequest(
            namespace=ns,
            memory=memory_pb2.Memory(
                content="The office moves to Porto in May", created_at=ts(2024, 3, 5),
                valid_from=ts(2024, 5, 1), sensitive=True,
            ),
        ),
        timeout=10,
    ).memory
    got = gateway.Get(memory_pb2.GetRequest(namespace=ns, id=stored.id), timeout=10).memory
    assert got == stored
    assert got.created_at.ToDatetime() == datetime(2024, 3, 5)
    assert got.valid_from.ToDatetime() == datetime(2024, 5, 1)
    assert got.sensitive and got.importance == pytest.approx(0.5)  # default importance
    assert not got.HasField("valid_to")


def test_and_match_first_then_or_broaden(lexical_gateway: memory_pb2_grpc.MemoryServiceStub,
                                         ns: str) -> None:
    gateway = lexical_gateway
    both = store(gateway, ns, "Maya likes hiking in the Alps")
    only_hiking = store(gateway, ns, "Hiking boots need new laces")
    unrelated = store(gateway, ns, "The car insurance renews in March")
    # Enough AND hits for k=1: no broadening.
    response = recall(gateway, ns, "hiking Alps", k=1)
    assert [h.memory.id for h in response.hits] == [both]
    # Too few AND hits for k=5: OR-broadened hits follow, after every AND hit.
    response = recall(gateway, ns, "hiking Alps", k=5)
    assert [h.memory.id for h in response.hits] == [both, only_hiking]
    assert unrelated not in [h.memory.id for h in response.hits]


def test_or_broaden_ranks_below_and_even_with_higher_importance(
        lexical_gateway: memory_pb2_grpc.MemoryServiceStub, ns: str) -> None:
    gateway = lexical_gateway
    and_hit = store(gateway, ns, "green tea and jasmine", importance=0.0)
    or_hit = store(gateway, ns, "green paint for the fence", importance=1.0)
    ids = [h.memory.id for h in recall(gateway, ns, "green jasmine").hits]
    assert ids == [and_hit, or_hit]


def test_importance_blend_orders_equal_text_matches(
        lexical_gateway: memory_pb2_grpc.MemoryServiceStub, ns: str) -> None:
    gateway = lexical_gateway
    # Equal text, kept apart by their metadata (the same write would be one memory).
    low = store(gateway, ns, "Quarterly report about budget", importance=0.1, metadata={"n": "1"})
    high = store(gateway, ns, "Quarterly report about budget", importance=0.9,
                 metadata={"n": "2"})
    mid = store(gateway, ns, "Quarterly report about budget", importance=0.5, metadata={"n": "3"})
    ids = [h.memory.id for h in recall(gateway, ns, "quarterly budget report").hits]
    assert ids == [high, mid, low]
    scores = [h.score for h in recall(gateway, ns, "quarterly budget report").hits]
    assert scores == sorted(scores, reverse=True)


def test_importance_mode_lets_importance_beat_text_rank(
        lexical_gateway: memory_pb2_grpc.MemoryServiceStub, ns: str) -> None:
    gateway = lexical_gateway  # the lexical leg's own importance blend
    # Strong text match, low importance vs weak text match, high importance.
    strong = store(gateway, ns, "kayak kayak kayak trip", importance=0.0)
    weak = store(gateway, ns, "a long note that mentions a kayak once among many other words",
                 importance=1.0)
    relevance = [h.memory.id for h in recall(gateway, ns, "kayak").hits]
    by_importance = [h.memory.id for h in recall(
        gateway, ns, "kayak", sort_by=memory_pb2.SORT_BY_IMPORTANCE).hits]
    assert by_importance[0] == weak
    assert set(relevance) == {strong, weak}


def test_recency_orders_by_created_at(gateway: memory_pb2_grpc.MemoryServiceStub, ns: str) -> None:
    old = store(gateway, ns, "dentist appointment booked", created_at=ts(2020))
    new = store(gateway, ns, "dentist appointment moved", created_at=ts(2025))
    mid = store(gateway, ns, "dentist appointment confirmed", created_at=ts(2022))
    ids = [h.memory.id for h in recall(
        gateway, ns, "dentist appointment", sort_by=memory_pb2.SORT_BY_RECENCY).hits]
    assert ids == [new, mid, old]


def test_batch_without_times_keeps_insertion_order_for_recency(
        gateway: memory_pb2_grpc.MemoryServiceStub, ns: str) -> None:
    contents = [f"violin practice log {i}" for i in range(6)]
    gateway.StoreBatch(memory_pb2.StoreBatchRequest(
        namespace=ns, memories=[memory_pb2.Memory(content=c) for c in contents]), timeout=10)
    got = recalled_contents(gateway, ns, "violin practice", sort_by=memory_pb2.SORT_BY_RECENCY)
    assert got == contents[::-1]


def test_filters_restrict_every_hit(gateway: memory_pb2_grpc.MemoryServiceStub, ns: str) -> None:
    store(gateway, ns, "Paris trip planned", category="travel", tags=["france"],
          created_at=ts(2023))
    keep = store(gateway, ns, "Paris trip booked", category="travel", tags=["booked"],
                 created_at=ts(2024, 6))
    store(gateway, ns, "Paris trip budget", category="finance", tags=["booked"],
          created_at=ts(2024, 7))

    def ids(**filters: Any) -> list[str]:
        request = memory_pb2.RecallRequest(namespace=ns, query="Paris trip",
                                           filters=memory_pb2.RecallFilters(**filters))
        return [h.memory.id for h in gateway.Recall(request, timeout=10).hits]

    assert ids(categories=["travel"], tags=["booked"]) == [keep]
    assert ids(created_after=ts(2024), created_before=ts(2024, 7)) == [keep]
    assert len(ids(tags=["booked", "france"])) == 3
    assert ids(categories=["nothing-here"]) == []


def test_namespace_isolation(gateway: memory_pb2_grpc.MemoryServiceStub, ns: str) -> None:
    other = "elsewhere-" + ns[::-1]
    memory_id = store(gateway, ns, "secret project codename bluebird")
    assert recall(gateway, other, "bluebird codename").hits == []
    details = expect_status(grpc.StatusCode.NOT_FOUND, gateway.Get,
                            memory_pb2.GetRequest(namespace=other, id=memory_id))
    # Never reveal that the id exists elsewhere: same answer as for an unknown id.
    assert ns not in details
    assert details == f"memory {memory_id} not found in namespace {other!r}"
    expect_status(grpc.StatusCode.NOT_FOUND, gateway.Delete,
                  memory_pb2.DeleteRequest(namespace=other, id=memory_id))
    # Still intact in its own namespace.
    assert gateway.Get(memory_pb2.GetRequest(namespace=ns, id=memory_id), timeout=10).memory.id
    assert [h.memory.id for h in recall(gateway, ns, "bluebird").hits] == [memory_id]


def test_soft_delete_hides_from_recall_and_get(gateway: memory_pb2_grpc.MemoryServiceStub, ns: str,
                                               db: psycopg.Connection) -> None:
    keep = store(gateway, ns, "walk the dog at seven")
    gone = store(gateway, ns, "walk the dog at eight")
    response = gateway.Delete(memory_pb2.DeleteRequest(namespace=ns, id=gone), timeout=10)
    assert response.id == gone and response.deleted_at.seconds > 0
    assert [h.memory.id for h in recall(gateway, ns, "walk the dog").hits] == [keep]
    expect_status(grpc.StatusCode.NOT_FOUND, gateway.Get,
                  memory_pb2.GetRequest(namespace=ns, id=gone))
    expect_status(grpc.StatusCode.NOT_FOUND, gateway.Delete,
                  memory_pb2.DeleteRequest(namespace=ns, id=gone))
    # Soft: the row is still there, marked deleted.
    deleted_at = one_row(db.execute("SELECT deleted_at FROM memories WHERE id = %s", (gone,)))[0]
    assert deleted_at is not None


def test_store_batch_is_ordered_and_recallable(gateway: memory_pb2_grpc.MemoryServiceStub,
                                               ns: str) -> None:
    contents = [f"batch memory number {i} about gardening" for i in range(25)]
    response = gateway.StoreBatch(
        memory_pb2.StoreBatchRequest(
            namespace=ns, memories=[memory_pb2.Memory(content=c) for c in contents]),
        timeout=20,
    )
    assert len(response.ids) == 25 and len(set(response.ids)) == 25
    for memory_id, content in zip(response.ids[:3], contents[:3], strict=True):
        got = gateway.Get(memory_pb2.GetRequest(namespace=ns, id=memory_id), timeout=10)
        assert got.memory.content == content
    assert len(recall(gateway, ns, "gardening", k=100).hits) == 25


def test_user_text_that_looks_like_tsquery_syntax(gateway: memory_pb2_grpc.MemoryServiceStub,
                                                  ns: str) -> None:
    store(gateway, ns, "Use C++ & Rust: it's O'Neil's \\ backslash test 😀")
    for query in ["C++ & Rust", "!!!", "a:* | b <-> c", "'O'Neil'", "\\\\", "😀", "x" * 3000,
                  "(((", "&|!<->:*", "Rust"]:
        recall(gateway, ns, query)  # must not raise
    assert recalled_contents(gateway, ns, "O'Neil backslash")


def test_health_and_reflection(channel: grpc.Channel) -> None:
    health = health_pb2_grpc.HealthStub(channel)
    for service in ("", "recallmesh.v1.MemoryService"):
        status = health.Check(health_pb2.HealthCheckRequest(service=service), timeout=5).status
        assert status == health_pb2.HealthCheckResponse.SERVING
    reflection = reflection_pb2_grpc.ServerReflectionStub(channel)
    responses = reflection.ServerReflectionInfo(
        iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=5)
    names = {s.name for r in responses for s in r.list_services_response.service}
    assert {"recallmesh.v1.MemoryService", "grpc.health.v1.Health"} <= names


@pytest.mark.parametrize("name, service", [
    ("lexical", "recallmesh.v1.RetrieverService"),
    ("vector", "recallmesh.v1.RetrieverService"),
    ("embedding", "recallmesh.v1.EmbedderService"),
    ("indexer", ""),
    ("fusion", "recallmesh.v1.FusionService"),
])
def test_every_service_serves_health_and_reflection(stack: Stack, name: str,
                                                    service: str) -> None:
    with stack.dial(name) as ch:
        health = health_pb2_grpc.HealthStub(ch)
        status = health.Check(health_pb2.HealthCheckRequest(service=service), timeout=5)
        assert status.status == health_pb2.HealthCheckResponse.SERVING
        reflection = reflection_pb2_grpc.ServerReflectionStub(ch)
        responses = reflection.ServerReflectionInfo(
            iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=5)
        names = {s.name for r in responses for s in r.list_services_response.service}
        assert "grpc.health.v1.Health" in names and (not service or service in names)


def test_metrics_expose_rpc_histograms(stack: Stack, gateway: memory_pb2_grpc.MemoryServiceStub,
                                       ns: str) -> None:
    gateway.Store(memory_pb2.StoreRequest(  # waits: the indexer has indexed at least this one
        namespace=ns, memory=memory_pb2.Memory(content="metrics probe memory"),
        index_wait=memory_pb2.IndexWait(wait=True)), timeout=40)
    recall(gateway, ns, "metrics probe")
    expect_status(grpc.StatusCode.INVALID_ARGUMENT, gateway.Recall,
                  memory_pb2.RecallRequest(namespace=ns, query=""))
    for service, method in (("gateway", "Recall"), ("lexical", "Search"), ("vector", "Search"),
                            ("embedding", "Embed")):
        url = f"http://localhost:{stack.metrics[service]}/metrics"
        text = urllib.request.urlopen(url, timeout=5).read().decode()
        assert f'grpc_server_handling_seconds_bucket{{grpc_code="OK",grpc_method="{method}"' in text
        assert "grpc_server_handled_total" in text
    gateway_text = urllib.request.urlopen(
        f"http://localhost:{stack.metrics['gateway']}/metrics", timeout=5).read().decode()
    assert 'grpc_code="INVALID_ARGUMENT",grpc_method="Recall"' in gateway_text
    assert 'recallmesh_leg_latency_seconds_bucket{le="0.005",leg="lexical",state="OK"}' in (
        gateway_text)
    assert 'recallmesh_leg_latency_seconds_count{leg="vector",state="OK"}' in gateway_text
    assert 'recallmesh_gateway_query_embedding_seconds_count{state="OK"}' in gateway_text
    assert 'recallmesh_recall_seconds_count{degraded="false"}' in gateway_text
    embedding_text = urllib.request.urlopen(
        f"http://localhost:{stack.metrics['embedding']}/metrics", timeout=5).read().decode()
    assert "recallmesh_embedding_batch_texts_bucket" in embedding_text
    assert 'recallmesh_embedding_request_seconds_count{kind="query"}' in embedding_text
    assert 'recallmesh_embedding_provider_info{model_id="nomic-embed-text-v1.5-onnx-fp32"' in (
        embedding_text)
    indexer_text = urllib.request.urlopen(
        f"http://localhost:{stack.metrics['indexer']}/metrics", timeout=5).read().decode()
    assert 'recallmesh_indexer_jobs_total{outcome="indexed"}' in indexer_text
