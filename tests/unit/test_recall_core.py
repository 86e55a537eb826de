"""The gateway's Recaller over in-process legs (no gRPC, no database).

The legs here are plain objects with the Leg protocol; the store only hydrates. What is
checked is the gateway's own logic: a failing lexical leg (the partial fallback), and the
graph second stage: which memories seed the second call, that its list replaces the first
one, and that skipping or failing it never degrades the recall.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

import pytest
from prometheus_client import REGISTRY

from recallmesh.gateway.fanout import LegError, LegOutcome
from recallmesh.gateway.recall import Recaller, RecallHit, RecallOutcome
from recallmesh.gateway.settings import GatewaySettings, LegTarget
from recallmesh.gateway.store import MemoryStore
from recallmesh.policy import Overrides, RecallPolicy
from recallmesh.shared.errors import (
    DeadlineExceeded,
    InvalidArgument,
    ResourceExhausted,
    Unavailable,
)
from recallmesh.wire.filters import Filters
from recallmesh.wire.fusion import LegCandidate
from recallmesh.wire.memory_fields import StoredMemory
from recallmesh.wire.retriever import LegAnswer, LegQuery
from recallmesh.wire.validation import RecallQuery

NOW = datetime(2025, 1, 1, tzinfo=UTC)


def mid(i: int) -> str:
    return f"00000000-0000-4000-8000-{i:012d}"


@dataclass
class ListLeg:
    """Answers a fixed list; the graph variant answers another list when seeded."""

    name: str
    ids: list[int]
    seeded_ids: list[int] = field(default_factory=list)
    fail_seeded: bool = False
    delay_s: float = 0.0
    needs_vector: bool = False
    calls: list[LegQuery] = field(default_factory=list)

    async def search(self, query: LegQuery, timeout_s: float) -> LegAnswer:
        self.calls.append(query)
        await asyncio.sleep(self.delay_s)
        if query.seed_memory_ids and self.fail_seeded:
            raise LegError("UNAVAILABLE: graph leg restarting")
        ids = self.seeded_ids if query.seed_memory_ids else self.ids
        return LegAnswer([LegCandidate(mid(i), 1.0 / (n + 1), 0.5) for n, i in enumerate(ids)],
                         reasons={mid(i): "seeded" if query.seed_memory_ids else "query"
                                  for i in ids})


def stored(i: str, ns: str = "ns") -> StoredMemory:
    return StoredMemory(i, ns, f"memory {i[-2:]}", "", (), 0.5, False, NOW, NOW, None, None, {})


@dataclass
class HydratingStore(MemoryStore):  # no pool: the methods below are all a recall reads
    after: dict[str, str] = field(default_factory=dict)  # memory id -> the memory stored next
    before: dict[str, str] = field(default_factory=dict)  # ... -> the one stored just before
    fail_next: bool = False
    next_calls: list[list[str]] = field(default_factory=list)

    async def hydrate(self, ns: str, memory_ids: list[str]) -> dict[str, StoredMemory]:
        return {i: stored(i, ns) for i in memory_ids}

    async def hydrate_adjacent(
        self, ns: str, memory_ids: list[str], seed_ids: list[str], filters: Filters,
    ) -> tuple[dict[str, StoredMemory], dict[str, StoredMemory], dict[str, StoredMemory]]:
        self.next_calls.append(list(seed_ids))
        if self.fail_next:
            raise RuntimeError("connection lost")
        return (await self.hydrate(ns, memory_ids),
                {i: stored(self.after[i], ns) for i in seed_ids if i in self.after},
                {i: stored(self.before[i], ns) for i in seed_ids if i in self.before})


def recaller(graph: ListLeg, *, second_stage: bool = False, min_ms: int = 50,
             budget_ms: int = 800) -> tuple[Recaller, ListLeg, ListLeg]:
    lexical = ListLeg("lexical", [1, 2, 3])
    vector = ListLeg("vector", [2, 4, 5])
    settings = GatewaySettings(
        legs=tuple(LegTarget(n, "", False) for n in ("lexical", "vector", "graph")),
        default_budget_ms=budget_ms, reserve_ms=20,
        policy=RecallPolicy(leg_depth=10, graph_second_stage=second_stage,
                            graph_second_stage_seeds=2, graph_second_stage_min_ms=min_ms,
                            weights={"lexical": 1.0, "vector": 1.0, "graph": 0.35}))
    return Recaller(HydratingStore(), [lexical, vector, graph], settings), lexical, vector


def query(second_stage: bool | None = None, skip_legs: Iterable[str] = (),
          context_hits: int | None = None,
          context_next_weight: float | None = None,
          context_prev_weight: float | None = None) -> RecallQuery:
    return RecallQuery("ns", "anything", k=10,
                       fusion=Overrides.of(method="rrf", graph_second_stage=second_stage,
                                            skip_legs=skip_legs, context_hits=context_hits,
                                            context_next_weight=context_next_weight,
                                            context_prev_weight=context_prev_weight))


def graph_status(outcome: RecallOutcome) -> LegOutcome:
    return next(leg for leg in outcome.legs if leg.leg == "graph")


async def test_second_stage_is_seeded_by_the_best_hits_of_the_other_legs() -> None:
    graph = ListLeg("graph", [9], seeded_ids=[7, 8])
    r, lexical, vector = recaller(graph)
    outcome = await r.recall(query(second_stage=True))
    assert len(graph.calls) == 2 and graph.calls[0].seed_memory_ids == ()
    # memory 2 is on both other lists, then memory 1 (lexical's first): the two best fused
    assert graph.calls[1].seed_memory_ids == (mid(2), mid(1))
    assert len(lexical.calls) == len(vector.calls) == 1  # only the graph leg is asked again
    ids = {h.memory.id for h in outcome.hits}
    assert {mid(7), mid(8)} <= ids and mid(9) not in ids  # the second list replaced the first
    status = graph_status(outcome)
    assert status.state == "OK" and "second stage" in status.detail
    assert not outcome.degraded


async def test_second_stage_is_off_unless_asked_and_follows_the_server_default() -> None:
    graph = ListLeg("graph", [9], seeded_ids=[7])
    r, _, _ = recaller(graph)
    await r.recall(query())
    assert len(graph.calls) == 1
    on, _, _ = recaller(graph, second_stage=True)
    await on.recall(query())
    assert len(graph.calls) == 3
    await on.recall(query(second_stage=False))  # a request may turn the server's default off
    assert len(graph.calls) == 4


async def test_failed_second_stage_fuses_the_first_list_without_degrading() -> None:
    graph = ListLeg("graph", [9], seeded_ids=[7], fail_seeded=True)
    r, _, _ = recaller(graph)
    outcome = await r.recall(query(second_stage=True))
    ids = {h.memory.id for h in outcome.hits}
    assert mid(9) in ids and mid(7) not in ids
    status = graph_status(outcome)
    assert status.state == "OK" and "second stage ERROR" in status.detail
    assert not outcome.degraded


async def test_second_stage_is_skipped_when_the_budget_is_spent() -> None:
    graph = ListLeg("graph", [9], seeded_ids=[7], delay_s=0.06)
    r, _, _ = recaller(graph, min_ms=50, budget_ms=120)  # 120 - 60 - 20 reserve < 50 left
    outcome = await r.recall(query(second_stage=True))
    assert len(graph.calls) == 1
    assert "second stage skipped" in graph_status(outcome).detail
    assert not outcome.degraded


async def test_second_stage_is_skipped_without_other_hits_and_after_a_failed_first_call() -> None:
    graph = ListLeg("graph", [9], seeded_ids=[7])
    r, lexical, vector = recaller(graph)
    lexical.ids, vector.ids = [], []
    outcome = await r.recall(query(second_stage=True))
    assert len(graph.calls) == 1 and "no other leg had a hit" in graph_status(outcome).detail
    failing = replace(graph, fail_seeded=False, calls=[])

    async def broken(q: LegQuery, timeout_s: float) -> LegAnswer:
        failing.calls.append(q)
        raise LegError("UNAVAILABLE: down")

    failing.search = broken  # type: ignore[method-assign, assignment]  # a leg made to fail
    r, _, _ = recaller(failing)
    outcome = await r.recall(query(second_stage=True))
    assert len(failing.calls) == 1 and outcome.degraded  # the first call's failure counts


async def test_second_stage_needs_an_asked_graph_leg() -> None:
    r, _, _ = recaller(ListLeg("graph", [9]))
    with pytest.raises(InvalidArgument, match="graph_second_stage needs the graph leg"):
        r.policy_for(query(second_stage=True, skip_legs=("graph",)))


async def test_lexical_leg_failing_is_a_partial_fallback_on_the_other_legs() -> None:
    graph = ListLeg("graph", [9])
    r, lexical, _ = recaller(graph)

    async def broken(q: LegQuery, timeout_s: float) -> LegAnswer:
        raise LegError("UNAVAILABLE: lexical leg down")

    lexical.search = broken  # type: ignore[method-assign, assignment]  # a leg made to fail
    before = REGISTRY.get_sample_value("recallmesh_recall_fallbacks_total",
                                       {"kind": "partial"}) or 0.0
    outcome = await r.recall(query())
    states = {leg.leg: leg.state for leg in outcome.legs}
    assert states == {"lexical": "ERROR", "vector": "OK", "graph": "OK"}
    assert outcome.degraded and "lexical leg down" in outcome.legs[0].detail
    assert {h.memory.id for h in outcome.hits} == {mid(2), mid(4), mid(5), mid(9)}
    assert REGISTRY.get_sample_value("recallmesh_recall_fallbacks_total",
                                     {"kind": "partial"}) == before + 1


async def test_legs_that_all_refuse_the_request_make_it_invalid_not_unavailable() -> None:
    """A value every leg refuses is the request's fault: INVALID_ARGUMENT, not a retryable
    UNAVAILABLE (issue 54). One leg down among refusals stays UNAVAILABLE."""
    r, lexical, vector = recaller(ListLeg("graph", [9]))

    async def refuses(q: LegQuery, timeout_s: float) -> LegAnswer:
        raise LegError("INVALID_ARGUMENT")

    for leg in (lexical, vector, r.legs[2]):
        leg.search = refuses  # type: ignore[method-assign, assignment]  # a leg made to fail
    with pytest.raises(InvalidArgument, match="no retrieval leg could read the request"):
        await r.recall(query())

    async def down(q: LegQuery, timeout_s: float) -> LegAnswer:
        raise LegError("UNAVAILABLE")

    vector.search = down  # type: ignore[method-assign, assignment]  # a leg made to fail
    with pytest.raises(Unavailable):
        await r.recall(query())


def context_recaller(after: dict[str, str] | None = None,
                     before: dict[str, str] | None = None) -> tuple[Recaller, HydratingStore]:
    r, _, _ = recaller(ListLeg("graph", [9]))
    store = HydratingStore(after=after or {}, before=before or {})
    r.store = store
    return r, store


def legs_of(hit: RecallHit) -> list[tuple[str, int]]:
    return [(c.leg, c.rank) for c in hit.fused.contributions]


# Fused (rrf, graph weighted 0.35): 2 (lexical and vector), 1, 4, 3, 5, 9.
async def test_context_propagation_raises_the_neighbours_of_the_best_hits() -> None:
    r, store = context_recaller(after={mid(2): mid(40), mid(1): mid(41), mid(4): mid(42)})
    plain = await r.recall(query(context_hits=0))
    assert [h.memory.id for h in plain.hits] == [mid(i) for i in (2, 1, 4, 3, 5, 9)]
    score = {h.memory.id: h.score for h in plain.hits}
    outcome = await r.recall(query(context_hits=2, context_next_weight=0.6,
                                   context_prev_weight=0.0))
    assert store.next_calls == [[mid(2), mid(1)]]  # the best two hits only
    ids = [h.memory.id for h in outcome.hits]
    # 40 gains 0.6 x hit 1's score (above hit 2's own); 41, 0.6 x hit 2's (below 5's)
    assert ids == [mid(i) for i in (2, 40, 1, 4, 3, 5, 41, 9)] and mid(42) not in ids
    assert outcome.hits[1].score == pytest.approx(0.6 * score[mid(2)])
    assert legs_of(outcome.hits[1]) == [("context_next", 1)]
    assert legs_of(outcome.hits[6]) == [("context_next", 2)]
    assert outcome.hits[1].memory.content == "memory 40"  # hydrated from the lookup
    scores = [h.score for h in outcome.hits]
    assert scores == sorted(scores, reverse=True)
    cut = await r.recall(replace(query(context_hits=2, context_next_weight=0.6), k=3))
    assert [h.memory.id for h in cut.hits] == [mid(2), mid(40), mid(1)]


async def test_context_propagation_adds_to_a_fused_candidate_and_before_the_hit() -> None:
    # 4 (vector's second) is stored next after hit 2, 3 just before hit 1
    r, _ = context_recaller(after={mid(2): mid(4)}, before={mid(1): mid(3)})
    plain = {h.memory.id: h.score for h in (await r.recall(query(context_hits=0))).hits}
    outcome = await r.recall(query(context_hits=2, context_next_weight=0.5,
                                   context_prev_weight=0.2))
    assert [h.memory.id for h in outcome.hits] == [mid(i) for i in (2, 4, 3, 1, 5, 9)]
    four, three = outcome.hits[1], outcome.hits[2]
    assert four.score == pytest.approx(plain[mid(4)] + 0.5 * plain[mid(2)])
    assert legs_of(four) == [("vector", 2), ("context_next", 1)]
    assert three.score == pytest.approx(plain[mid(3)] + 0.2 * plain[mid(1)])
    assert legs_of(three) == [("lexical", 3), ("context_prev", 2)]
    # weights 0: nothing is looked up
    r2, store2 = context_recaller(after={mid(2): mid(4)})
    none = await r2.recall(query(context_hits=2, context_next_weight=0.0,
                                 context_prev_weight=0.0))
    assert store2.next_calls == [] and [h.memory.id for h in none.hits][1] == mid(1)


async def test_context_propagation_off_by_request_for_importance_order_and_on_failure() -> None:
    r, store = context_recaller(after={mid(2): mid(40)})
    plain = [h.memory.id for h in (await r.recall(query(context_hits=0))).hits]
    assert mid(40) not in plain and store.next_calls == []
    assert mid(40) in [h.memory.id for h in (await r.recall(query())).hits]  # server default
    by_importance = await r.recall(replace(query(), sort_by="importance"))
    assert mid(40) not in {h.memory.id for h in by_importance.hits}
    store.fail_next = True
    failed = await r.recall(query())  # the server default (2) asks; the lookup fails
    assert [h.memory.id for h in failed.hits] == plain and not failed.degraded
    store.fail_next = False
    lexical_only = await r.recall(query(skip_legs=("vector", "graph")))
    assert [h.memory.id for h in lexical_only.hits] == [mid(1), mid(2), mid(3)]  # its own order


def test_the_callers_deadline_ends_the_recall_one_reserve_early() -> None:
    r, _, _ = recaller(ListLeg("graph", []), budget_ms=800)  # reserve 20 ms
    assert r.plan(None, None).answer_s == pytest.approx(0.8)
    assert r.plan(None, 5.0).answer_s == pytest.approx(0.8)  # a far deadline: the budget
    assert r.plan(None, 0.5).answer_s == pytest.approx(0.48)  # a near one: answered before it
    assert r.plan(None, 0.5).legs_s == pytest.approx(0.46)  # legs: one more reserve back
    assert r.plan(200, 5.0).answer_s == pytest.approx(0.2)


@dataclass
class SlowStore(HydratingStore):
    """Hydrates after `delay_s` (a busy or distant database): longer than the reserve."""

    delay_s: float = 0.06

    async def hydrate(self, ns: str, memory_ids: list[str]) -> dict[str, StoredMemory]:
        await asyncio.sleep(self.delay_s)
        return await super().hydrate(ns, memory_ids)


def late_leg_recaller(store: HydratingStore, budget_ms: int = 200) -> tuple[Recaller, ListLeg]:
    """lexical answers at once; vector always outlasts its deadline."""
    lexical = ListLeg("lexical", [1, 2, 3])
    late = ListLeg("vector", [4], delay_s=30.0)
    settings = GatewaySettings(
        legs=(LegTarget("lexical", "", False), LegTarget("vector", "", False)),
        default_budget_ms=budget_ms, reserve_ms=20,
        policy=RecallPolicy(leg_depth=10, context_hits=0,
                            weights={"lexical": 1.0, "vector": 1.0}))
    return Recaller(store, [lexical, late], settings), late


async def test_a_late_leg_costs_its_candidates_not_the_recall() -> None:
    """The reads after the legs take 60 ms, more than the 20 ms reserve and the 25 ms floor:
    the recall is answered from the leg that did answer (degraded), a little past its
    budget, not failed UNAVAILABLE as 'database did not answer'."""
    r, _ = late_leg_recaller(SlowStore(delay_s=0.06))
    started = asyncio.get_running_loop().time()
    outcome = await r.recall(query())
    elapsed = asyncio.get_running_loop().time() - started
    assert [h.memory.id for h in outcome.hits] == [mid(1), mid(2), mid(3)]
    assert outcome.degraded and leg_states(outcome) == {"lexical": "OK",
                                                               "vector": "TIMEOUT"}
    assert 0.2 + 0.04 <= elapsed < 0.2 + 0.2  # the legs had 180 ms, the reads 60 ms more


async def test_the_plan_learns_how_long_the_reads_after_the_legs_take() -> None:
    """Once the 60 ms reads were seen, the legs end that much before the answer is due, and
    the next recall with a late leg is answered within its budget."""
    r, late = late_leg_recaller(SlowStore(delay_s=0.06))
    await r.recall(query())
    planned = r.plan(None, None)
    assert 0.06 <= planned.after_s < 0.09 and planned.legs_s == pytest.approx(
        0.2 - planned.after_s)
    started = asyncio.get_running_loop().time()
    outcome = await r.recall(query())
    elapsed = asyncio.get_running_loop().time() - started
    assert outcome.degraded and outcome.hits
    assert elapsed <= 0.2 + 0.015
    vector = next(o for o in outcome.legs if o.leg == "vector")
    assert vector.latency_ms < 0.2 * 1000 - 55  # cut at the planned leg deadline


async def test_the_legs_keep_at_least_half_the_time_however_slow_the_reads() -> None:
    r, _ = late_leg_recaller(SlowStore(delay_s=0.15))
    await r.recall(query())
    assert r.plan(None, None).legs_s == pytest.approx(0.1)  # of 200 ms


async def test_a_database_that_does_not_answer_is_unavailable() -> None:
    """Only a database that does not answer fails a recall whose legs answered: UNAVAILABLE
    a second (budget.DB_GRACE_S) past the budget, saying so; and when the caller's deadline
    comes first, DEADLINE_EXCEEDED just before it (the reserve), saying that."""
    r, _ = late_leg_recaller(SlowStore(delay_s=30.0), budget_ms=50)
    started = asyncio.get_running_loop().time()
    with pytest.raises(Unavailable) as failed:
        await r.recall(query())
    assert "database did not answer" in str(failed.value)
    assert 1.0 <= asyncio.get_running_loop().time() - started < 1.2
    r2, _ = late_leg_recaller(SlowStore(delay_s=30.0))
    started = asyncio.get_running_loop().time()
    with pytest.raises(DeadlineExceeded) as late:
        await r2.recall(query(), client_remaining_s=0.5)
    elapsed = asyncio.get_running_loop().time() - started
    assert "deadline" in str(late.value)
    assert 0.45 <= elapsed < 0.5  # the hard end: 0.5 s - the 20 ms reserve


async def test_a_call_is_refused_as_late_by_what_the_plan_needs() -> None:
    """The least time a call must have left grows with the measured work after the legs."""
    r, _ = late_leg_recaller(SlowStore(delay_s=0.06))
    with pytest.raises(ResourceExhausted):  # 20 + 20 + 25 ms needed
        await r.recall(query(), client_remaining_s=0.06)
    await r.recall(query())  # measures 60 ms after the legs
    with pytest.raises(ResourceExhausted) as refused:  # now 20 + 60 + 25 ms
        await r.recall(query(), client_remaining_s=0.1)
    assert refused.value.reason == "late"


def leg_states(outcome: RecallOutcome) -> dict[str, str]:
    return {o.leg: o.state for o in outcome.legs}


async def test_a_call_arriving_with_too_little_deadline_left_is_refused_as_load() -> None:
    graph = ListLeg("graph", [9])
    r, lexical, _ = recaller(graph)
    with pytest.raises(ResourceExhausted) as refused:  # needs 2 x 20 + 25 ms
        await r.recall(query(), client_remaining_s=0.06)
    assert refused.value.reason == "late" and "60 ms of its deadline left" in str(refused.value)
    assert lexical.calls == []  # refused before any work
    outcome = await r.recall(query(), client_remaining_s=0.07)
    assert outcome.hits and len(lexical.calls) == 1


async def test_the_recall_reports_the_relevance_floor_it_applied() -> None:
    r, _, _ = recaller(ListLeg("graph", [9]))
    # rrf without a calibrated model: its scores are no estimates and no floor applies
    assert r.calibration is None
    assert (await r.recall(query())).relevance_floor == 0.0
    for sort_by in ("relevance", "recency"):
        asked = RecallQuery("ns", "anything", k=10, sort_by=sort_by,
                            fusion=Overrides.of(method="calibrated", min_score=0.3))
        assert (await r.recall(asked)).relevance_floor == 0.3
    deployment = RecallQuery("ns", "anything", fusion=Overrides.of(method="calibrated"))
    assert (await r.recall(deployment)).relevance_floor == r.settings.policy.min_score > 0
    none = RecallQuery("ns", "anything", fusion=Overrides.of(method="calibrated", min_score=0))
    assert (await r.recall(none)).relevance_floor == 0.0
