"""The recall path: fan out to every leg in parallel under a budget, fuse, hydrate.

No gRPC here: a leg is anything with `name` and an async `search()`. Each leg
gets the request budget minus a reserve (for fusion + hydration), shortened
further by the caller's own deadline. A leg that fails or misses its deadline
is cancelled and reported (TIMEOUT / ERROR) and the response is `degraded`;
the answer is built from the legs that did arrive. Nothing arrived at all is
UNAVAILABLE, naming the failed legs.

Legs that need the query vector (`needs_vector`) share one embedding of the
query, started at once alongside the other legs: the critical path is
max(lexical, embed + vector). An embedding failure fails only those legs.

The graph second stage (off by default; per request or RECALLMESH_GRAPH_SECOND_STAGE):
once the fan-out is back, and when enough of the budget is left, the graph leg
is asked again with the other legs' best hits (fused) as extra seeds, and its
second list replaces its first in fusion. It is optional work: when it is
skipped, late or failing, the first list is fused and the recall is not degraded.

Time windows (recallmesh/gateway/time_window.py): when the query names a time relative to the
request's reference time ("last Saturday", "two weeks ago"), the fused candidates created
inside it are raised (score x (1 + time_boost)) before hydration and context propagation
(relevance order, two or more contributing legs, like context).
One extra indexed read of their created_at, only for such queries; when it fails the
candidates keep their fused order.

Query-intent routing (recallmesh/gateway/query_intent.py): when a rule reads an intent in the query
("any tips?": advice), its route sets the lexical weight, context and time boost that the
request leaves unset; the response names the intent.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Protocol

from opentelemetry import trace
from prometheus_client import Counter, Histogram

from recallmesh.api.filters import Filters
from recallmesh.api.validation import RecallQuery
from recallmesh.fusion.core import (
    Contribution,
    FusedCandidate,
    FusionSettings,
    LegCandidate,
    LegList,
    fuse,
)
from recallmesh.gateway.query_intent import Route, route
from recallmesh.gateway.store import MemoryStore, StoredMemory
from recallmesh.gateway.time_window import TimeWindow, boost, resolve
from recallmesh.platform.config import GatewaySettings
from recallmesh.platform.embedder_client import Embeddings
from recallmesh.platform.errors import InvalidArgument, Unavailable
from recallmesh.platform.telemetry import LEG_LATENCY_SECONDS

log = logging.getLogger(__name__)
tracer = trace.get_tracer("recallmesh.gateway")

MIN_LEG_TIMEOUT_S = 0.005
GRAPH_LEG = "graph"  # the leg the second stage asks again
FUSION_RETRY_AFTER_S = 5.0  # after a failed fusion call, fuse in-process this long

QUERY_EMBED_SECONDS = Histogram(
    "recallmesh_gateway_query_embedding_seconds",
    "Time to embed a recall query through the embedding service.",
    ["state"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5),
)

LEG_FAILURES = Counter(
    "recallmesh_leg_failures_total", "Leg calls that timed out or failed.", ["leg", "state"]
)
FALLBACKS = Counter(
    "recallmesh_recall_fallbacks_total",
    "Recalls answered by a fallback: lexical_only (every other leg failed), partial (some "
    "leg failed), local_fusion (the fusion service was down or late).",
    ["kind"],
)
SECOND_STAGES = Counter(
    "recallmesh_graph_second_stage_total",
    "Graph second stages: ran (its list was fused), skipped (too little budget left, or no "
    "other leg had a hit to seed it), failed (timeout or error: the first list was fused).",
    ["outcome"],
)
CONTEXT_EXPANSIONS = Counter(
    "recallmesh_context_expansions_total",
    "Context propagation per recall: added (a memory stored next to one of the best hits "
    "gained a share of its score), none (no best hit had a neighbour in the window), failed "
    "(the lookup failed: hits returned in fused order).",
    ["outcome"],
)
TIME_WINDOWS = Counter(
    "recallmesh_time_windows_total",
    "Recalls whose query named a time window: boosted (some fused candidate was created "
    "inside it), none (none was), failed (the lookup failed: fused order kept).",
    ["outcome"],
)
INTENT_ROUTES = Counter(
    "recallmesh_intent_routes_total",
    "Recalls routed by a query intent (recallmesh/gateway/query_intent.py), by intent.",
    ["intent"],
)
# The pseudo-legs named in explain for what context propagation added to a memory stored
# right after / right before a hit (rank: that hit's rank in the fused list).
CONTEXT_NEXT = "context_next"
CONTEXT_PREV = "context_prev"
RECALL_SECONDS = Histogram(
    "recallmesh_recall_seconds",
    "Recall time inside the gateway (fan-out, fusion, hydration); degraded is true, "
    "false, or failed (no leg answered).",
    ["degraded"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0),
)

# Embeds one query text within a timeout; raises LegTimeout / LegError.
EmbedQuery = Callable[[str, float], Awaitable[Embeddings]]


class Fuser(Protocol):
    """The fusion service's client: fuse remotely or raise (the caller falls back)."""

    async def fuse(
        self, lists: list[LegList], settings: FusionSettings, timeout_s: float
    ) -> list[FusedCandidate]: ...


