"""Integration (issue 39): duplicate writes stored once, superseded facts marked in every
reply, and the relevance floor, through the real gateway on a real Postgres."""

from __future__ import annotations

import uuid

import grpc
import psycopg
import pytest

from recallmesh.client import Client
from recallmesh.stack.supervisor import Stack
from recallmesh.v1 import memory_pb2, memory_pb2_grpc
from tests.helpers import expect_status, recall, row_count

pytestmark = pytest.mark.integration


def batch(gateway: memory_pb2_grpc.MemoryServiceStub, ns: str,
          *memories: memory_pb2.Memory) -> memory_pb2.StoreBatchResponse:
    response: memory_pb2.StoreBatchResponse = gateway.StoreBatch(
        memory_pb2.StoreBatchRequest(namespace=ns, memories=memories), timeout=10)
    return response


def test_a_file_imported_twice_changes_nothing(gateway: memory_pb2_grpc.MemoryServiceStub,
                                               db: psycopg.Connection, ns: str) -> None:
    lines = [memory_pb2.Memory(content=f"Fact number {i} about the garden.", thread="import",
                               metadata={"line": str(i)}) for i in range(5)]
    first = batch(gateway, ns, *lines)
    before = row_count(db)
    again = batch(gateway, ns, *[memory_pb2.Memory(content=m.content.upper(), thread=m.thread,
                                                   metadata=m.metadata) for m in lines])
    assert list(again.ids) == list(first.ids) and all(again.existing)
    assert not any(first.existing) and row_count(db) == before


def test_a_repeat_inside_a_batch_is_stored_once(gateway: memory_pb2_grpc.MemoryServiceStub,
                                                ns: str) -> None:
    thanks = memory_pb2.Memory(content="Thanks!", thread="chat-1")
    reply = batch(gateway, ns, thanks, memory_pb2.Memory(content="Thanks!", thread="chat-2"),
                  memory_pb2.Memory(content="thanks! ", thread="chat-1"))
    assert reply.ids[0] == reply.ids[2] != reply.ids[1]  # other thread: another memory
    assert list(reply.existing) == [False, False, True]


def test_a_retry_with_the_clients_id_is_a_retry_not_a_duplicate(
        gateway: memory_pb2_grpc.MemoryServiceStub, ns: str) -> None:
    request = memory_pb2.StoreRequest(namespace=ns, memory=memory_pb2.Memory(
        id=str(uuid.uuid4()), content="The boiler was serviced in October."))
    first, retry = gateway.Store(request, timeout=10), gateway.Store(request, timeout=10)
    assert first.memory == retry.memory and not retry.existing


def test_a_restated_ended_fact_is_stored_again(gateway: memory_pb2_grpc.MemoryServiceStub,
                                               ns: str) -> None:
    old = gateway.Store(memory_pb2.StoreRequest(namespace=ns, memory=memory_pb2.Memory(
        content="Lives in Munich.")), timeout=10).memory.id
    gateway.Store(memory_pb2.StoreRequest(namespace=ns, memory=memory_pb2.Memory(
        content="Moved to Hamburg.", relations=[memory_pb2.MemoryRelation(
            type=memory_pb2.RELATION_TYPE_SUPERSEDES, target_id=old)])), timeout=10)
    back = gateway.Store(memory_pb2.StoreRequest(namespace=ns, memory=memory_pb2.Memory(
        content="Lives in Munich.")), timeout=10)
    assert back.memory.id != old and not back.existing  # the old one ended: this is news


