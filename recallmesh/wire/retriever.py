"""What crosses the retriever contract (RetrieverService.Search, which every retrieval leg
serves): the gateway's question to a leg and a leg's answer as Python values, and both sides'
conversions: the gateway writes a SearchRequest and reads a SearchResponse here, a leg reads
its SearchRequest here (each leg's servicer writes its own SearchResponse from its core's
result)."""

from __future__ import annotations

import math
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from recallmesh.policy import MAX_LEG_DEPTH, MAX_SEED_MEMORIES, LexicalRanking, SortBy, checked
from recallmesh.shared.errors import InvalidArgument
from recallmesh.v1 import retriever_pb2
from recallmesh.wire.enums import SORT_BY_VALUES, sort_by
from recallmesh.wire.filters import Filters, filters_from_proto, filters_to_proto
from recallmesh.wire.fusion import LegCandidate
from recallmesh.wire.validation import memory_id, namespace, query_text


@dataclass(frozen=True)
class LegQuery:
    namespace: str
    query: str
    k: int
    filters: Filters
    sort_by: SortBy
    vector: Sequence[float] = ()  # filled in for legs that need it
    vector_model: str = ""
    # request overrides for the lexical leg ("" / None: its own)
    lexical_ranking: LexicalRanking | Literal[""] = ""
    bm25_k1: float | None = None
    bm25_b: float | None = None
    seed_memory_ids: tuple[str, ...] = ()  # the graph second stage's seed memories


@dataclass(frozen=True)
class LegAnswer:
    candidates: list[LegCandidate]
    score_range: tuple[float, float] | None = None  # the leg's theoretical score range
    score_scale: float | None = None  # the leg's score of a full match for this query
    score_floor: float | None = None  # an unrelated memory's typical score (vector: model's)
    reasons: dict[str, str] = field(default_factory=dict)  # memory id -> why (explain)


def search_request_to_proto(query: LegQuery) -> retriever_pb2.SearchRequest:
    """The gateway's question to a leg."""
    request = retriever_pb2.SearchRequest(
        namespace=query.namespace,
        query=query.query,
        k=query.k,
        sort_by=SORT_BY_VALUES[query.sort_by],
        query_vector=query.vector,
        vector_model=query.vector_model,
        ranking=query.lexical_ranking,
        seed_memory_ids=query.seed_memory_ids,
    )
    if query.bm25_k1 is not None:
        request.bm25_k1 = query.bm25_k1
    if query.bm25_b is not None:
        request.bm25_b = query.bm25_b
    filters_to_proto(query.filters, request.filters)
    return request


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


def leg_answer(response: retriever_pb2.SearchResponse) -> LegAnswer:
    """A leg's answer as the gateway fuses it. A leg is a separate process: a malformed id
    never reaches the hydration query, an importance is clamped to [0, 1], and a malformed
    scale or floor is dropped (fused as if the leg gave none)."""
    candidates = [
        LegCandidate(c.memory_id, c.score, min(max(c.importance, 0.0), 1.0), c.exact_match,
                     c.sensitive)
        for c in response.candidates
        if _is_uuid(c.memory_id)
    ]
    bounds = None
    if response.HasField("score_min") and response.HasField("score_max"):
        bounds = (response.score_min, response.score_max)
    scale = response.score_scale if response.HasField("score_scale") else None
    if scale is not None and not (math.isfinite(scale) and scale > 0):
        scale = None  # a leg's malformed scale: fused as if it gave none
    floor = response.score_floor if response.HasField("score_floor") else None
    if floor is not None and not math.isfinite(floor):
        floor = None  # a leg's malformed floor: measured from the list's median
    reasons = {c.memory_id: c.reason for c in response.candidates if c.reason}
    return LegAnswer(candidates, bounds, scale, floor, reasons)


def leg_query_from_proto(request: retriever_pb2.SearchRequest) -> LegQuery:
    """A leg's SearchRequest, validated, as the LegQuery the gateway sent
    (search_request_to_proto's inverse). What only one leg needs (the vector leg's query
    vector) is that leg's to require."""
    ns, query = namespace(request.namespace), query_text(request.query)
    if not 1 <= request.k <= MAX_LEG_DEPTH:
        raise InvalidArgument(f"k must be within 1..{MAX_LEG_DEPTH}, got {request.k}")
    return LegQuery(
        namespace=ns,
        query=query,
        k=request.k,
        filters=filters_from_proto(request.filters if request.HasField("filters") else None),
        sort_by=sort_by(request.sort_by),
        vector=request.query_vector,  # read as it came (the leg converts it once)
        vector_model=request.vector_model,
        lexical_ranking=(checked("lexical_ranking", request.ranking, "ranking")
                         if request.ranking.strip() else ""),
        bm25_k1=(checked("bm25_k1", request.bm25_k1, "bm25_k1")
                 if request.HasField("bm25_k1") else None),
        bm25_b=checked("bm25_b", request.bm25_b, "bm25_b") if request.HasField("bm25_b") else None,
        seed_memory_ids=_seed_memory_ids(request),
    )


def _seed_memory_ids(request: retriever_pb2.SearchRequest) -> tuple[str, ...]:
    """A SearchRequest's seed memories: distinct UUIDs, at most MAX_SEED_MEMORIES."""
    if len(request.seed_memory_ids) > MAX_SEED_MEMORIES:
        raise InvalidArgument(f"seed_memory_ids holds at most {MAX_SEED_MEMORIES} ids, "
                              f"got {len(request.seed_memory_ids)}")
    try:
        return tuple(dict.fromkeys(memory_id(v) for v in request.seed_memory_ids))
    except InvalidArgument:
        raise InvalidArgument("seed_memory_ids must be UUIDs") from None
