"""FuseRequest / FuseResponse <-> the fusion core's values (shared by the service and the
gateway's client, so both sides read the contract the same way)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from recallmesh.services.fusion.core import (
    DEFAULT_EXACT_BONUS,
    DEFAULT_IMPORTANCE_STRENGTH,
    RRF_K,
    Contribution,
    FusedCandidate,
    FusionSettings,
    LegCandidate,
    LegList,
)
from recallmesh.shared.errors import InvalidArgument
from recallmesh.v1 import fusion_pb2
from recallmesh.wire.validation import SORT_BY_VALUES, sort_by

METHOD_VALUES = {
    "rrf": fusion_pb2.FUSION_METHOD_RRF,
    "cc": fusion_pb2.FUSION_METHOD_CC,
    "cc_bounded": fusion_pb2.FUSION_METHOD_CC_BOUNDED,
    "calibrated": fusion_pb2.FUSION_METHOD_CALIBRATED,
}
METHOD_NAMES = {fusion_pb2.FUSION_METHOD_UNSPECIFIED: "rrf"} | {
    v: k for k, v in METHOD_VALUES.items()
}
MAX_LISTS = 16
MAX_CANDIDATES = 1000


def settings_to_proto(settings: FusionSettings) -> Any:
    return fusion_pb2.FusionSettings(
        method=METHOD_VALUES[settings.method],
        rrf_k=settings.rrf_k,
        importance_strength=settings.importance_strength,
        exact_bonus=settings.exact_bonus,
        sort_by=SORT_BY_VALUES[settings.sort_by],
    )


def settings_from_proto(msg: Any) -> FusionSettings:
    if msg.method not in METHOD_NAMES:
        raise InvalidArgument(f"unknown fusion method {msg.method}")
    strength = msg.importance_strength if msg.HasField("importance_strength") else (
        DEFAULT_IMPORTANCE_STRENGTH)
    bonus = msg.exact_bonus if msg.HasField("exact_bonus") else DEFAULT_EXACT_BONUS
    try:
        return FusionSettings(
            method=METHOD_NAMES[msg.method],
            rrf_k=msg.rrf_k or RRF_K,
            importance_strength=strength,
            exact_bonus=bonus,
            sort_by=sort_by(msg.sort_by),
        )
    except ValueError as exc:
        raise InvalidArgument(str(exc)) from None


def lists_to_proto(lists: Sequence[LegList], request: Any) -> None:
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


def lists_from_proto(msgs: Any) -> list[LegList]:
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


def hits_to_proto(hits: Sequence[FusedCandidate], response: Any) -> None:
    for h in hits:
        msg = response.hits.add(memory_id=h.memory_id, score=h.score)
        for c in h.contributions:
            msg.contributions.add(leg=c.leg, rank=c.rank, score=c.score)


def hits_from_proto(msgs: Any) -> list[FusedCandidate]:
    return [
        FusedCandidate(
            memory_id=h.memory_id,
            score=h.score,
            contributions=[Contribution(c.leg, c.rank, c.score) for c in h.contributions],
        )
        for h in msgs
    ]
