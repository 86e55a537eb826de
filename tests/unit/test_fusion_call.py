"""Where a recall's fusions run (docs/decisions/0016-where-fusion-runs.md): one place decides
(gateway/fusion_call.py), every fusion of a recall goes to the fusion service when one is
configured, in-process only without one or as the fallback, the recency order pools its
candidates in-process, the fusion settings are built once per recall, and the recall's
`fusion` says where its ranking ran."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import pytest
from prometheus_client import REGISTRY

from recallmesh.gateway.fanout import LegError
from recallmesh.gateway.recall import Recaller
from recallmesh.gateway.settings import GatewaySettings, LegTarget
from recallmesh.gateway.store import MemoryStore
from recallmesh.policy import FusionSettings, Overrides, RecallPolicy, SortBy
from recallmesh.services.fusion.core import fuse
from recallmesh.wire.fusion import FusedCandidate, LegList
from recallmesh.wire.validation import RecallQuery
from tests.unit.test_recall_core import HydratingStore, ListLeg, mid, query

GATEWAY = Path(__file__).resolve().parents[2] / "recallmesh" / "gateway"


@dataclass
class FusionService:
    """The fusion service as the gateway's client sees it: fuses, or fails as told."""

    fail: bool = False
    calls: list[Sequence[LegList]] = field(default_factory=list)

    async def fuse(self, lists: list[LegList], settings: FusionSettings, timeout_s: float
                   ) -> list[FusedCandidate]:
        self.calls.append(lists)
        if self.fail:
            raise LegError("UNAVAILABLE: fusion service restarting")
        return fuse(lists, settings)


def recaller(service: FusionService | None, second_stage: bool = True
             ) -> tuple[Recaller, ListLeg]:
    graph = ListLeg("graph", [9], seeded_ids=[7, 8])
    settings = GatewaySettings(
        legs=tuple(LegTarget(n, "", False) for n in ("lexical", "vector", "graph")),
        default_budget_ms=800, reserve_ms=20,
        policy=RecallPolicy(leg_depth=10, graph_second_stage=second_stage,
                            graph_second_stage_seeds=2, graph_second_stage_min_ms=1,
                            weights={"lexical": 1.0, "vector": 1.0, "graph": 0.35}))
    legs = [ListLeg("lexical", [1, 2, 3]), ListLeg("vector", [2, 4, 5]), graph]
    return Recaller(cast(MemoryStore, HydratingStore()), legs, settings, fuser=service), graph


async def test_every_fusion_of_a_recall_goes_to_the_fusion_service() -> None:
    service = FusionService()
    r, graph = recaller(service)
    outcome = await r.recall(query(second_stage=True))
    # the graph second stage's seeds, then the final ranking (the graph's second list in it)
    assert [sorted(lst.leg for lst in lists) for lists in service.calls] == [
        ["lexical", "vector"], ["graph", "lexical", "vector"]]
    assert graph.calls[1].seed_memory_ids == (mid(2), mid(1))
    assert outcome.fusion == "rrf (service)"


async def test_without_a_fusion_service_every_fusion_runs_in_process_with_the_same_result() -> None:
    served, _ = recaller(FusionService())
    local, graph = recaller(None)
    there = await served.recall(query(second_stage=True))
    here = await local.recall(query(second_stage=True))
    assert graph.calls[1].seed_memory_ids == (mid(2), mid(1))
    assert here.fusion == "rrf (local)"
    assert [(h.memory.id, h.score) for h in here.hits] == [
        (h.memory.id, h.score) for h in there.hits]


def local_fusions() -> float:
    value = REGISTRY.get_sample_value("recallmesh_recall_fallbacks_total",
                                      {"kind": "local_fusion"})
    return value or 0.0


async def test_a_failing_service_is_asked_once_and_the_recall_says_why_it_fused_here() -> None:
    service = FusionService(fail=True)
    r, graph = recaller(service)
    before = local_fusions()
    outcome = await r.recall(query(second_stage=True))
    assert local_fusions() == before + 1  # one recall fell back, whatever its fusions
    assert len(service.calls) == 1  # the seeds' call failed: the final ranking did not wait
    assert graph.calls[1].seed_memory_ids == (mid(2), mid(1))  # fused here, the same seeds
    assert outcome.fusion.startswith("rrf (local: UNAVAILABLE: fusion service restarting")
    assert "retrying the service in 5 s" in outcome.fusion
    assert not outcome.degraded  # every leg answered; only the place of fusion changed


async def test_the_recency_order_pools_in_process_and_calls_no_service() -> None:
    service = FusionService()
    r, _ = recaller(service, second_stage=False)
    outcome = await r.recall(RecallQuery("ns", "anything", k=10, sort_by="recency",
                                         fusion=Overrides.of(method="rrf")))
    assert service.calls == []
    assert outcome.fusion == "none (recency)"
    assert outcome.hits


async def test_the_fusion_settings_are_built_once_per_recall(
        monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[str] = []
    original = RecallPolicy.fusion_settings

    def counted(self: RecallPolicy, sort_by: SortBy) -> FusionSettings:
        built.append(sort_by)
        return original(self, sort_by)

    monkeypatch.setattr(RecallPolicy, "fusion_settings", counted)
    r, _ = recaller(FusionService())
    await r.recall(query(second_stage=True))
    assert built == ["relevance"]


def test_only_fusion_call_decides_where_a_fusion_runs() -> None:
    """No other gateway module runs the fusion core or calls the fusion service."""
    reach = {"recallmesh.services.fusion.core", "recallmesh.v1.fusion_pb2_grpc"}
    found = set()
    for path in GATEWAY.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module in reach:
                found.add(path.name)
    assert found == {"fusion_call.py"}
