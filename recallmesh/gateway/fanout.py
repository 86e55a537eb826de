"""Fan-out: every leg in parallel under one timeout, and the graph second stage.

No gRPC here: a leg is anything with `name`, `needs_vector` and an async `search()`. A leg
that fails or misses its deadline is cancelled and reported (TIMEOUT / ERROR); its outcome
carries no candidates. Legs that need the query vector share one embedding of the query,
started at once alongside the other legs: the critical path is max(lexical, embed + vector).
An embedding failure fails only those legs.

The graph second stage (off by default; RecallPolicy.graph_second_stage): once the fan-out is
back, and when enough of the budget is left, the graph leg is asked again with the other legs'
best hits (fused) as extra seeds, and its second list replaces its first in fusion. It is
optional work: when it is skipped, late or failing, the first list is fused and the recall is
not degraded.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from opentelemetry import trace

from recallmesh.gateway.metrics import LEG_FAILURES, SECOND_STAGE_LEG, SECOND_STAGES
from recallmesh.gateway.settings import SENSITIVE_LEGS
from recallmesh.policy import FusionSettings
from recallmesh.services.embedding.client import Embeddings
from recallmesh.shared.errors import DeadlineExceeded, InvalidArgument, Unavailable
from recallmesh.shared.legs import GRAPH_LEG, LegName, LegState
from recallmesh.shared.telemetry import LEG_LATENCY_SECONDS
from recallmesh.wire.fusion import LegCandidate, LegList
from recallmesh.wire.retriever import LegAnswer, LegQuery

log = logging.getLogger(__name__)
tracer = trace.get_tracer("recallmesh.gateway")

MIN_LEG_TIMEOUT_S = 0.005

# Embeds one query text within a timeout; raises LegTimeout / LegError.
EmbedQuery = Callable[[str, float], Awaitable[Embeddings]]
# Embeds stored texts (the document side of the model) within a timeout; raises LegTimeout /
# LegError.
EmbedDocuments = Callable[[list[str], float], Awaitable[Embeddings]]
# Fuses ranked lists within a timeout, wherever the recall's fusions run (fusion_call.py):
# the memory ids, best first.
FuseIds = Callable[[list[LegList], FusionSettings, float], Awaitable[list[str]]]


class LegTimeout(Exception):
    """The leg reported that its deadline passed."""


class LegError(Exception):
    """The leg failed; the message says how (the status code name, never the peer's text)."""


class Leg(Protocol):
    name: LegName
    needs_vector: bool  # searched with the embedded query

    async def search(self, query: LegQuery, timeout_s: float) -> LegAnswer: ...


@dataclass
class LegOutcome:
    leg: LegName
    state: LegState
    latency_ms: float
    answer: LegAnswer | None = None
    detail: str = ""

    @property
    def candidates(self) -> list[LegCandidate]:
        return self.answer.candidates if self.answer else []


def answered_lists(outcomes: Sequence[LegOutcome], weights: dict[str, float],
                   exclude: str = "") -> list[LegList]:
    """The answered legs' candidate lists, weighted, for fusion."""
    return [LegList(o.leg, weights.get(o.leg, 1.0), o.answer.candidates, o.answer.score_range,
                    o.answer.score_scale, o.leg not in SENSITIVE_LEGS, o.answer.score_floor)
            for o in outcomes
            if o.leg != exclude and o.state == "OK" and o.answer is not None]


async def _search(
    leg: Leg, query: LegQuery, timeout_s: float, embedding: asyncio.Future[Embeddings] | None
) -> LegAnswer:
    if not leg.needs_vector:
        return await leg.search(query, timeout_s)
    if embedding is None:
        raise LegError("no embedding service configured")
    start = time.perf_counter()
    embedded: Embeddings = await asyncio.shield(embedding)  # shared by every vector leg
    query = replace(query, vector=tuple(embedded.vectors[0]), vector_model=embedded.model_id)
    remaining = timeout_s - (time.perf_counter() - start)
    return await leg.search(query, max(remaining, MIN_LEG_TIMEOUT_S))


async def run_leg(
    leg: Leg, query: LegQuery, timeout_s: float,
    embedding: asyncio.Future[Embeddings] | None = None,
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


async def graph_second_stage(
    ran: list[LegOutcome],
    leg: Leg | None,
    leg_query: LegQuery,
    settings: FusionSettings,
    weights: dict[str, float],
    seeds_wanted: int,
    left_s: float,
    min_ms: int,
    embedding: asyncio.Future[Embeddings] | None,
    fuse_ids: FuseIds,
) -> None:
    """Ask the graph leg again, seeded by the other legs' best hits (fused by `fuse_ids`),
    with `left_s` of the budget less the fusion's time; on success its new list replaces the
    first one (in place, in `ran`)."""
    graph = next((o for o in ran if o.leg == GRAPH_LEG), None)
    if graph is None or leg is None or graph.state != "OK":
        return  # a failed first call is reported as such; no second try
    others = answered_lists(ran, weights, exclude=GRAPH_LEG)
    start = time.perf_counter()
    seeds = tuple((await fuse_ids(others, settings, left_s))[:seeds_wanted]) if others else ()
    left_s -= time.perf_counter() - start
    if not seeds or left_s * 1000 < min_ms:
        SECOND_STAGES.labels("skipped").inc()
        graph.detail = (
            "second stage skipped: no other leg had a hit" if not seeds else
            f"second stage skipped: {max(left_s, 0) * 1000:.0f} ms of the budget left"
        )
        return
    second = await run_leg(leg, replace(leg_query, seed_memory_ids=seeds), left_s, embedding,
                           label=SECOND_STAGE_LEG)
    graph.latency_ms += second.latency_ms
    if second.state == "OK":
        SECOND_STAGES.labels("ran").inc()
        graph.answer = second.answer
        graph.detail = f"second stage: seeded by the best {len(seeds)} hits of the others"
    else:
        SECOND_STAGES.labels("failed").inc()
        graph.detail = f"second stage {second.state}: {second.detail}; first list fused"


def none_answered(ran: Sequence[LegOutcome], budget_ms: int | None) -> Exception:
    """What a recall that no leg answered raises: the request's fault where every leg says
    so or the request's own budget (`budget_ms`) ran out for every one (a retry fails the
    same way), else UNAVAILABLE."""
    failed = ", ".join(f"{o.leg} ({o.state}: {o.detail})" for o in ran)
    if ran and all(o.detail == "INVALID_ARGUMENT" for o in ran):
        return InvalidArgument(f"no retrieval leg could read the request: {failed}")
    if ran and budget_ms is not None and all(o.state == "TIMEOUT" for o in ran):
        return DeadlineExceeded(
            f"no retrieval leg answered within the request's budget_ms "
            f"({budget_ms} ms): {failed}; ask with a larger budget_ms, or none "
            "(the server's)")
    return Unavailable(f"no retrieval leg answered: {failed}")