def test_a_superseded_memory_names_its_replacement_everywhere(
        gateway: memory_pb2_grpc.MemoryServiceStub, stack: Stack, ns: str) -> None:
    old = gateway.Store(memory_pb2.StoreRequest(namespace=ns, memory=memory_pb2.Memory(
        content="The team's CI runs on Jenkins.")), timeout=10).memory.id
    new = gateway.Store(memory_pb2.StoreRequest(namespace=ns, memory=memory_pb2.Memory(
        content="The team's CI moved from Jenkins to GitHub Actions.",
        relations=[memory_pb2.MemoryRelation(type=memory_pb2.RELATION_TYPE_SUPERSEDES,
                                             target_id=old)])), timeout=10).memory.id
    got = gateway.Get(memory_pb2.GetRequest(namespace=ns, id=old), timeout=10).memory
    assert got.superseded_by == new and got.HasField("valid_to")
    current = gateway.Get(memory_pb2.GetRequest(namespace=ns, id=new), timeout=10).memory
    assert current.superseded_by == "" and not current.HasField("valid_to")
    hits = recall(gateway, ns, "Jenkins CI", fusion=memory_pb2.FusionOverrides(
        min_score=0.0)).hits
    assert [(h.memory.id, h.memory.superseded_by) for h in hits] == [(new, ""), (old, new)]
    with Client(stack.endpoints["gateway"], namespace=ns, api_key=stack.api_key,
                tls=False) as client:
        assert client.get(old).superseded_by == new
        assert [h.memory.superseded_by for h in client.recall("Jenkins CI", min_score=0.0)
                .hits] == ["", new]


def test_scores_are_probabilities_and_the_floor_leaves_out_what_is_below(
        gateway: memory_pb2_grpc.MemoryServiceStub, ns: str) -> None:
    """Recall answers nothing when its best hit is below the floor; Context leaves out each
    hit below it."""
    batch(gateway, ns, memory_pb2.Memory(content="Maya's cat is called Pixel."),
          memory_pb2.Memory(content="Maya prefers Svelte over React."))
    everything = recall(gateway, ns, "what is the name of Maya's cat?",
                        fusion=memory_pb2.FusionOverrides(min_score=0.0)).hits
    assert everything and all(0.0 <= h.score <= 1.0 for h in everything)
    assert everything[0].memory.content == "Maya's cat is called Pixel."
    cut = everything[0].score + 1e-6
    assert recall(gateway, ns, "what is the name of Maya's cat?",
                  fusion=memory_pb2.FusionOverrides(min_score=cut)).hits == []
    context = gateway.Context(memory_pb2.ContextRequest(
        namespace=ns, query="what is the name of Maya's cat?", min_score=cut), timeout=10)
    assert context.text == "" and not context.items
    kept = gateway.Context(memory_pb2.ContextRequest(
        namespace=ns, query="what is the name of Maya's cat?", min_score=0.0), timeout=10)
    assert "Pixel" in kept.text
    # A floor between the best hit and the next: Recall answers (its whole ranking: the floor
    # decides whether anything fits), Context keeps only what clears it.
    assert len(everything) == 2 and everything[1].score < everything[0].score
    between = (everything[0].score + everything[1].score) / 2
    answered = recall(gateway, ns, "what is the name of Maya's cat?",
                      fusion=memory_pb2.FusionOverrides(min_score=between)).hits
    assert [h.memory.id for h in answered] == [h.memory.id for h in everything]
    block = gateway.Context(memory_pb2.ContextRequest(
        namespace=ns, query="what is the name of Maya's cat?", min_score=between), timeout=10)
    assert [i.id for i in block.items] == [everything[0].memory.id]


@pytest.mark.parametrize("value", [1.5, -0.1, float("nan")])
def test_a_floor_outside_zero_to_one_is_invalid_argument(gateway: memory_pb2_grpc.MemoryServiceStub,
                                                         ns: str, value: float) -> None:
    detail = expect_status(grpc.StatusCode.INVALID_ARGUMENT, gateway.Recall,
                           memory_pb2.RecallRequest(namespace=ns, query="x",
                                                    fusion=memory_pb2.FusionOverrides(
                                                        min_score=value)))
    assert "min_score" in detail
    detail = expect_status(grpc.StatusCode.INVALID_ARGUMENT, gateway.Context,
                           memory_pb2.ContextRequest(namespace=ns, query="x", min_score=value))
    assert detail.startswith("min_score")
