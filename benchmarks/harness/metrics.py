"""Ranked-retrieval metrics with binary relevance, per query, macro-averaged.

recall@k  fraction of the query's relevant ids in the top k
nDCG@10   binary gains, 1/log2(rank+1) discount, ideal = all relevant first
MRR       1/rank of the first relevant hit in the returned list (0 if none)
recall_any@k (sessions)  1 if any relevant session has a turn in the top k
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence

METRICS = ("recall@5", "recall@10", "ndcg@10", "mrr")


def recall_at(ranked: Sequence[str], relevant: Iterable[str], k: int) -> float:
    relevant = set(relevant)
    return len(relevant.intersection(ranked[:k])) / len(relevant) if relevant else 0.0


def ndcg_at(ranked: Sequence[str], relevant: Iterable[str], k: int = 10) -> float:
    relevant = set(relevant)
    dcg = sum(1 / math.log2(i + 2) for i, m in enumerate(ranked[:k]) if m in relevant)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(relevant), k)))
    return dcg / ideal if ideal else 0.0


def mrr(ranked: Sequence[str], relevant: Iterable[str]) -> float:
    relevant = set(relevant)
    return next((1 / (i + 1) for i, m in enumerate(ranked) if m in relevant), 0.0)


def any_at(ranked_sessions: Sequence[str], relevant_sessions: Iterable[str], k: int) -> float:
    return 1.0 if set(relevant_sessions).intersection(ranked_sessions[:k]) else 0.0


def per_query(ranked: Sequence[str], relevant: Iterable[str]) -> dict[str, float]:
    relevant = set(relevant)
    return {
        "recall@5": recall_at(ranked, relevant, 5),
        "recall@10": recall_at(ranked, relevant, 10),
        "ndcg@10": ndcg_at(ranked, relevant, 10),
        "mrr": mrr(ranked, relevant),
    }


def macro(rows: Sequence[dict[str, float]], names: Sequence[str]) -> dict[str, float]:
    return {n: sum(r[n] for r in rows) / len(rows) if rows else 0.0 for n in names}


def summarise(results: Sequence[dict], names: Sequence[str]) -> tuple[dict, dict]:
    """(overall, per_category) macro averages over per-query result rows."""
    overall = macro([r["metrics"] for r in results], names) | {"n": len(results)}
    groups: dict[str, list[dict]] = defaultdict(list)
    for r in results:
        groups[r["category"]].append(r["metrics"])
    per_category = {c: macro(rows, names) | {"n": len(rows)} for c, rows in sorted(groups.items())}
    return overall, per_category
