"""Integration: fusion through the real gateway and fusion service (every fusion of a recall
there, the recency order's pool in the gateway: docs/decisions/0016-where-fusion-runs.md),
per-request overrides, and the fallbacks when the fusion service or the vector leg is down."""

from __future__ import annotations

import time
import urllib.request

import grpc
import pytest

from recallmesh.policy import RecallPolicy
from recallmesh.stack.supervisor import Stack
from recallmesh.v1 import memory_pb2, memory_pb2_grpc
from tests.helpers import expect_status, recall
from tests.integration.test_degraded import lexical_ranking

pytestmark = pytest.mark.integration
DEFAULT_FUSION_METHOD = RecallPolicy().method  # the built-in default

WAIT = memory_pb2.IndexWait(wait=True, timeout_ms=30000)

# One memory holds every query term but is mostly about other things (the dense
# leg ranks it below the two short staging-password notes, which lack "hunter2").
EXACT_CASE = [
    "Reminder list: buy milk, call the plumber about the leaking kitchen sink, renew the car "
    "insurance, staging password is hunter2, book the dentist",
    "Staging environment credentials are documented in the team wiki",
    "The production password policy requires sixteen characters",
    "Maya rotates staging secrets every quarter",
    "The plumber comes on Tuesday",
    "The staging server password was reset yesterday",
]
EXACT_QUERY = "staging password hunter2"


def store_all(gateway: memory_pb2_grpc.MemoryServiceStub, ns: str,
              contents: list[str]) -> list[str]:
    response: memory_pb2.StoreBatchResponse = gateway.StoreBatch(memory_pb2.StoreBatchRequest(
        namespace=ns, memories=[memory_pb2.Memory(content=c) for c in contents],
        index_wait=WAIT), timeout=60)
    assert response.indexed
    return list(response.ids)


def hit_ids(response: memory_pb2.RecallResponse) -> list[str]:
    return [h.memory.id for h in response.hits]


def test_exact_match_bonus_keeps_the_exact_hit_first(gateway: memory_pb2_grpc.MemoryServiceStub,
                                                     ns: str) -> None:
    exact, *_ = store_all(gateway, ns, EXACT_CASE)
    with_bonus = recall(gateway, ns, EXACT_QUERY, explain=True)
    assert with_bonus.hits[0].memory.id == exact
    assert {c.leg: c.rank for c in with_bonus.hits[0].legs}["vector"] > 1  # not the dense top
    without = recall(gateway, ns, EXACT_QUERY, explain=True,
                     fusion=memory_pb2.FusionOverrides(exact_bonus=0.0))
    # the ranker's scores (explain's "ranker"); a hit's score is its relevance estimate
    scores = {h.memory.id: next(c.score for c in h.legs if c.leg == "ranker")
              for h in without.hits}
    # Without the bonus the exact hit is at best level with the dense favourite (plain RRF,
    # lexical 1 + vector >= 2 vs lexical >= 2 + vector 1); the bonus lifts it clear.
    assert scores[exact] <= max(scores.values())
    ranked = [next(c.score for c in h.legs if c.leg == "ranker") for h in with_bonus.hits]
    assert ranked[0] > scores[exact]
    assert ranked[0] > ranked[1]


def fuse_calls(stack: Stack) -> float:
    """The fusion service's answered Fuse calls so far (its grpc_server_handled_total)."""
    metrics = urllib.request.urlopen(
        f"http://localhost:{stack.metrics['fusion']}/metrics", timeout=5).read().decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in metrics.splitlines()
               if line.startswith("grpc_server_handled_total{") and 'grpc_method="Fuse"' in line
               and 'grpc_code="OK"' in line)


def test_every_fusion_of_a_recall_runs_in_the_service_and_recency_pools_here(
        stack: Stack, gateway: memory_pb2_grpc.MemoryServiceStub,
        graph_gateway: memory_pb2_grpc.MemoryServiceStub, ns: str) -> None:
    store_all(gateway, ns, EXACT_CASE)
    before = fuse_calls(stack)
    ranked = recall(gateway, ns, EXACT_QUERY)
    assert ranked.fusion == f"{DEFAULT_FUSION_METHOD} (service)"
    assert fuse_calls(stack) == before + 1
    newest = gateway.Recall(memory_pb2.RecallRequest(
        namespace=ns, query=EXACT_QUERY, sort_by=memory_pb2.SORT_BY_RECENCY), timeout=30)
    assert newest.fusion == "none (recency)" and newest.hits
    assert fuse_calls(stack) == before + 1  # the recency order ranks nothing: no call
    staged = recall(graph_gateway, ns, EXACT_QUERY,
                    fusion=memory_pb2.FusionOverrides(graph_second_stage=True))
    assert "second stage" in {leg.leg: leg for leg in staged.legs}["graph"].detail
    assert staged.fusion == f"{DEFAULT_FUSION_METHOD} (service)"
    assert fuse_calls(stack) == before + 3  # the second stage's seeds, then the ranking


