"""The recall path, in order: the request's policy (recallmesh/policy.py: request > intent
route > deployment), fan-out to every leg under the budget (fanout.py), fusion where
fusion_call.py decides (docs/decisions/0016-where-fusion-runs.md; the fusion settings built once
per recall), the refinements after fusion (stages.py: time window,
context propagation), hydration (hydration.py), then superseded memories after current ones
(stages.current_first). Metrics in metrics.py.

The time plan is budget.py's: the legs end early enough for the work after them (fusion,
time window, hydration, context), as long as that work has recently taken here (its 99th
percentile, at least the reserve), and the caller's own deadline shortens it all. A leg that
fails or misses its deadline is reported (TIMEOUT / ERROR) and the response is `degraded`;
the answer is built from the legs that did arrive. Nothing arrived at all is UNAVAILABLE,
naming the failed legs.

Time windows (time_window.py): when the query names a time relative to the request's
reference time ("last Saturday", "two weeks ago"), the fused candidates created inside it are
raised (score x (1 + time_boost)) before hydration and context propagation. One extra indexed
read of their created_at, only for such queries; when it fails the candidates keep their
fused order.

Query-intent routing (query_intent.py): when a rule reads an intent in the query ("any
tips?": advice), its route sets the lexical weight, context and time boost that the request
leaves unset; the response names the intent.

The database reads after fusion (time window, hydration) run to the plan's hard end: past the
budget when they must (a late leg or a busy moment costs latency, not the answer), but never
past the caller's deadline less the reserve, nor more than budget.DB_GRACE_S past the budget.
Reads not done by then mean the database is not answering: UNAVAILABLE (retry).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Collection, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from opentelemetry import trace

from recallmesh.embedding_models.calibration import ScoreCalibration, calibration_for
from recallmesh.gateway import budget, secrets, stages
from recallmesh.gateway.fanout import (
    EmbedDocuments,
    EmbedQuery,
    Leg,
    LegError,
    LegOutcome,
    LegTimeout,
    answered_lists,
    graph_second_stage,
    none_answered,
    run_leg,
)
from recallmesh.gateway.fusion_call import Fuser, FusionCall
from recallmesh.gateway.hydration import Adjacent, hydrate_top
from recallmesh.gateway.metrics import (
    AFTER_LEGS_PLANNED_SECONDS,
    CONTEXT_EXPANSIONS,
    FALLBACKS,
    INTENT_ROUTES,
    QUERY_EMBED_SECONDS,
    RECALL_SECONDS,
    RECALL_STAGE_SECONDS,
    RESTATEMENTS,
    SECRETS,
    TIME_WINDOWS,
)
from recallmesh.gateway.query_intent import Route, route
from recallmesh.gateway.settings import GatewaySettings
from recallmesh.gateway.store import MemoryStore
from recallmesh.gateway.time_window import TimeWindow, boost
from recallmesh.policy import FusionSettings, RecallPolicy
from recallmesh.services.embedding.client import Embeddings
from recallmesh.shared import db
from recallmesh.shared.errors import (
    DeadlineExceeded,
    ResourceExhausted,
    Unavailable,
)
from recallmesh.shared.legs import FAILED_LEG_STATES, GRAPH_LEG, LEXICAL_LEG
from recallmesh.wire.fusion import FusedCandidate, LegList
from recallmesh.wire.memory_fields import StoredMemory
from recallmesh.wire.retriever import LegQuery
from recallmesh.wire.validation import RecallQuery

log = logging.getLogger(__name__)
tracer = trace.get_tracer("recallmesh.gateway")


@dataclass(frozen=True)
class RecallHit:
    memory: StoredMemory
    score: float
    fused: FusedCandidate


@dataclass(frozen=True)
class RecallOutcome:
    hits: list[RecallHit]
    legs: list[LegOutcome]
    fusion: str = ""  # method and where it ran (FusionCall), e.g. "rrf (service)"
    latency_ms: float = 0.0  # inside the gateway, fan-out to hydration
    time_window: TimeWindow | None = None  # the window the query named (when the boost ran)
    time_boosted: int = 0  # fused candidates created inside it
    route: Route | None = None  # the query intent the request was routed by
    # the relevance floor applied (the request's min_score, else the deployment's); 0: none
    relevance_floor: float = 0.0

    @property
    def degraded(self) -> bool:
        """A leg that was asked did not answer (skipping on request is not degradation)."""
        return any(leg.state in FAILED_LEG_STATES for leg in self.legs)


class Recaller:
    def __init__(
        self,
        store: MemoryStore,
        legs: Sequence[Leg],
        settings: GatewaySettings,
        embed_query: EmbedQuery | None = None,
        fuser: Fuser | None = None,
        embed_documents: EmbedDocuments | None = None,
    ) -> None:
        self.store = store
        self.legs = list(legs)
        self.settings = settings
        self.embed_query = embed_query
        # Reads a secret's meaning beside the question's (secrets.py); None: the words rule alone.
        self.embed_documents = embed_documents
        self.fusion = FusionCall(fuser, settings.fusion_timeout_ms)
        self.after_legs = budget.AfterLegsTimes()  # the work after the fan-out, measured
        # The query model's score calibration (recallmesh/embedding_models/calibration.py), from the
        # last query embedding: a lexical-only recall (the embedding failed) keeps using it.
        self.calibration: ScoreCalibration | None = None

    async def _embed(self, text: str, timeout_s: float) -> Embeddings:
        assert self.embed_query is not None
        start = time.perf_counter()
        state = "OK"
        with tracer.start_as_current_span("embed.query"):
            try:
                return await asyncio.wait_for(self.embed_query(text, timeout_s), timeout_s)
            except (TimeoutError, LegTimeout):
                state = "TIMEOUT"
                raise LegTimeout() from None
            except LegError:
                state = "ERROR"
                raise
            except asyncio.CancelledError:
                state = "CANCELLED"
                raise
            except Exception as exc:
                state = "ERROR"
                raise LegError(f"embedding failed: {type(exc).__name__}") from exc
            finally:
                QUERY_EMBED_SECONDS.labels(state).observe(time.perf_counter() - start)

    def plan(self, budget_ms: int | None, client_remaining_s: float | None
             ) -> budget.RecallPlan:
        """This recall's time plan (budget.plan): its budget (the request's, else the
        deployment's), the reserve, what the work after the legs has recently taken here,
        and the caller's deadline."""
        planned = budget.plan((budget_ms or self.settings.default_budget_ms) / 1000,
                              self.settings.reserve_ms / 1000, self.after_legs.quantile(),
                              client_remaining_s)
        AFTER_LEGS_PLANNED_SECONDS.set(planned.after_s)
        return planned

    def refuse_late(self, budget_ms: int | None, client_remaining_s: float | None) -> None:
        """A call that arrives with less of its deadline left than a recall needs
        (budget.need_s: the legs' least time, the work after them as planned, the answer's
        way back) waited too long in a busy server: refused at once as load
        (RESOURCE_EXHAUSTED, reason `late`), not started and failed or answered late."""
        if client_remaining_s is None:
            return
        need_s = budget.need_s((budget_ms or self.settings.default_budget_ms) / 1000,
                               self.settings.reserve_ms / 1000, self.after_legs.quantile())
        if client_remaining_s < need_s:
            raise ResourceExhausted(
                f"server busy: the call arrived with {client_remaining_s * 1000:.0f} ms of its "
                f"deadline left, a recall needs at least {need_s * 1000:.0f} ms, retry",
                reason="late")

    def policy_for(self, q: RecallQuery) -> tuple[RecallPolicy, Route | None]:
        """The policy this request runs with, and the query intent it was routed by: when
        routing is on (the request's setting, else the deployment's) and a rule matches
        (relevance order only; recency bypasses fusion), the route fills what the request
        leaves unset (RecallPolicy.resolve: request > route > deployment)."""
        deployment = self.settings.policy
        asked: bool | None = q.fusion.values.get("intent_routing")  # unset: None
        on = deployment.intent_routing if asked is None else asked
        routed = route(q.query) if on and q.sort_by != "recency" else None
        policy = deployment.resolve(q.fusion, routed.overrides() if routed else None,
                                    [leg.name for leg in self.legs])
        return policy, routed

    async def recall(
        self, q: RecallQuery, client_remaining_s: float | None = None
    ) -> RecallOutcome:
        started = time.perf_counter()
        self.refuse_late(q.budget_ms, client_remaining_s)
        policy, routed = self.policy_for(q)
        with tracer.start_as_current_span("recall") as span:
            if routed is not None:
                INTENT_ROUTES.labels(routed.intent).inc()
                span.set_attribute("recallmesh.intent", routed.intent)
            try:
                outcome = await self._recall(q, policy, client_remaining_s, started)
            except (Unavailable, DeadlineExceeded):
                RECALL_SECONDS.labels("failed").observe(time.perf_counter() - started)
                raise
            span.set_attribute("recallmesh.degraded", outcome.degraded)
            span.set_attribute("recallmesh.fusion", outcome.fusion)
        elapsed = time.perf_counter() - started
        RECALL_SECONDS.labels(str(outcome.degraded).lower()).observe(elapsed)
        return replace(outcome, latency_ms=elapsed * 1000, route=routed)

    async def _fan_out(self, q: RecallQuery, policy: RecallPolicy, settings: FusionSettings,
                       leg_query: LegQuery, timeout_s: float, started: float
                       ) -> tuple[list[LegOutcome], Embeddings | None]:
        """Every asked leg in parallel (and the graph second stage when the policy asks), and
        the query's embedding when it arrived."""
        asked = [leg for leg in self.legs if leg.name not in q.fusion.skip_legs]
        embedding: asyncio.Future[Embeddings] | None = None
        if self.embed_query is not None and any(
            leg.needs_vector for leg in asked
        ):
            embedding = asyncio.ensure_future(self._embed(q.query, timeout_s))
        try:
            ran = await asyncio.gather(
                *(run_leg(leg, leg_query, timeout_s, embedding) for leg in asked)
            )
            if policy.graph_second_stage and policy.weight(GRAPH_LEG) > 0:
                left_s = timeout_s - (time.perf_counter() - started)  # ends with the legs
                await graph_second_stage(
                    ran, next((leg for leg in self.legs if leg.name == GRAPH_LEG), None),
                    leg_query, settings, dict(policy.weights),
                    policy.graph_second_stage_seeds, left_s, policy.graph_second_stage_min_ms,
                    embedding, self._fuse_ids)
        finally:
            embedded = None
            if embedding is not None:
                if not embedding.done():
                    embedding.cancel()
                elif not embedding.cancelled() and embedding.exception() is None:
                    embedded = embedding.result()
                    self.calibration = calibration_for(embedded.model_id)
        return ran, embedded

    async def _recall(
        self, q: RecallQuery, policy: RecallPolicy, client_remaining_s: float | None,
        started: float,
    ) -> RecallOutcome:
        planned = self.plan(q.budget_ms, client_remaining_s)
        leg_query = LegQuery(
            namespace=q.namespace,
            query=q.query,
            k=max(q.k, policy.leg_depth),
            filters=q.filters,
            sort_by=q.sort_by,
            lexical_ranking=policy.lexical_ranking or "",
            bm25_k1=policy.bm25_k1,
            bm25_b=policy.bm25_b,
        )
        settings = policy.fusion_settings(q.sort_by)
        with RECALL_STAGE_SECONDS.labels("fan_out").time():
            ran, embedded = await self._fan_out(q, policy, settings, leg_query, planned.legs_s,
                                                started)
        legs_done = time.perf_counter()
        by_name = {o.leg: o for o in ran}
        outcomes = [
            by_name.get(leg.name)
            or LegOutcome(leg.name, "SKIPPED", 0.0, detail="skipped by request")
            for leg in self.legs
        ]
        answered = [o for o in outcomes if o.state == "OK"]
        if not answered:
            raise none_answered(ran, q.budget_ms)
        if any(o.state in FAILED_LEG_STATES for o in ran):
            only_lexical = [o.leg for o in answered] == [LEXICAL_LEG]
            FALLBACKS.labels("lexical_only" if only_lexical else "partial").inc()

        lists = answered_lists(answered, dict(policy.weights))
        if q.sort_by == "recency":  # bypasses fusion: newest of the pooled candidates
            async with self._after_legs(planned, started, legs_done):
                lists = await self._secrets_asked(q, lists, embedded, planned, started)
                fused = self.fusion.pool(lists, settings)
                memories = await self.store.hydrate(q.namespace, [c.memory_id for c in fused])
            live = [c for c in fused if c.memory_id in memories]
            live.sort(key=lambda c: c.memory_id)  # stable sorts: the id is the last tie-break
            live.sort(key=lambda c: memories[c.memory_id].created_at, reverse=True)
            return self._answer(q, policy, live, memories, lists,
                                RecallOutcome([], outcomes, fusion="none (recency)"))

        async with self._after_legs(planned, started, legs_done):
            lists = await self._secrets_asked(q, lists, embedded, planned, started)
            remaining_s = planned.answer_s - (time.perf_counter() - started)
            with RECALL_STAGE_SECONDS.labels("fusion").time():
                fused, how = await self.fusion(lists, settings, remaining_s)
            if q.sort_by == "relevance":  # what the ranker cannot tell apart, by estimate
                fused = stages.ties_by_estimate(fused, lists, self.calibration)
            plan = stages.plan(policy, lists, q.sort_by, q.query, q.reference_time)
            boosted = 0
            with RECALL_STAGE_SECONDS.labels("hydration").time():
                if plan.window is not None:
                    fused, boosted = await self._boost_time_window(q, fused, plan)
                if q.sort_by == "relevance":  # trust, after the ranker: blind legs
                    fused = stages.place_unseen(fused, lists, self.calibration)
                top, memories, adjacent = await hydrate_top(self.store, q, fused,
                                                            plan.context_hits)
            if adjacent is not None and top:
                with RECALL_STAGE_SECONDS.labels("context").time():
                    top = self._propagate_context(q, fused, top, memories, adjacent, plan)
            if q.sort_by == "relevance" and policy.restated_similarity > 0 and len(top) > 1:
                top = await self._newer_first(q, top, memories, policy.restated_similarity)
            gone: set[str] = set()
            if q.sort_by == "relevance":
                valid_to = {c.memory_id: memories[c.memory_id].valid_to for c in top}
                now = q.filters.as_of or datetime.now(UTC)  # as of T, validity is read at T
                top = stages.current_first(top, valid_to, now)
                gone = stages.ended(valid_to, now)
        return self._answer(q, policy, top, memories, lists,
                            RecallOutcome([], outcomes, fusion=how, time_window=plan.window,
                                          time_boosted=boosted), gone)

    def _answer(self, q: RecallQuery, policy: RecallPolicy, top: list[FusedCandidate],
                memories: dict[str, StoredMemory], lists: list[LegList],
                outcome: RecallOutcome,
                gone: Collection[str] = frozenset()) -> RecallOutcome:
        """The end of every recall, whatever ordered `top`: the order is final, so each hit's
        score becomes its relevance estimate (the `gone` ones, ended at the recall's time,
        then held below the current ones as current_first holds them), the relevance floor
        applies, and the first k hits are `outcome`'s (a recency recall's `top` is its whole
        pool, newest first, held to the floor as a whole)."""
        top = stages.relevance_scores(top, lists, policy.method, self.calibration,
                                      q.sort_by, gone)
        if gone:
            now = q.filters.as_of or datetime.now(UTC)
            top = stages.current_first(
                top, {c.memory_id: memories[c.memory_id].valid_to for c in top}, now)
        floor = self._floor(policy)
        top = stages.above_floor(top, floor, each_hit=q.floor_each_hit)
        return replace(outcome, relevance_floor=floor,
                       hits=[RecallHit(memories[c.memory_id], c.score, c) for c in top[: q.k]])

    async def _secrets_asked(self, q: RecallQuery, lists: list[LegList],
                             embedded: Embeddings | None, planned: budget.RecallPlan,
                             started: float) -> list[LegList]:
        """`lists` less each secret the question does not ask for in meaning (secrets.py):
        one read of the secrets' text and one embedding of it, only when a leg returned a
        secret; run inside the work after the legs (its deadline). Withheld when the meaning
        cannot be read."""
        found = secrets.secret_candidates(lists)
        if not found or self.embed_documents is None:
            return lists
        nearest = secrets.nearest_ordinary(lists)
        if embedded is None or nearest is None:
            SECRETS.labels("unread").inc(len(found))
            return secrets.withhold(lists, set(found))
        with RECALL_STAGE_SECONDS.labels("secrets").time():
            memories = await self.store.hydrate(q.namespace, found)
            texts = [(i, memories[i].content) for i in found if i in memories]
            try:
                left_s = budget.time_left(planned, time.perf_counter() - started)
                vectors = (await self.embed_documents([t for _, t in texts], left_s)
                           ).vectors if texts else []
            except (LegTimeout, LegError, ValueError) as exc:
                log.info("secrets withheld: their meaning could not be read (%s)",
                         type(exc).__name__)
                SECRETS.labels("unread").inc(len(found))
                return secrets.withhold(lists, set(found))
        kept = secrets.asked_in_meaning(
            embedded.vectors[0], {i: v for (i, _), v in zip(texts, vectors, strict=True)},
            nearest)
        SECRETS.labels("offered").inc(len(kept))
        SECRETS.labels("withheld").inc(len(found) - len(kept))
        return secrets.withhold(lists, set(found) - kept)

    def _floor(self, policy: RecallPolicy) -> float:
        """The relevance floor this recall applies: the policy's min_score (the request's,
        else the deployment's) where its scores are estimates (stages.scores_are_estimates,
        read after the fan-out: the query model's calibration), else 0 (none)."""
        if stages.scores_are_estimates(policy.method, self.calibration):
            return max(policy.min_score, 0.0)
        return 0.0

    async def _fuse_ids(self, lists: list[LegList], settings: FusionSettings,
                        remaining_s: float) -> list[str]:
        """The memory ids of a fusion before the final one (the graph second stage's seeds),
        best first, fused where the recall's fusions run."""
        fused, _ = await self.fusion(lists, settings, remaining_s, ranking=False)
        return [c.memory_id for c in fused]

    @contextlib.asynccontextmanager
    async def _after_legs(self, planned: budget.RecallPlan, started: float, legs_done: float
                          ) -> AsyncIterator[None]:
        """The work after the legs: its database waits (db.deadline) and statements (cancelled,
        and so cancelled on the server) end at the plan's hard end (budget.time_left). Not done
        by then: the database is not answering, Unavailable. Its duration, finished or cut,
        is what the next recalls plan for (self.after_legs)."""
        left_s = budget.time_left(planned, time.perf_counter() - started)
        try:
            with db.deadline(left_s):
                async with asyncio.timeout(left_s):
                    yield
        except TimeoutError:
            if planned.by_caller:
                raise DeadlineExceeded(
                    f"the call's deadline left {left_s * 1000:.0f} ms to read the memories "
                    "after the retrieval legs, not enough: retry with a longer deadline"
                ) from None
            raise Unavailable(
                f"database did not answer within {left_s * 1000:.0f} ms after the retrieval "
                "legs, retry") from None
        finally:
            self.after_legs.observe(time.perf_counter() - legs_done)

    async def _newer_first(self, q: RecallQuery, top: list[FusedCandidate],
                           memories: dict[str, StoredMemory], min_similarity: float
                           ) -> list[FusedCandidate]:
        """Restatements newest first (stages.newer_first), over the near-duplicate pairs
        among the hits that are not conversation turns, read in one query, and only when one
        of them says it changed (stages.restatable); when it fails the hits keep their order."""
        content = {i: m.content for i, m in memories.items()}
        threaded = {i for i, m in memories.items() if m.thread}
        facts = stages.restatable(top, content, threaded)
        if not facts:
            return top
        with tracer.start_as_current_span("restated"):
            try:
                similar = await self.store.similar_pairs(q.namespace, facts, min_similarity)
            except (TimeoutError, asyncio.CancelledError):
                raise  # the recall's own deadline: _after_legs answers it
            except Exception:  # an optional refinement must not fail the recall
                log.exception("restatement lookup failed; hits kept in their order")
                RESTATEMENTS.labels("failed").inc()
                return top
            ranked, moved = stages.newer_first(
                top, {i: m.created_at for i, m in memories.items()}, content, similar,
                threaded)
        RESTATEMENTS.labels("reordered" if moved else "none").inc()
        return ranked

    async def _boost_time_window(
        self, q: RecallQuery, fused: list[FusedCandidate], plan: stages.Stages
    ) -> tuple[list[FusedCandidate], int]:
        """Raise the fused candidates created inside the plan's window (time_window.boost)."""
        assert plan.window is not None
        with tracer.start_as_current_span("time_window") as span:
            span.set_attribute("recallmesh.time_window", plan.window.phrase)
            try:
                created = await self.store.created_times(
                    q.namespace, [c.memory_id for c in fused])
            except Exception:  # an optional refinement must not fail the recall
                log.exception("time window lookup failed; hits kept in fused order")
                TIME_WINDOWS.labels("failed").inc()
                return fused, 0
            ranked, raised = boost(fused, created, plan.window, plan.time_boost)
        TIME_WINDOWS.labels("boosted" if raised else "none").inc()
        return ranked, raised

    def _propagate_context(
        self, q: RecallQuery, fused: list[FusedCandidate], top: list[FusedCandidate],
        memories: dict[str, StoredMemory], adjacent: Adjacent, plan: stages.Stages,
    ) -> list[FusedCandidate]:
        """Context propagation (stages.propagate_context) over the memories stored next after
        / just before each of the best hits (the reply after a matched question, the question
        before a matched answer), read with the hydration. `memories` gains the neighbours."""
        after, before = adjacent
        now = q.filters.as_of or datetime.now(UTC)
        gone = stages.ended({m.id: m.valid_to for m in (*memories.values(), *after.values(),
                                                       *before.values())}, now)
        # an ended memory neither seeds nor receives a share
        after = {k: v for k, v in after.items() if k not in gone and v.id not in gone}
        before = {k: v for k, v in before.items() if k not in gone and v.id not in gone}
        with tracer.start_as_current_span("context"):
            ranked, raised = stages.propagate_context(
                fused, top, {k: v.id for k, v in after.items()},
                {k: v.id for k, v in before.items()}, plan.context_hits,
                plan.context_next_weight, plan.context_prev_weight, q.k,
                importance={m.id: m.importance for m in (*after.values(), *before.values())})
        for neighbour in (*after.values(), *before.values()):
            memories.setdefault(neighbour.id, neighbour)
        CONTEXT_EXPANSIONS.labels("added" if raised else "none").inc()
        return ranked