@dataclass(frozen=True)
class LegQuery:
    namespace: str
    query: str
    k: int
    filters: Filters
    sort_by: str
    vector: tuple[float, ...] = ()  # filled in for legs that need it
    vector_model: str = ""
    lexical_ranking: str = ""  # request overrides for the lexical leg ("" / None: its own)
    bm25_k1: float | None = None
    bm25_b: float | None = None
    seed_memory_ids: tuple[str, ...] = ()  # the graph second stage's seed memories


class LegTimeout(Exception):
    """The leg reported that its deadline passed."""


class LegError(Exception):
    """The leg failed; the message says how (code and detail)."""


@dataclass(frozen=True)
class LegAnswer:
    candidates: list[LegCandidate]
    score_range: tuple[float, float] | None = None  # the leg's theoretical score range
    reasons: dict[str, str] = field(default_factory=dict)  # memory id -> why (explain)


class Leg(Protocol):
    name: str
    needs_vector: bool  # searched with the embedded query

    async def search(self, query: LegQuery, timeout_s: float) -> LegAnswer: ...


@dataclass
class LegOutcome:
    leg: str
    state: str  # OK | TIMEOUT | ERROR | SKIPPED
    latency_ms: float
    answer: LegAnswer | None = None
    detail: str = ""

    @property
    def candidates(self) -> list[LegCandidate]:
        return self.answer.candidates if self.answer else []


@dataclass(frozen=True)
class RecallHit:
    memory: StoredMemory
    score: float
    fused: FusedCandidate


@dataclass(frozen=True)
class RecallOutcome:
    hits: list[RecallHit]
    legs: list[LegOutcome]
    fusion: str = ""  # method and where it ran, e.g. "rrf (service)"
    latency_ms: float = 0.0  # inside the gateway, fan-out to hydration
    time_window: TimeWindow | None = None  # the window the query named (when the boost ran)
    time_boosted: int = 0  # fused candidates created inside it
    route: Route | None = None  # the query intent the request was routed by

    @property
    def degraded(self) -> bool:
        """A leg that was asked did not answer (skipping on request is not degradation)."""
        return any(leg.state in ("TIMEOUT", "ERROR") for leg in self.legs)


async def _search(
    leg: Leg, query: LegQuery, timeout_s: float, embedding: asyncio.Future | None
) -> LegAnswer:
    if not getattr(leg, "needs_vector", False):
        return await leg.search(query, timeout_s)
    if embedding is None:
        raise LegError("no embedding service configured")
    start = time.perf_counter()
    embedded: Embeddings = await asyncio.shield(embedding)  # shared by every vector leg
    query = replace(query, vector=tuple(embedded.vectors[0]), vector_model=embedded.model_id)
    remaining = timeout_s - (time.perf_counter() - start)
    return await leg.search(query, max(remaining, MIN_LEG_TIMEOUT_S))


