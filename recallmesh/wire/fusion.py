"""What crosses the fusion contract: the ranked leg lists, the fusion settings and the fused
hits as Python values, and FuseRequest / FuseResponse <-> those values (shared by the fusion
service, the gateway's fusion client and its in-process fallback, so every side reads the
contract the same way). The fusion math itself is recallmesh/services/fusion/core.py."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from recallmesh.policy import (
    DEFAULT_EXACT_BONUS,
    DEFAULT_IMPORTANCE_STRENGTH,
    RRF_K,
    FusionSettings,
)
from recallmesh.shared.errors import InvalidArgument
from recallmesh.v1 import fusion_pb2
from recallmesh.wire.enums import FUSION_METHOD_NAMES, FUSION_METHOD_VALUES, SORT_BY_VALUES, sort_by


@dataclass(frozen=True)
class LegCandidate:
    memory_id: str
    score: float  # the leg's native score, higher is better
    importance: float = 0.5
    exact_match: bool = False
    sensitive: bool = False  # only legs not blind_to_sensitive can return it


@dataclass(frozen=True)
class LegList:
    leg: str
    weight: float
    candidates: Sequence[LegCandidate]
    score_range: tuple[float, float] | None = None  # theoretical (min, max), if any
    score_scale: float | None = None  # the score of a full match, if the leg can say
    blind_to_sensitive: bool = False  # the leg cannot return sensitive memories
    score_floor: float | None = None  # an unrelated candidate's typical score, if known


@dataclass(frozen=True)
class Contribution:
    leg: str
    rank: int  # 1-based
    score: float  # the leg's native score


@dataclass
class FusedCandidate:
    memory_id: str
    score: float = 0.0
    importance: float = 0.5
    exact_match: bool = False
    sensitive: bool = False
    contributions: list[Contribution] = field(default_factory=list)

    @property
    def best_rank(self) -> int:
        return min(c.rank for c in self.contributions)


MAX_LISTS = 16
MAX_CANDIDATES = 1000


def settings_to_proto(settings: FusionSettings) -> fusion_pb2.FusionSettings:
    return fusion_pb2.FusionSettings(
        method=FUSION_METHOD_VALUES[settings.method],
        rrf_k=settings.rrf_k,
        importance_strength=settings.importance_strength,
        exact_bonus=settings.exact_bonus,
        sort_by=SORT_BY_VALUES[settings.sort_by],
    )


def settings_from_proto(msg: fusion_pb2.FusionSettings) -> FusionSettings:
    if msg.method not in FUSION_METHOD_NAMES:
        raise InvalidArgument(f"unknown fusion method {msg.method}")
    strength = msg.importance_strength if msg.HasField("importance_strength") else (
        DEFAULT_IMPORTANCE_STRENGTH)
    bonus = msg.exact_bonus if msg.HasField("exact_bonus") else DEFAULT_EXACT_BONUS
    try:
        return FusionSettings(
            method=FUSION_METHOD_NAMES[msg.method],
            rrf_k=msg.rrf_k or RRF_K,
            importance_strength=strength,
            exact_bonus=bonus,
            sort_by=sort_by(msg.sort_by),
        )
    except ValueError as exc:
        raise InvalidArgument(str(exc)) from None


def lists_to_proto(lists: Sequence[LegList], request: fusion_pb2.FuseRequest) -> None:
    for lst in lists:
        msg = request.lists.add(leg=lst.leg, weight=lst.weight)
        if lst.score_range is not None:
            msg.score_min, msg.score_max = lst.score_range
        if lst.score_scale is not None:
            msg.score_scale = lst.score_scale
        if lst.score_floor is not None:
            msg.score_floor = lst.score_floor
        msg.blind_to_sensitive = lst.blind_to_sensitive
        for c in lst.candidates:
            msg.candidates.add(memory_id=c.memory_id, score=c.score, importance=c.importance,
                               exact_match=c.exact_match, sensitive=c.sensitive)


def lists_from_proto(msgs: Sequence[fusion_pb2.RankedList]) -> list[LegList]:
    if len(msgs) > MAX_LISTS:
        raise InvalidArgument(f"at most {MAX_LISTS} lists, got {len(msgs)}")
    lists, names = [], set()
    for i, msg in enumerate(msgs):
        if not msg.leg or msg.leg in names:
            raise InvalidArgument(f"lists[{i}].leg must be a non-empty, unique name")
        names.add(msg.leg)
        if not (math.isfinite(msg.weight) and msg.weight >= 0):
            raise InvalidArgument(f"lists[{i}].weight must be finite and >= 0, got {msg.weight}")
        if len(msg.candidates) > MAX_CANDIDATES:
            raise InvalidArgument(f"lists[{i}] holds more than {MAX_CANDIDATES} candidates")
        bounds = None
        if msg.HasField("score_min") and msg.HasField("score_max"):
            bounds = (msg.score_min, msg.score_max)
            if not all(math.isfinite(b) for b in bounds) or bounds[1] <= bounds[0]:
                raise InvalidArgument(f"lists[{i}]: score_min must be below score_max")
        scale = msg.score_scale if msg.HasField("score_scale") else None
        if scale is not None and not (math.isfinite(scale) and scale > 0):
            raise InvalidArgument(f"lists[{i}].score_scale must be finite and > 0, got {scale}")
        floor = msg.score_floor if msg.HasField("score_floor") else None
        if floor is not None and not math.isfinite(floor):
            raise InvalidArgument(f"lists[{i}].score_floor must be finite, got {floor}")
        candidates = []
        for j, c in enumerate(msg.candidates):
            if not c.memory_id:
                raise InvalidArgument(f"lists[{i}].candidates[{j}].memory_id is empty")
            if not (math.isfinite(c.importance) and 0.0 <= c.importance <= 1.0):
                raise InvalidArgument(f"lists[{i}].candidates[{j}].importance must be in [0, 1]")
            candidates.append(LegCandidate(c.memory_id, c.score, c.importance, c.exact_match,
                                           c.sensitive))
        lists.append(LegList(msg.leg, msg.weight, candidates, bounds, scale,
                             msg.blind_to_sensitive, floor))
    return lists


def hits_to_proto(hits: Sequence[FusedCandidate], response: fusion_pb2.FuseResponse) -> None:
    for h in hits:
        msg = response.hits.add(memory_id=h.memory_id, score=h.score)
        for c in h.contributions:
            msg.contributions.add(leg=c.leg, rank=c.rank, score=c.score)


def hits_from_proto(msgs: Sequence[fusion_pb2.FusedHit]) -> list[FusedCandidate]:
    return [
        FusedCandidate(
            memory_id=h.memory_id,
            score=h.score,
            contributions=[Contribution(c.leg, c.rank, c.score) for c in h.contributions],
        )
        for h in msgs
    ]
