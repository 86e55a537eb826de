"""Merging ranked leg lists into one order: weighted Reciprocal Rank Fusion.

score(d) = sum over legs of weight_leg / (k + rank_leg(d)), ranks 1-based; a
leg that did not return d contributes 0. Ties break on the best (lowest) rank
any leg gave the candidate, then on the memory id, so the order is
deterministic and, with a single leg, exactly that leg's order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

RRF_K = 60


@dataclass(frozen=True)
class Contribution:
    leg: str
    rank: int  # 1-based
    score: float  # the leg's native score


@dataclass
class FusedCandidate:
    memory_id: str
    score: float = 0.0
    contributions: list[Contribution] = field(default_factory=list)

    @property
    def best_rank(self) -> int:
        return min(c.rank for c in self.contributions)


def rrf_fuse(
    ranked: Mapping[str, Sequence[tuple[str, float]]],
    weights: Mapping[str, float] | None = None,
    k: int = RRF_K,
) -> list[FusedCandidate]:
    """Fuse {leg: [(memory_id, native_score), ...best first]} into one list."""
    fused: dict[str, FusedCandidate] = {}
    for leg in sorted(ranked):  # leg order does not matter; sorted keeps it reproducible
        weight = 1.0 if weights is None else weights.get(leg, 1.0)
        seen: set[str] = set()
        for position, (memory_id, native) in enumerate(ranked[leg], start=1):
            if memory_id in seen:
                continue  # a leg listing an id twice counts once, at its best rank
            seen.add(memory_id)
            candidate = fused.setdefault(memory_id, FusedCandidate(memory_id))
            candidate.score += weight / (k + position)
            candidate.contributions.append(Contribution(leg, position, native))
    return sorted(fused.values(), key=lambda c: (-c.score, c.best_rank, c.memory_id))