async def _run_leg(
    leg: Leg, query: LegQuery, timeout_s: float, embedding: asyncio.Future | None = None,
    label: str = "",
) -> LegOutcome:
    """One leg call, timed and traced under `label` (default: the leg's name)."""
    label = label or leg.name
    start = time.perf_counter()
    with tracer.start_as_current_span(f"leg.{label}") as span:
        try:
            answer = await asyncio.wait_for(_search(leg, query, timeout_s, embedding), timeout_s)
            outcome = LegOutcome(leg.name, "OK", 0.0, answer)
        except (TimeoutError, LegTimeout):
            outcome = LegOutcome(
                leg.name, "TIMEOUT", 0.0, detail=f"no answer within {timeout_s * 1000:.0f} ms"
            )
        except LegError as exc:
            outcome = LegOutcome(leg.name, "ERROR", 0.0, detail=str(exc))
        except Exception as exc:  # a bug in a leg client must not fail the recall
            log.exception("leg %s failed unexpectedly", leg.name)
            outcome = LegOutcome(leg.name, "ERROR", 0.0, detail=type(exc).__name__)
        outcome.latency_ms = (time.perf_counter() - start) * 1000
        span.set_attribute("recallmesh.leg.state", outcome.state)
        span.set_attribute("recallmesh.leg.candidates", len(outcome.candidates))
    LEG_LATENCY_SECONDS.labels(label, outcome.state).observe(outcome.latency_ms / 1000)
    if outcome.state != "OK":
        LEG_FAILURES.labels(label, outcome.state).inc()
    return outcome


def propagate_context(
    fused: Sequence[FusedCandidate],
    top: Sequence[FusedCandidate],
    after: dict[str, str],
    before: dict[str, str],
    n: int,
    next_weight: float,
    prev_weight: float,
    k: int,
    importance: dict[str, float] | None = None,
) -> tuple[list[FusedCandidate], int]:
    """The scoring of context propagation, without I/O: `after` / `before` map a hit's id to
    the id of the memory stored next after / just before it. Each of the best n of `top`
    gives next_weight x its score to its next memory and prev_weight x to its previous one
    (a memory keeps the largest share of each side); a neighbour in `fused` adds the share to
    its fused score, any other starts from 0. Returns `top` and the raised neighbours ranked
    again, cut to k, and how many memories were raised."""
    shares: dict[str, dict[str, tuple[float, int]]] = {}
    for rank, seed in enumerate(top[:n], start=1):
        for source, weight, neighbours in ((CONTEXT_NEXT, next_weight, after),
                                           (CONTEXT_PREV, prev_weight, before)):
            neighbour = neighbours.get(seed.memory_id)
            share = weight * seed.score
            if neighbour is None or weight <= 0 or share <= 0:
                continue
            best = shares.setdefault(neighbour, {})
            if share > best.get(source, (0.0, 0))[0]:
                best[source] = (share, rank)
    if not shares:
        return list(top), 0
    by_id = {c.memory_id: c for c in fused}
    pool = {c.memory_id: c for c in top}
    for memory_id, gained in shares.items():
        base = pool.get(memory_id) or by_id.get(memory_id) or FusedCandidate(
            memory_id, 0.0, (importance or {}).get(memory_id, 0.5))
        added = [Contribution(source, rank, share)
                 for source, (share, rank) in sorted(gained.items())]
        pool[memory_id] = replace(base, score=base.score + sum(c.score for c in added),
                                  contributions=[*base.contributions, *added])
    ranked = sorted(pool.values(), key=lambda c: (-c.score, c.best_rank, c.memory_id))
    return ranked[:k], len(shares)