def test_fusion_service_down_gives_the_same_ranking(stack: Stack,
                                                    gateway: memory_pb2_grpc.MemoryServiceStub,
                                                    ns: str) -> None:
    store_all(gateway, ns, EXACT_CASE)
    up = recall(gateway, ns, EXACT_QUERY, explain=True)
    assert up.fusion == f"{DEFAULT_FUSION_METHOD} (service)"
    stack.stop_service("fusion")
    try:
        down = recall(gateway, ns, EXACT_QUERY, explain=True)
        # The next recalls do not wait on the dead service again (circuit breaker).
        again = recall(gateway, ns, EXACT_QUERY)
    finally:
        stack.start_service("fusion")
    assert down.fusion.startswith(f"{DEFAULT_FUSION_METHOD} (local: fusion service")
    assert [(h.memory.id, h.score) for h in down.hits] == [(h.memory.id, h.score) for h in up.hits]
    assert not down.degraded  # every leg answered; only the place of fusion changed
    assert "retrying the service in 5 s" in again.fusion
    deadline = time.monotonic() + 15  # back to the service once the breaker lets it try
    while recall(gateway, ns, EXACT_QUERY).fusion != f"{DEFAULT_FUSION_METHOD} (service)":
        assert time.monotonic() < deadline, "the gateway never went back to the fusion service"
        time.sleep(0.5)
    metrics = urllib.request.urlopen(
        f"http://localhost:{stack.metrics['gateway']}/metrics", timeout=5).read().decode()
    assert 'recallmesh_recall_fallbacks_total{kind="local_fusion"}' in metrics


def test_dead_vector_leg_falls_back_to_lexical_then_recovers(
        stack: Stack, gateway: memory_pb2_grpc.MemoryServiceStub, ns: str) -> None:
    store_all(gateway, ns, EXACT_CASE)
    stack.stop_service("vector")
    try:
        response = recall(gateway, ns, EXACT_QUERY)
        states = {leg.leg: leg.state for leg in response.legs}
        assert states == {"lexical": memory_pb2.LEG_STATE_OK,
                          "vector": memory_pb2.LEG_STATE_ERROR}
        assert response.degraded
        assert hit_ids(response) == lexical_ranking(stack, ns, EXACT_QUERY, 10)
    finally:
        stack.start_service("vector")
    # The gateway's channel retries a dead peer at most every 500 ms
    # (recallmesh/shared/server.py):
    # once that has passed, the next recall reaches the restarted leg.
    time.sleep(0.6)
    response = recall(gateway, ns, EXACT_QUERY)
    assert not response.degraded and len(response.legs) == 2
    metrics = urllib.request.urlopen(
        f"http://localhost:{stack.metrics['gateway']}/metrics", timeout=5).read().decode()
    assert 'recallmesh_leg_failures_total{leg="vector",state="ERROR"}' in metrics
    assert 'recallmesh_recall_fallbacks_total{kind="lexical_only"}' in metrics
    assert 'recallmesh_recall_seconds_count{degraded="true"}' in metrics


def test_request_overrides_weights_methods_and_skips(stack: Stack,
                                                     gateway: memory_pb2_grpc.MemoryServiceStub,
                                                     ns: str) -> None:
    store_all(gateway, ns, EXACT_CASE)
    lexical_order = lexical_ranking(stack, ns, EXACT_QUERY, 10)
    skipped = recall(gateway, ns, EXACT_QUERY,
                     fusion=memory_pb2.FusionOverrides(skip_legs=["vector"]))
    assert hit_ids(skipped) == lexical_order
    assert not skipped.degraded
    assert {leg.leg: leg.state for leg in skipped.legs}["vector"] == memory_pb2.LEG_STATE_SKIPPED
    zero = recall(gateway, ns, EXACT_QUERY,
                  fusion=memory_pb2.FusionOverrides(weights={"vector": 0.0}))
    assert hit_ids(zero) == lexical_order
    for method in ("cc", "cc_bounded"):
        response = recall(gateway, ns, EXACT_QUERY,
                          fusion=memory_pb2.FusionOverrides(method=method))
        assert response.fusion == f"{method} (service)" and response.hits


@pytest.mark.parametrize("overrides, message", [
    (memory_pb2.FusionOverrides(weights={"graph": 1.0}), "unknown legs: graph"),
    (memory_pb2.FusionOverrides(skip_legs=["nope"]), "unknown legs: nope"),
    (memory_pb2.FusionOverrides(weights={"vector": -0.5}), "must be >= 0"),
    (memory_pb2.FusionOverrides(weights={"vector": float("nan")}), "must be >= 0"),
    (memory_pb2.FusionOverrides(method="borda"), "fusion.method"),
    (memory_pb2.FusionOverrides(rrf_k=5000), "rrf_k"),
    (memory_pb2.FusionOverrides(importance_strength=1.5), "importance_strength"),
    (memory_pb2.FusionOverrides(exact_bonus=-1), "exact_bonus"),
    (memory_pb2.FusionOverrides(skip_legs=["lexical", "vector"]), "at least one leg"),
    (memory_pb2.FusionOverrides(weights={"lexical": 0, "vector": 0}), "every asked leg weight 0"),
])
def test_bad_overrides_are_invalid_argument(gateway: memory_pb2_grpc.MemoryServiceStub, ns: str,
                                            overrides: memory_pb2.FusionOverrides,
                                            message: str) -> None:
    details = expect_status(grpc.StatusCode.INVALID_ARGUMENT, gateway.Recall,
                            memory_pb2.RecallRequest(namespace=ns, query="q", fusion=overrides))
    assert message in details
