"""Integration: context propagation through the real gateway and Postgres: the memories
stored right after / right before a top hit in its thread gain a share of its score, under
the request's filters; explain names where the share came from. Memories without a thread,
or of another one, gain nothing, however close in time they were stored."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import grpc
import pytest
from google.protobuf.timestamp_pb2 import Timestamp

from recallmesh.v1 import memory_pb2, memory_pb2_grpc
from recallmesh.wire.validation import MAX_INDEX_WAIT_MS
from tests.helpers import expect_status, recall

pytestmark = pytest.mark.integration

T0 = datetime(2025, 3, 1, 18, 0, tzinfo=UTC)
TURNS = [  # (seconds after T0, content, category, thread)
    (0, "Melanie: What have you been researching lately?", "chat", "s1"),
    (1, "Caroline: Adoption agencies, I want to build a family of my own.", "aside", "s1"),
    (2, "Melanie: That is wonderful news, I am so happy for you!", "chat", "s1"),
    (3, "Caroline: I ran a charity race for mental health on Saturday.", "chat", "s2"),
    (4, "Melanie: Pottery class was fun, I made a bowl.", "notes", ""),
]
QUERY = "what has Melanie been researching"


def at(seconds: int) -> Timestamp:
    ts = Timestamp()
    ts.FromDatetime(T0 + timedelta(seconds=seconds))
    return ts


@pytest.fixture
def turns(gateway: memory_pb2_grpc.MemoryServiceStub, ns: str) -> list[str]:
    # Context propagation needs two contributing legs: the turns must have their vectors
    # (the session's indexer may still be working through earlier tests' writes).
    response = gateway.StoreBatch(memory_pb2.StoreBatchRequest(
        namespace=ns, memories=[memory_pb2.Memory(content=c, category=cat, created_at=at(s),
                                                  thread=thread)
                                for s, c, cat, thread in TURNS],
        index_wait=memory_pb2.IndexWait(wait=True, timeout_ms=MAX_INDEX_WAIT_MS)), timeout=90)
    assert response.indexed, "the turns were not embedded within the longest index wait"
    return list(response.ids)


def overrides(**fields: Any) -> memory_pb2.FusionOverrides:
    return memory_pb2.FusionOverrides(**fields)


def ranker_score(hit: memory_pb2.RecallHit) -> float:
    score: float = next(c.score for c in hit.legs if c.leg == "ranker")
    return score


def context_entries(response: memory_pb2.RecallResponse) -> dict[str, list[tuple[str, int, str]]]:
    return {h.memory.id: [(c.leg, c.rank, c.reason) for c in h.legs if c.leg.startswith("context")]
            for h in response.hits}


def test_the_reply_after_a_matched_question_gains_from_it(
        gateway: memory_pb2_grpc.MemoryServiceStub, ns: str, turns: list[str]) -> None:
    # The ranker's scores (explain's "ranker"), to which propagation adds (a hit's score is
    # its relevance estimate, computed after propagation).
    without = recall(gateway, ns, QUERY, fusion=overrides(context_hits=0, method="cc"),
                     explain=True)
    assert without.hits[0].memory.id == turns[0]
    plain = {h.memory.id: ranker_score(h) for h in without.hits}
    response = recall(gateway, ns, QUERY, explain=True, fusion=overrides(
        context_hits=1, context_next_weight=0.5, context_prev_weight=0.2, method="cc"))
    entries = context_entries(response)
    assert entries[turns[1]] == [("context_next", 1, "stored next after hit 1")]
    assert not [e for i, e in entries.items() if e and i != turns[1]]  # nothing before hit 1
    reply = next(h for h in response.hits if h.memory.id == turns[1])
    assert ranker_score(reply) == pytest.approx(plain.get(turns[1], 0.0) + 0.5 * plain[turns[0]])
    ids = [h.memory.id for h in response.hits]
    assert ids.index(turns[1]) <= [h.memory.id for h in without.hits].index(turns[1])
    # The question just before a matched answer gains the prev share.
    answer = recall(gateway, ns, "adoption agencies to build a family", explain=True,
                    fusion=overrides(context_hits=1, context_next_weight=0.0,
                                     context_prev_weight=0.2))
    assert answer.hits[0].memory.id == turns[1]
    assert context_entries(answer)[turns[0]] == [("context_prev", 1,
                                                 "stored just before hit 1")]


def test_neighbours_are_along_the_thread_under_the_filters(
        gateway: memory_pb2_grpc.MemoryServiceStub, ns: str, turns: list[str]) -> None:
    # The race's neighbours in time (the happy reply before it, the pottery note after it)
    # belong to another thread and to none: nothing gains from it.
    race = recall(gateway, ns, "charity race for mental health", explain=True,
                  fusion=overrides(context_hits=1, context_prev_weight=0.2))
    assert race.hits[0].memory.id == turns[3]
    assert not any(context_entries(race).values())
    # Filtered to "chat", the reply (an "aside") is skipped: the next chat turn gains.
    chat = recall(gateway, ns, QUERY, explain=True, fusion=overrides(context_hits=1),
                  filters=memory_pb2.RecallFilters(categories=["chat"]))
    entries = context_entries(chat)
    assert turns[1] not in entries
    assert entries[turns[2]] == [("context_next", 1, "stored next after hit 1")]


def test_the_thread_is_stored_returned_and_updated(gateway: memory_pb2_grpc.MemoryServiceStub,
                                                   ns: str, turns: list[str]) -> None:
    got = gateway.Get(memory_pb2.GetRequest(namespace=ns, id=turns[0]), timeout=10)
    assert got.memory.thread == "s1"
    moved = gateway.Update(memory_pb2.UpdateRequest(
        namespace=ns, id=turns[4], memory=memory_pb2.Memory(thread=" s2 "),
        update_mask={"paths": ["thread"]}), timeout=10)
    assert moved.memory.thread == "s2"  # trimmed, like category
    # Now the pottery note is the race's next turn in s2.
    race = recall(gateway, ns, "charity race for mental health", explain=True,
                  fusion=overrides(context_hits=1, context_next_weight=0.5))
    assert race.hits[0].memory.id == turns[3]
    assert context_entries(race)[turns[4]] == [("context_next", 1, "stored next after hit 1")]


def test_out_of_range_context_hits_is_invalid(gateway: memory_pb2_grpc.MemoryServiceStub,
                                              ns: str) -> None:
    detail = expect_status(grpc.StatusCode.INVALID_ARGUMENT, gateway.Recall,
                           memory_pb2.RecallRequest(namespace=ns, query="x",
                                                    fusion=overrides(context_hits=51)))
    assert "context_hits must be within 0..50" in detail
    for field in ("context_next_weight", "context_prev_weight"):
        detail = expect_status(grpc.StatusCode.INVALID_ARGUMENT, gateway.Recall,
                               memory_pb2.RecallRequest(namespace=ns, query="x",
                                                        fusion=overrides(**{field: 1.5})))
        assert f"fusion.{field} must be within [0, 1], got 1.5" in detail


def test_memories_without_a_thread_have_no_neighbours(gateway: memory_pb2_grpc.MemoryServiceStub,
                                                      ns: str) -> None:
    """Stored one after another, but with no thread: none is another's context."""
    ids = list(gateway.StoreBatch(memory_pb2.StoreBatchRequest(namespace=ns, memories=[
        memory_pb2.Memory(content=c, created_at=at(i)) for i, c in enumerate((
            "The kiln needs a new thermocouple", "Glaze recipes are in the blue binder",
            "Invoices go out on Fridays"))],
        index_wait=memory_pb2.IndexWait(wait=True, timeout_ms=30000)), timeout=60).ids)
    response = recall(gateway, ns, "kiln thermocouple", explain=True,
                      fusion=overrides(context_hits=2))
    assert response.hits[0].memory.id == ids[0]
    assert not any(context_entries(response).values())


@pytest.mark.parametrize("sensitive", [False, True])
def test_a_sensitive_memory_is_never_surfaced_as_a_neighbour(
        gateway: memory_pb2_grpc.MemoryServiceStub, ns: str, sensitive: bool) -> None:
    """Sensitive memories are found by the lexical leg only: context propagation does not add
    one that no leg found (the same turns without the flag show the neighbour would come)."""
    ids = list(gateway.StoreBatch(memory_pb2.StoreBatchRequest(namespace=ns, memories=[
        memory_pb2.Memory(content="Melanie: What is the code for the storage unit?",
                          created_at=at(0), thread="s1"),
        memory_pb2.Memory(content="Caroline: 4471, and keep it to yourself.", created_at=at(5),
                          sensitive=sensitive, thread="s1")],
        index_wait=memory_pb2.IndexWait(wait=True, timeout_ms=30000)), timeout=60).ids)
    response = recall(gateway, ns, "storage unit code", explain=True, fusion=overrides(
        context_hits=1, context_next_weight=0.5))
    found = [h.memory.id for h in response.hits]
    assert found[0] == ids[0]
    assert (ids[1] in found) is not sensitive
