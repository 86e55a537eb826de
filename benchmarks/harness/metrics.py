"""Ranked-retrieval metrics with binary relevance, per query, macro-averaged.

recall@k  fraction of the query's relevant ids in the top k
nDCG@10   binary gains, 1/log2(rank+1) discount, ideal = all relevant first
MRR       1/rank of the first relevant hit in the returned list (0 if none)
session_recall_any@k / session_recall_all@k  LongMemEval's official session-level recall
              (`evaluate_retrieval_turn2session`, same file): every ranked turn is mapped to
              its session, the cut-off is widened from k until the top holds k distinct
              sessions (or the ranking ends), then 1 if any / every relevant session has a
              turn above it. The official ranking covers the whole haystack, so the harness
              asks for SESSION_DEPTH hits where a dataset has sessions; `session_cut` says
              whether a ranking ended before k distinct sessions (the score is then a lower
              bound).

LongMemEval's official retrieval metrics, per question, written from the definitions in
xiaowu0162/LongMemEval src/retrieval/eval_utils.py (`evaluate_retrieval`, `ndcg`, `dcg`;
run_retrieval.py averages them over the non-abstention questions):
recall_any@k  1 if any relevant id is in the top k
recall_all@k  1 if every relevant id is in the top k (1 when there is none, as there)
ndcg_any@k    binary gains; its DCG leaves ranks 1 and 2 undiscounted, then 1/log2(rank)
              (not 1/log2(rank+1) as ndcg@10 above); ideal = min(#relevant, k) hits first.
              A repeated id gains nothing (the official rankings never repeat one).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence

# The metric each set is judged by: nDCG@10 for document retrieval (BEIR's convention),
# recall@10 for the memories of a conversation.
PRIMARY = {"scifact": "ndcg@10", "xquad_en": "ndcg@10", "xquad_de": "ndcg@10",
           "xquad_zh": "ndcg@10",
           # a task needs several memories: the share of them in the first 5 (issue 66)
           "agent_tasks_dev": "recall@5", "agent_tasks_test": "recall@5"}


def primary(dataset: str) -> str:
    return PRIMARY.get(dataset, "recall@10")


METRICS = ("recall@5", "recall@10", "ndcg@10", "mrr")
# Computed for every query; the report shows them for LongMemEval (report.OFFICIAL).
LONGMEMEVAL_METRICS = ("recall_any@5", "recall_any@10", "recall_all@5", "recall_all@10",
                       "ndcg_any@5", "ndcg_any@10")


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


def any_at(ranked: Sequence[str], relevant: Iterable[str], k: int) -> float:
    return 1.0 if set(relevant).intersection(ranked[:k]) else 0.0


def all_at(ranked: Sequence[str], relevant: Iterable[str], k: int) -> float:
    return 1.0 if set(relevant) <= set(ranked[:k]) else 0.0


def _official_discount(rank: int) -> float:
    """LongMemEval's DCG discount at a 1-based rank: 1 at rank 1, 1/log2(rank) after."""
    return 1.0 if rank == 1 else 1 / math.log2(rank)


def ndcg_any_at(ranked: Sequence[str], relevant: Iterable[str], k: int) -> float:
    relevant = set(relevant)
    seen: set[str] = set()
    dcg = 0.0
    for rank, m in enumerate(ranked[:k], start=1):
        if m in relevant and m not in seen:
            dcg += _official_discount(rank)
        seen.add(m)
    ideal = sum(_official_discount(rank) for rank in range(1, min(len(relevant), k) + 1))
    return dcg / ideal if ideal else 0.0


SESSION_KS = (5, 10)
SESSION_METRICS = tuple(f"session_recall_{how}@{k}" for k in SESSION_KS for how in ("any", "all"))


def session_cut(ranked_sessions: Sequence[str], k: int) -> tuple[int, bool]:
    """The official widened cut-off: the smallest n >= k whose top n holds k distinct
    sessions, and whether the ranking held that many (False: n is its whole length)."""
    seen: set[str] = set()
    for n, session in enumerate(ranked_sessions, start=1):
        seen.add(session)
        if n >= k and len(seen) >= k:
            return n, True
    return len(ranked_sessions), False


def session_recall(ranked_sessions: Sequence[str], relevant_sessions: Iterable[str],
                   k: int) -> tuple[float, float]:
    """(any, all) of LongMemEval's session-level recall at k (see the module docstring)."""
    relevant = set(relevant_sessions)
    n, _ = session_cut(ranked_sessions, k)
    found = set(ranked_sessions[:n])
    return (1.0 if relevant & found else 0.0), (1.0 if relevant <= found else 0.0)


def session_metrics(ranked_sessions: Sequence[str], relevant_sessions: Iterable[str]
                    ) -> dict[str, float]:
    relevant = set(relevant_sessions)
    out: dict[str, float] = {}
    for k in SESSION_KS:
        out[f"session_recall_any@{k}"], out[f"session_recall_all@{k}"] = session_recall(
            ranked_sessions, relevant, k)
    return out


def per_query(ranked: Sequence[str], relevant: Iterable[str]) -> dict[str, float]:
    relevant = set(relevant)
    return {
        "recall@5": recall_at(ranked, relevant, 5),
        "recall@10": recall_at(ranked, relevant, 10),
        "ndcg@10": ndcg_at(ranked, relevant, 10),
        "mrr": mrr(ranked, relevant),
        **{f"recall_any@{k}": any_at(ranked, relevant, k) for k in (5, 10)},
        **{f"recall_all@{k}": all_at(ranked, relevant, k) for k in (5, 10)},
        **{f"ndcg_any@{k}": ndcg_any_at(ranked, relevant, k) for k in (5, 10)},
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
