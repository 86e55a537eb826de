"""A recall's `explain` as something to draw: for each hit its fused score and each leg's rank
and native score; for each leg its state, latency and candidate count; the relevance floor;
and why the answer was degraded. Plain data: the recall page draws it as SVG bars, server
side (no script, so the strict Content-Security-Policy holds; docs/decisions/0019-console.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from recallmesh.client import LegContribution, RecallResult
from recallmesh.shared.legs import FAILED_LEG_STATES

BAR_WIDTH = 240  # px of a full bar (score 1.0, or the slowest leg)
_LOCAL_FUSION = re.compile(r"\(local: (?P<why>[^)]*)\)")


@dataclass(frozen=True)
class HitRow:
    position: int
    memory_id: str
    score: float
    bar: int  # px
    # one per ExplainView.legs (its reason blank when said once in the notes); None: the leg
    # did not find it
    cells: tuple[LegContribution | None, ...]


@dataclass(frozen=True)
class LegRow:
    leg: str
    state: str
    latency_ms: float
    candidates: int
    detail: str
    bar: int  # px, against the slowest leg


@dataclass(frozen=True)
class ExplainView:
    legs: tuple[str, ...]  # the columns: every leg that reported or contributed
    # a leg's reason when it is the same for every hit: said once, under the table
    notes: tuple[tuple[str, str], ...]
    hits: tuple[HitRow, ...]
    leg_rows: tuple[LegRow, ...]
    floor: float | None  # the relevance floor applied, when the gateway said
    floor_x: int | None  # px: where the floor falls on a score bar
    degraded: bool
    why_degraded: tuple[str, ...]
    fusion: str
    latency_ms: float


def _px(value: float, full: float) -> int:
    if full <= 0 or value <= 0:
        return 0
    return max(1, min(BAR_WIDTH, round(BAR_WIDTH * value / full)))


def explain_view(result: RecallResult) -> ExplainView:
    legs: list[str] = [leg.leg for leg in result.legs]
    for hit in result.hits:
        for contribution in hit.legs:
            if contribution.leg not in legs:
                legs.append(contribution.leg)
    top = max([1.0, *(hit.score for hit in result.hits)])  # calibrated scores are 0..1
    reasons: dict[str, set[str]] = {}
    for hit in result.hits:
        for c in hit.legs:
            reasons.setdefault(c.leg, set()).add(c.reason)
    common = {leg: next(iter(r)) for leg, r in reasons.items()
              if len(r) == 1 and next(iter(r)) and sum(
                  1 for hit in result.hits for c in hit.legs if c.leg == leg) > 1}
    rows = []
    for position, hit in enumerate(result.hits, start=1):
        by_leg = {c.leg: replace(c, reason="") if c.leg in common else c for c in hit.legs}
        rows.append(HitRow(position, hit.memory.id, hit.score, _px(hit.score, top),
                           tuple(by_leg.get(leg) for leg in legs)))
    slowest = max([0.0, *(leg.latency_ms for leg in result.legs)])
    leg_rows = tuple(LegRow(leg.leg, leg.state, leg.latency_ms, leg.candidates, leg.detail,
                            _px(leg.latency_ms, slowest)) for leg in result.legs)
    floor = getattr(result, "relevance_floor", None)
    why = [f"{leg.leg} {leg.state.lower()}" + (f": {leg.detail}" if leg.detail else "")
           for leg in result.legs if leg.state in FAILED_LEG_STATES]
    if local := _LOCAL_FUSION.search(result.fusion):
        why.append(f"fused in the gateway: {local.group('why')}")
    return ExplainView(
        legs=tuple(legs), notes=tuple((leg, common[leg]) for leg in legs if leg in common),
        hits=tuple(rows), leg_rows=leg_rows, floor=floor,
        floor_x=None if floor is None else _px(floor, top) if floor > 0 else 0,
        degraded=result.degraded, why_degraded=tuple(why), fusion=result.fusion,
        latency_ms=result.latency_ms)
