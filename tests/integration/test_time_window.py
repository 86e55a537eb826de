"""The half of tests/unit/test_time_window.py that needs a real Postgres and real gRPC."""

from __future__ import annotations

from datetime import UTC, datetime

import grpc
import pytest
from google.protobuf.timestamp_pb2 import Timestamp

from recallmesh.gateway.time_window import TIME_WINDOW_LEG
from recallmesh.v1 import memory_pb2, memory_pb2_grpc
from tests.helpers import expect_status, recall
from tests.unit.test_time_window import SATURDAY, day, stamp

MEMORIES = [  # (created, content)
    (day("2025-02-01T18:00"), "I went to the concert with Ben, the concert was loud"),
    (SATURDAY, "Anna came along to the show with me and the music was great"),
    (day("2025-01-10T09:00"), "Concert tickets are expensive this year"),
    (day("2025-01-11T09:00"), "The garden needs water every morning"),
    (day("2025-01-12T09:00"), "Pottery class was fun, I made a bowl"),
]


QUESTION = "Who did I go to the concert with last Saturday?"


ASKED = day("2025-03-05T12:00")  # a Wednesday


@pytest.fixture
def concerts(gateway: memory_pb2_grpc.MemoryServiceStub, ns: str) -> list[str]:
    return list(gateway.StoreBatch(memory_pb2.StoreBatchRequest(
        namespace=ns, memories=[memory_pb2.Memory(content=c, created_at=stamp(t))
                                for t, c in MEMORIES],
        index_wait=memory_pb2.IndexWait(wait=True, timeout_ms=30000)), timeout=60).ids)


@pytest.mark.integration
def test_a_memory_from_the_named_day_is_raised_and_explained(
        gateway: memory_pb2_grpc.MemoryServiceStub, ns: str, concerts: list[str]) -> None:
    # The ranker's scores (explain's "ranker"), which the explained boost multiplies (a hit's
    # score is its relevance estimate, computed after the boost).
    plain = recall(gateway, ns, QUESTION, reference_time=stamp(ASKED), explain=True,
                   fusion=memory_pb2.FusionOverrides(time_boost=0.0, method="cc"))
    assert plain.hits[0].memory.id == concerts[0]  # the better wording wins without a window
    assert not plain.HasField("time_window")
    response = recall(gateway, ns, QUESTION, reference_time=stamp(ASKED), explain=True,
                      fusion=memory_pb2.FusionOverrides(time_boost=5.0, method="cc"))
    assert response.hits[0].memory.id == concerts[1]
    window = response.time_window
    assert (window.phrase, window.boosted) == ("last saturday", 1)
    assert window.start.ToDatetime(UTC) < SATURDAY < window.end.ToDatetime(UTC)
    boosted = [c for c in response.hits[0].legs if c.leg == TIME_WINDOW_LEG]
    before = [h.memory.id for h in plain.hits].index(concerts[1]) + 1
    assert [(c.rank, c.reason) for c in boosted] == [
        (before, f"created inside 'last saturday' (fused rank {before} before the boost)")]
    ranker = next(c.score for c in plain.hits[before - 1].legs if c.leg == "ranker")
    assert boosted[0].score == pytest.approx(5.0 * ranker)


@pytest.mark.integration
def test_without_a_reference_time_the_server_clock_is_used(
        gateway: memory_pb2_grpc.MemoryServiceStub, ns: str, concerts: list[str]) -> None:
    # Read against today, "last Saturday" is long after these memories: nothing is raised.
    response = recall(gateway, ns, QUESTION, fusion=memory_pb2.FusionOverrides(time_boost=2.0))
    assert response.time_window.phrase == "last saturday"
    assert response.time_window.boosted == 0
    assert response.time_window.end.ToDatetime(UTC) > datetime(2025, 12, 1, tzinfo=UTC)
    assert response.hits[0].memory.id == concerts[0]
    # One contributing leg keeps its own order (the exact lexical fallback): no window.
    alone = recall(gateway, ns, QUESTION, reference_time=stamp(ASKED),
                   fusion=memory_pb2.FusionOverrides(time_boost=5.0, skip_legs=["vector"]))
    assert not alone.HasField("time_window")
    # sort_by recency bypasses fusion, and with it the window.
    newest = recall(gateway, ns, QUESTION, reference_time=stamp(ASKED),
                    sort_by=memory_pb2.SORT_BY_RECENCY)
    assert not newest.HasField("time_window")


@pytest.mark.integration
def test_bad_time_boost_and_reference_time_are_invalid(gateway: memory_pb2_grpc.MemoryServiceStub,
                                                       ns: str) -> None:
    for value in (-0.5, 10.5, float("nan")):
        detail = expect_status(grpc.StatusCode.INVALID_ARGUMENT, gateway.Recall,
                               memory_pb2.RecallRequest(
                                   namespace=ns, query="x",
                                   fusion=memory_pb2.FusionOverrides(time_boost=value)))
        assert "fusion.time_boost must be within [0, 10]" in detail
    detail = expect_status(grpc.StatusCode.INVALID_ARGUMENT, gateway.Recall,
                           memory_pb2.RecallRequest(namespace=ns, query="x",
                                                    reference_time=Timestamp(seconds=2**40)))
    assert "reference_time is outside the supported range" in detail
