"""Fusion: merge ranked leg lists into one order. The one implementation, used by the
fusion service and, when that service is down or late, in-process by the gateway.

Methods (score of candidate d; ranks 1-based; weights >= 0):
  rrf         sum over legs of w / (k + rank_leg(d)); a leg without d adds 0.
  cc          sum over legs of w * norm_leg(score), norm = min-max over the
              leg's returned list; a leg without d adds w * its minimum (0).
  cc_bounded  like cc, but a leg with a theoretical range (e.g. cosine
              -1..1) is normalised by that range; a leg without d adds w *
              the normalised minimum of what it returned.
  calibrated  sum over legs of w * cal_leg(score), on a scale that means the
              same in every query, never relative to the best of the list:
              a leg with a score scale (lexical BM25: the sum of the query
              terms' idf, what a memory holding every term once scores)
              gives min(score / scale, 1), the share of the query's evidence
              matched; a leg with a score floor (vector: the embedding model's
              calibrated cosine of an unrelated memory, recallmesh/embedding_models/
              calibration.py) gives max(0, (s - floor) / (top - floor)), top
              the leg's theoretical maximum (1 for cosine): the same for a
              memory whatever else its namespace holds; a leg with neither
              (the graph leg, a model without a calibration) gives its margin
              over the list's median, max(0, (s - m) / (top - m)), so the best
              of a list of noise is not a perfect match; a leg without d adds
              0 (it found no evidence for d).
Fusion is the ranker only: what a hit's score means to a caller (its relevance estimate) and
where a memory that a leg is blind to belongs (a sensitive one) are decided after it, by the
gateway (recallmesh/gateway/stages.py; docs/decisions/0012-ranking-apart-from-scoring.md).
Then, for sort_by=relevance:
  exact bonus  + exact_bonus * (best possible fused score) for candidates
               whose text contains every query term (a leg says so);
  prior        * ((1 - s) + s * importance), s = importance_strength.
sort_by=importance orders by importance, fused score second.
Ties break on the best rank any leg gave, then the memory id: deterministic (the gateway
then orders a recall's exact ties by their relevance estimates: stages.ties_by_estimate,
docs/decisions/0028-ties-by-the-estimate.md).
A leg of weight 0 is removed. Nothing else removes a candidate: every leg's
candidates are in the pool (the seeds' prototype barred some by construction).
With one contributing leg and sort_by=relevance, its own order is returned
unchanged (the lexical fallback is exactly the lexical ranking): prior and
bonus would only reorder what that leg already ranked by its own blend.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence

from recallmesh.policy import FusionSettings
from recallmesh.wire.fusion import Contribution, FusedCandidate, LegList


def _normaliser(scores: list[float],
                bounds: tuple[float, float] | None) -> Callable[[float], float]:
    if bounds is not None and bounds[1] > bounds[0]:
        low, high = bounds
    else:
        low, high = min(scores), max(scores)
    if high <= low:
        return lambda s: 1.0
    return lambda s: min(max((s - low) / (high - low), 0.0), 1.0)


def _calibrator(scores: list[float], lst: LegList) -> Callable[[float], float]:
    """The calibrated method's scale for one leg's list (see the module's docstring)."""
    if lst.score_scale is not None and lst.score_scale > 0:
        scale = lst.score_scale
        return lambda s: min(max(s / scale, 0.0), 1.0)
    top = lst.score_range[1] if lst.score_range is not None else max(scores)
    median = statistics.median(scores) if lst.score_floor is None else lst.score_floor
    if top <= median:
        return lambda s: 0.0
    return lambda s: min(max((s - median) / (top - median), 0.0), 1.0)


def _finite(x: float) -> float:
    return x if math.isfinite(x) else 0.0


def fuse(lists: Sequence[LegList], settings: FusionSettings | None = None) -> list[FusedCandidate]:
    """One ranked list, best first, with each candidate's per-leg contributions."""
    settings = settings or FusionSettings()
    for lst in lists:
        if not (math.isfinite(lst.weight) and lst.weight >= 0):
            raise ValueError(f"weight of leg {lst.leg!r} must be finite and >= 0")
    active = sorted(  # leg order must not matter; sorted keeps float sums reproducible
        (lst for lst in lists if lst.weight > 0 and lst.candidates), key=lambda lst: lst.leg
    )
    fused: dict[str, FusedCandidate] = {}
    per_leg: list[tuple[LegList, dict[str, tuple[int, float]]]] = []
    for lst in active:
        ranks: dict[str, tuple[int, float]] = {}
        for rank, c in enumerate(lst.candidates, start=1):
            if c.memory_id in ranks:
                continue  # a leg listing an id twice counts once, at its best rank
            ranks[c.memory_id] = (rank, _finite(c.score))
            candidate = fused.setdefault(c.memory_id, FusedCandidate(c.memory_id))
            candidate.contributions.append(Contribution(lst.leg, rank, c.score))
            candidate.importance = c.importance
            candidate.exact_match = candidate.exact_match or c.exact_match
            candidate.sensitive = candidate.sensitive or c.sensitive
        per_leg.append((lst, ranks))

    best_possible = 0.0
    for lst, ranks in per_leg:
        if settings.method == "rrf":
            for memory_id, (rank, _) in ranks.items():
                fused[memory_id].score += lst.weight / (settings.rrf_k + rank)
            best_possible += lst.weight / (settings.rrf_k + 1)
            continue
        scores = [score for _, score in ranks.values()]
        if settings.method == "calibrated":
            norm, floor = _calibrator(scores, lst), 0.0
        else:
            norm = _normaliser(scores,
                               lst.score_range if settings.method == "cc_bounded" else None)
            floor = min(norm(x) for x in scores)  # what a candidate this leg missed gets
        for memory_id, candidate in fused.items():
            hit = ranks.get(memory_id)
            candidate.score += lst.weight * (norm(hit[1]) if hit else floor)
        best_possible += lst.weight

    ranked = list(fused.values())
    if settings.sort_by == "importance":
        ranked.sort(key=lambda c: (-c.importance, -c.score, c.best_rank, c.memory_id))
        return ranked
    if len(active) == 1:  # exactly the one leg's order
        ranked.sort(key=lambda c: (c.best_rank, c.memory_id))
        return ranked
    for candidate in ranked:
        if candidate.exact_match and settings.exact_bonus > 0:
            candidate.score += settings.exact_bonus * best_possible
        if settings.sort_by == "relevance" and settings.importance_strength > 0:
            strength = settings.importance_strength
            candidate.score *= (1.0 - strength) + strength * candidate.importance
    ranked.sort(key=lambda c: (-c.score, c.best_rank, c.memory_id))
    return ranked
