"""Paired bootstrap confidence intervals of a metric difference between two configurations,
and the nearest-rank percentile and summary the latency figures use."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

B = 2000
SEED = 20261122


def percentile(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100) of `values` (any order); 0.0 when empty."""
    ordered = sorted(values)
    if not ordered:
        return 0.0
    index = min(len(ordered) - 1, max(0, round(p / 100 * len(ordered) + 0.5) - 1))
    return ordered[index]


def latency_summary(values: Sequence[float]) -> dict[str, float]:
    """p50, p95, p99, mean and max of latencies (any order); zeros when empty."""
    return {"p50": percentile(values, 50), "p95": percentile(values, 95),
            "p99": percentile(values, 99), "mean": float(np.mean(values)) if len(values) else 0.0,
            "max": max(values, default=0.0)}


@dataclass(frozen=True)
class Interval:
    delta: float  # mean per-query difference (config - baseline)
    low: float  # 2.5th percentile of the resampled mean differences
    high: float  # 97.5th percentile
    share_not_better: float  # fraction of resamples with delta <= 0

    @property
    def clear_of_zero(self) -> bool:
        return self.low > 0 or self.high < 0


def paired_bootstrap(deltas: Sequence[float], b: int = B, seed: int = SEED) -> Interval:
    """Resample queries with replacement."""
    d = np.asarray(deltas, dtype=float)
    if d.size == 0:
        return Interval(0.0, 0.0, 0.0, 1.0)
    rng = np.random.default_rng(seed)
    means = d[rng.integers(0, d.size, size=(b, d.size))].mean(axis=1)
    return Interval(float(d.mean()), float(np.percentile(means, 2.5)),
                    float(np.percentile(means, 97.5)), float((means <= 0).mean()))


def cluster_bootstrap(
    deltas: Sequence[float], clusters: Sequence[str], b: int = B, seed: int = SEED
) -> Interval:
    """Resample whole clusters (e.g. conversations) with replacement; mean over their queries."""
    d = np.asarray(deltas, dtype=float)
    names = sorted(set(clusters))
    if d.size == 0 or len(names) < 2:
        return paired_bootstrap(deltas, b, seed)
    index = {c: i for i, c in enumerate(names)}
    ids = np.array([index[c] for c in clusters])
    sums = np.bincount(ids, weights=d, minlength=len(names))
    counts = np.bincount(ids, minlength=len(names)).astype(float)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(names), size=(b, len(names)))
    means = sums[picks].sum(axis=1) / counts[picks].sum(axis=1)
    return Interval(float(d.mean()), float(np.percentile(means, 2.5)),
                    float(np.percentile(means, 97.5)), float((means <= 0).mean()))
