"""Integration: context expansion through the real gateway and Postgres: the memory stored
next after a top hit joins the results (at their tail, in place of the weakest hit), within
the window, under the request's filters."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import grpc
import pytest
from google.protobuf.timestamp_pb2 import Timestamp

from recallmesh.v1 import memory_pb2
from tests.helpers import expect_status, recall

pytestmark = pytest.mark.integration

T0 = datetime(2025, 3, 1, 18, 0, tzinfo=UTC)
TURNS = [  # (seconds after T0, content, category)
    (0, "Melanie: What have you been researching lately?", "chat"),
    (1, "Caroline: Adoption agencies, I want to build a family of my own.", "aside"),
    (2, "Melanie: That is wonderful news, I am so happy for you!", "chat"),
    (3600, "Caroline: I ran a charity race for mental health on Saturday.", "chat"),
    (7200, "Melanie: Pottery class was fun, I made a bowl.", "notes"),
]
QUERY = "what has Melanie been researching"


def at(seconds: int) -> Timestamp:
    ts = Timestamp()
    ts.FromDatetime(T0 + timedelta(seconds=seconds))
    return ts


@pytest.fixture
def turns(gateway, ns) -> list[str]:
    return list(gateway.StoreBatch(memory_pb2.StoreBatchRequest(
        namespace=ns, memories=[memory_pb2.Memory(content=c, category=cat, created_at=at(s))
                                for s, c, cat in TURNS],
        index_wait=memory_pb2.IndexWait(wait=True, timeout_ms=30000)), timeout=60).ids)


def overrides(**fields) -> memory_pb2.FusionOverrides:
    return memory_pb2.FusionOverrides(**fields)


def test_the_reply_after_a_matched_question_follows_it(gateway, ns, turns):
    without = [h.memory.id for h in recall(gateway, ns, QUERY,
                                           fusion=overrides(context_hits=0)).hits]
    assert without[0] == turns[0]
    # k=2: the second-best hit gives way to the reply (in a namespace this small every
    # memory is a candidate, so a larger k would already hold it).
    assert turns[1] not in without[:2]
    response = recall(gateway, ns, QUERY, k=2, fusion=overrides(context_hits=1), explain=True)
    ids = [h.memory.id for h in response.hits]
    assert ids == [turns[0], turns[1]]
    reply = response.hits[1]
    assert reply.score <= response.hits[0].score
    assert [(c.leg, c.rank, c.reason) for c in reply.legs][0] == (
        "context", 1, "stored next after hit 1")


def test_neighbours_respect_the_window_and_the_filters(gateway, ns, turns):
    # The race's next memory (the pottery note) was stored an hour later: outside the
    # 600 s window, so nothing joins as its context.
    race = recall(gateway, ns, "charity race for mental health", explain=True,
                  fusion=overrides(context_hits=1))
    assert race.hits[0].memory.id == turns[3]
    assert not [c for h in race.hits for c in h.legs if c.leg == "context"]
    # Filtered to "chat", the reply (an "aside") cannot join: the next chat turn does.
    chat = recall(gateway, ns, QUERY, k=2, fusion=overrides(context_hits=1),
                  filters=memory_pb2.RecallFilters(categories=["chat"]))
    ids = [h.memory.id for h in chat.hits]
    assert ids == [turns[0], turns[2]]


def test_out_of_range_context_hits_is_invalid(gateway, ns):
    detail = expect_status(grpc.StatusCode.INVALID_ARGUMENT, gateway.Recall,
                           memory_pb2.RecallRequest(namespace=ns, query="x",
                                                    fusion=overrides(context_hits=51)))
    assert "context_hits must be within 0..50" in detail


def test_memories_stored_together_have_no_next(gateway, ns):
    """The rows of one StoreBatch are created milliseconds apart: one write, not a sequence
    (RECALLMESH_CONTEXT_MIN_GAP_MS), so none of them is another's context."""
    ids = list(gateway.StoreBatch(memory_pb2.StoreBatchRequest(namespace=ns, memories=[
        memory_pb2.Memory(content=c) for c in (
            "The kiln needs a new thermocouple", "Glaze recipes are in the blue binder",
            "Invoices go out on Fridays")],
        index_wait=memory_pb2.IndexWait(wait=True, timeout_ms=30000)), timeout=60).ids)
    response = recall(gateway, ns, "kiln thermocouple", explain=True,
                      fusion=overrides(context_hits=2))
    assert response.hits[0].memory.id == ids[0]
    assert not [c for h in response.hits for c in h.legs if c.leg == "context"]