class Recaller:
    def __init__(
        self,
        store: MemoryStore,
        legs: Sequence[Leg],
        settings: GatewaySettings,
        embed_query: EmbedQuery | None = None,
        fuser: Fuser | None = None,
    ) -> None:
        self.store = store
        self.legs = list(legs)
        self.settings = settings
        self.embed_query = embed_query
        self.fuser = fuser
        self._fusion_retry_at = 0.0  # monotonic time before which fusion stays in-process
        self._fusion_failure = ""

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

    def budget_s(self, budget_ms: int | None, client_remaining_s: float | None) -> float:
        budget_s = (budget_ms or self.settings.default_budget_ms) / 1000
        if client_remaining_s is not None:
            budget_s = min(budget_s, client_remaining_s)
        return budget_s

    def leg_timeout_s(self, budget_ms: int | None, client_remaining_s: float | None) -> float:
        budget_s = self.budget_s(budget_ms, client_remaining_s)
        return max(budget_s - self.settings.reserve_ms / 1000, MIN_LEG_TIMEOUT_S)

    def route(self, q: RecallQuery) -> tuple[RecallQuery, Route | None]:
        """The request with its query intent's route applied, and the route: when routing is
        on (the request's, else the server's) and a rule matches (relevance order only;
        recency bypasses fusion), the route's settings fill the fusion overrides the request
        left unset, so everything downstream reads them like the request's own. The lexical
        weight is a cap on the deployment's."""
        f = q.fusion
        on = self.settings.intent_routing if f.intent_routing is None else f.intent_routing
        routed = route(q.query) if on and q.sort_by != "recency" else None
        if routed is None:
            return q, None
        weights = dict(f.weights)
        if (routed.lexical_weight is not None and "lexical" not in weights
                and any(leg.name == "lexical" for leg in self.legs)):
            weights["lexical"] = min(self.settings.fusion.weight("lexical"),
                                     routed.lexical_weight)
        fusion = replace(
            f, weights=weights,
            context_hits=routed.context_hits if f.context_hits is None else f.context_hits,
            time_boost=routed.time_boost if f.time_boost is None else f.time_boost)
        return replace(q, fusion=fusion), routed

    def fusion_settings(self, q: RecallQuery) -> tuple[FusionSettings, dict[str, float]]:
        """The deployment's fusion settings with the request's overrides; per-leg weights."""
        defaults, request = self.settings.fusion, q.fusion
        names = {leg.name for leg in self.legs}
        unknown = sorted((set(request.weights) | set(request.skip_legs)) - names)
        if unknown:
            raise InvalidArgument(
                f"fusion names unknown legs: {', '.join(unknown)} "
                f"(legs: {', '.join(sorted(names))})"
            )
        if names and set(request.skip_legs) >= names:
            raise InvalidArgument("fusion.skip_legs must leave at least one leg")
        settings = FusionSettings(
            method=request.method or defaults.method,
            rrf_k=request.rrf_k or defaults.rrf_k,
            importance_strength=(
                defaults.importance_strength
                if request.importance_strength is None
                else request.importance_strength
            ),
            exact_bonus=(
                defaults.exact_bonus if request.exact_bonus is None else request.exact_bonus
            ),
            sort_by="relevance" if q.sort_by == "recency" else q.sort_by,
        )
        if request.graph_second_stage and (GRAPH_LEG not in names
                                           or GRAPH_LEG in request.skip_legs):
            raise InvalidArgument(
                "fusion.graph_second_stage needs the graph leg, which this request does not "
                f"ask (legs: {', '.join(sorted(names))}; skipped: "
                f"{', '.join(request.skip_legs) or 'none'})"
            )
        weights = {name: request.weights.get(name, defaults.weight(name)) for name in names}
        if names and not any(
            weights[n] > 0 for n in names if n not in request.skip_legs
        ):
            raise InvalidArgument("fusion.weights give every asked leg weight 0")
        return settings, weights

    async def recall(
        self, q: RecallQuery, client_remaining_s: float | None = None
    ) -> RecallOutcome:
        started = time.perf_counter()
        q, routed = self.route(q)
        settings, weights = self.fusion_settings(q)
        with tracer.start_as_current_span("recall") as span:
            if routed is not None:
                INTENT_ROUTES.labels(routed.intent).inc()
                span.set_attribute("recallmesh.intent", routed.intent)
            try:
                outcome = await self._recall(q, client_remaining_s, settings, weights, started)
            except Unavailable:
                RECALL_SECONDS.labels("failed").observe(time.perf_counter() - started)
                raise
            span.set_attribute("recallmesh.degraded", outcome.degraded)
            span.set_attribute("recallmesh.fusion", outcome.fusion)
        elapsed = time.perf_counter() - started
        RECALL_SECONDS.labels(str(outcome.degraded).lower()).observe(elapsed)
        return replace(outcome, latency_ms=elapsed * 1000, route=routed)

    async def _recall(
        self,
        q: RecallQuery,
        client_remaining_s: float | None,
        settings: FusionSettings,
        weights: dict[str, float],
        started: float,
    ) -> RecallOutcome:
        budget_s = self.budget_s(q.budget_ms, client_remaining_s)
        timeout_s = self.leg_timeout_s(q.budget_ms, client_remaining_s)
        leg_query = LegQuery(
            namespace=q.namespace,
            query=q.query,
            k=max(q.k, q.fusion.leg_depth or self.settings.leg_depth),
            filters=q.filters,
            sort_by=q.sort_by,
            lexical_ranking=q.fusion.lexical_ranking or "",
            bm25_k1=q.fusion.bm25_k1,
            bm25_b=q.fusion.bm25_b,
        )
        asked = [leg for leg in self.legs if leg.name not in q.fusion.skip_legs]
        embedding: asyncio.Future | None = None
        if self.embed_query is not None and any(
            getattr(leg, "needs_vector", False) for leg in asked
        ):
            embedding = asyncio.ensure_future(self._embed(q.query, timeout_s))
        try:
            ran = await asyncio.gather(
                *(_run_leg(leg, leg_query, timeout_s, embedding) for leg in asked)
            )
            second_stage = q.fusion.graph_second_stage
            if second_stage is None:
                second_stage = self.settings.graph_second_stage
            if second_stage and weights.get(GRAPH_LEG, 0.0) > 0:
                await self._graph_second_stage(
                    ran, leg_query, settings, weights, budget_s, started, embedding
                )
        finally:
            if embedding is not None:
                if not embedding.done():
                    embedding.cancel()
                elif not embedding.cancelled():
                    embedding.exception()  # retrieved: no "never retrieved" warning
        by_name = {o.leg: o for o in ran}
        outcomes = [
            by_name.get(leg.name)
            or LegOutcome(leg.name, "SKIPPED", 0.0, detail="skipped by request")
            for leg in self.legs
        ]
        answered = [o for o in outcomes if o.state == "OK"]
        if not answered:
            failed = ", ".join(f"{o.leg} ({o.state}: {o.detail})" for o in ran)
            raise Unavailable(f"no retrieval leg answered: {failed}")
        failed = [o for o in ran if o.state in ("TIMEOUT", "ERROR")]
        if failed:
            only_lexical = [o.leg for o in answered] == ["lexical"]
            FALLBACKS.labels("lexical_only" if only_lexical else "partial").inc()

        lists = [
            LegList(o.leg, weights[o.leg], o.answer.candidates, o.answer.score_range)
            for o in answered
            if o.answer is not None
        ]
        if q.sort_by == "recency":  # bypasses fusion: newest of the pooled candidates
            fused, how = fuse(lists, settings), "none (recency)"
            memories = await self.store.hydrate(q.namespace, [c.memory_id for c in fused])
            live = [c for c in fused if c.memory_id in memories]
            live.sort(key=lambda c: c.memory_id)  # stable sorts: the id is the last tie-break
            live.sort(key=lambda c: memories[c.memory_id].created_at, reverse=True)
            top = live[: q.k]
        else:
            remaining_s = budget_s - (time.perf_counter() - started)
            fused, how = await self._fuse(lists, settings, remaining_s)
            contributing = sum(1 for x in lists if x.weight > 0 and x.candidates)
            # A single contributing leg keeps its own order (the exact lexical fallback): no
            # time window, no context.
            window, boosted = None, 0
            strength = self.settings.time_boost if q.fusion.time_boost is None \
                else q.fusion.time_boost
            if strength > 0 and settings.sort_by == "relevance" and contributing > 1:
                window = resolve(q.query, q.reference_time or datetime.now(UTC))
                if window is not None:
                    fused, boosted = await self._boost_time_window(q, fused, window, strength)
            context = self._context_settings(q)
            use_context = (context[0] > 0 and any(context[1:])
                           and settings.sort_by == "relevance" and contributing > 1)
            top, memories, adjacent = await self._hydrate_top(
                q, fused, context[0] if use_context else 0)
            if adjacent is not None and top:
                top = self._propagate_context(q, fused, top, memories, adjacent, *context)
            hits = [RecallHit(memories[c.memory_id], c.score, c) for c in top]
            return RecallOutcome(hits=hits, legs=outcomes, fusion=how, time_window=window,
                                 time_boosted=boosted)
        hits = [RecallHit(memories[c.memory_id], c.score, c) for c in top]
        return RecallOutcome(hits=hits, legs=outcomes, fusion=how)

    async def _graph_second_stage(
        self,
        ran: list[LegOutcome],
        leg_query: LegQuery,
        settings: FusionSettings,
        weights: dict[str, float],
        budget_s: float,
        started: float,
        embedding: asyncio.Future | None,
    ) -> None:
        """Ask the graph leg again, seeded by the other legs' best fused hits; on success
        its new list replaces the first one (in place, in `ran`)."""
        graph = next((o for o in ran if o.leg == GRAPH_LEG), None)
        leg = next((leg for leg in self.legs if leg.name == GRAPH_LEG), None)
        if graph is None or leg is None or graph.state != "OK":
            return  # a failed first call is reported as such; no second try
        others = [
            LegList(o.leg, weights[o.leg], o.answer.candidates, o.answer.score_range)
            for o in ran
            if o.leg != GRAPH_LEG and o.state == "OK" and o.answer is not None
        ]
        seeds = tuple(
            c.memory_id for c in fuse(others, settings)[: self.settings.graph_second_stage_seeds]
        ) if others else ()
        left_s = budget_s - (time.perf_counter() - started) - self.settings.reserve_ms / 1000
        if not seeds or left_s * 1000 < self.settings.graph_second_stage_min_ms:
            SECOND_STAGES.labels("skipped").inc()
            graph.detail = (
                "second stage skipped: no other leg had a hit" if not seeds else
                f"second stage skipped: {max(left_s, 0) * 1000:.0f} ms of the budget left"
            )
            return
        second = await _run_leg(
            leg, replace(leg_query, seed_memory_ids=seeds), left_s, embedding,
            label="graph_second_stage",
        )
        graph.latency_ms += second.latency_ms
        if second.state == "OK":
            SECOND_STAGES.labels("ran").inc()
            graph.answer = second.answer
            graph.detail = f"second stage: seeded by the best {len(seeds)} hits of the others"
        else:
            SECOND_STAGES.labels("failed").inc()
            graph.detail = f"second stage {second.state}: {second.detail}; first list fused"

    async def _fuse(
        self, lists: list[LegList], settings: FusionSettings, remaining_s: float
    ) -> tuple[list[FusedCandidate], str]:
        """The fusion service, or in-process with the same code when it is down or late."""
        if self.fuser is None:
            return fuse(lists, settings), f"{settings.method} (local)"
        if time.monotonic() < self._fusion_retry_at:  # failed recently: do not wait on it again
            FALLBACKS.labels("local_fusion").inc()
            return fuse(lists, settings), f"{settings.method} (local: {self._fusion_failure})"
        timeout_s = max(min(self.settings.fusion_timeout_ms / 1000, remaining_s / 2), 0.002)
        with tracer.start_as_current_span("fusion"):
            try:
                return (
                    await asyncio.wait_for(self.fuser.fuse(lists, settings, timeout_s), timeout_s),
                    f"{settings.method} (service)",
                )
            except (TimeoutError, LegTimeout):
                why = f"fusion service: no answer within {timeout_s * 1000:.0f} ms"
            except LegError as exc:
                why = str(exc)
            except Exception as exc:  # a client bug must not fail the recall
                log.exception("fusion call failed unexpectedly")
                why = f"fusion service: {type(exc).__name__}"
        FALLBACKS.labels("local_fusion").inc()
        # Circuit breaker: fuse in-process for a while instead of paying the timeout
        # on every recall; then try the service again.
        self._fusion_retry_at = time.monotonic() + FUSION_RETRY_AFTER_S
        self._fusion_failure = f"{why}; retrying the service in {FUSION_RETRY_AFTER_S:.0f} s"
        return fuse(lists, settings), f"{settings.method} (local: {why})"

    async def _boost_time_window(
        self, q: RecallQuery, fused: list[FusedCandidate], window: TimeWindow, strength: float
    ) -> tuple[list[FusedCandidate], int]:
        """Raise the fused candidates created inside `window` (time_window.boost)."""
        with tracer.start_as_current_span("time_window") as span:
            span.set_attribute("recallmesh.time_window", window.phrase)
            try:
                created = await self.store.created_times(
                    q.namespace, [c.memory_id for c in fused])
            except Exception:  # an optional refinement must not fail the recall
                log.exception("time window lookup failed; hits kept in fused order")
                TIME_WINDOWS.labels("failed").inc()
                return fused, 0
            ranked, raised = boost(fused, created, window, strength)
        TIME_WINDOWS.labels("boosted" if raised else "none").inc()
        return ranked, raised

    def _context_settings(self, q: RecallQuery) -> tuple[int, float, float]:
        """(hits, next weight, prev weight): the request's, else the server's."""
        f, d = q.fusion, self.settings
        return (
            d.context_hits if f.context_hits is None else f.context_hits,
            d.context_next_weight if f.context_next_weight is None else f.context_next_weight,
            d.context_prev_weight if f.context_prev_weight is None else f.context_prev_weight,
        )

    def _propagate_context(
        self,
        q: RecallQuery,
        fused: list[FusedCandidate],
        top: list[FusedCandidate],
        memories: dict[str, StoredMemory],
        adjacent: tuple[dict[str, StoredMemory], dict[str, StoredMemory]],
        n: int,
        next_weight: float,
        prev_weight: float,
    ) -> list[FusedCandidate]:
        """Context propagation (propagate_context) over the memories stored next after /
        just before each of the best n hits (the reply after a matched question, the
        question before a matched answer), read with the hydration. `memories` gains the
        neighbours."""
        after, before = adjacent
        with tracer.start_as_current_span("context"):
            ranked, raised = propagate_context(
                fused, top, {k: v.id for k, v in after.items()},
                {k: v.id for k, v in before.items()}, n, next_weight, prev_weight, q.k,
                importance={m.id: m.importance for m in (*after.values(), *before.values())})
        for neighbour in (*after.values(), *before.values()):
            memories.setdefault(neighbour.id, neighbour)
        CONTEXT_EXPANSIONS.labels("added" if raised else "none").inc()
        return ranked

    async def _hydrate_top(
        self, q: RecallQuery, fused: list[FusedCandidate], context_hits: int = 0
    ) -> tuple[list[FusedCandidate], dict[str, StoredMemory],
               tuple[dict[str, StoredMemory], dict[str, StoredMemory]] | None]:
        """The first k live candidates, in fused order, and (with context_hits) the
        memories stored next after / just before each of the first context_hits
        candidates, read in the same round trip (None when not asked or the read failed:
        then the hits are hydrated alone and keep their fused order).

        A leg may return ids that were deleted since it looked (or never
        existed): hydration drops them, so it reads a window of 2k and, only in
        the rare case that leaves fewer than k live hits, the next window.
        """
        top: list[FusedCandidate] = []
        memories: dict[str, StoredMemory] = {}
        adjacent = None
        start, window = 0, 2 * q.k
        while len(top) < q.k and start < len(fused):
            chunk = fused[start : start + window]
            ids = [c.memory_id for c in chunk]
            found = None
            if start == 0 and context_hits > 0:
                try:
                    found, after, before = await self.store.hydrate_adjacent(
                        q.namespace, ids, ids[:context_hits], self.settings.context_window_s,
                        q.filters, self.settings.context_min_gap_ms / 1000)
                    adjacent = (after, before)
                except Exception:  # an optional refinement must not fail the recall
                    log.exception("context lookup failed; hits returned in fused order")
                    CONTEXT_EXPANSIONS.labels("failed").inc()
            if found is None:
                found = await self.store.hydrate(q.namespace, ids)
            memories.update(found)
            top.extend(c for c in chunk if c.memory_id in found)
            start += window
        return top[: q.k], memories, adjacent
