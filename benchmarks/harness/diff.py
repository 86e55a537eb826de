"""`python -m benchmarks diff A.json B.json`: did two result files answer the same?

Matches the queries of two OUTDIR/<config>.json files by query_id and compares their
`ranked_ids` in the top k (default: the files' k): how many are identical, how many hold the
same ids in another order, how many hold other ids; the overall metrics of both with B − A; and
the first differing queries with both rankings (`*` marks a relevant id). Made to show that a
refactor changed no answer: every query identical and every Δ zero.

Exit status 0 whatever the differences; 2 when a file cannot be read as a result file or the
two hold different query sets.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

IDENTICAL, REORDERED, OTHER_IDS = "identical", "same ids, other order", "other ids"


class DiffError(Exception):
    """The files cannot be compared (unreadable, not result files, different query sets)."""


def read_result(path: Path) -> dict:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DiffError(f"cannot read {path}: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("queries"), list):
        raise DiffError(f"{path} is not a result file (no per-query rows)")
    if not all(isinstance(r, dict) and "query_id" in r and "ranked_ids" in r
               for r in data["queries"]):
        raise DiffError(f"{path}: a query row without query_id or ranked_ids")
    return data


def kind_of(a: list[str], b: list[str], k: int) -> str:
    if a[:k] == b[:k]:
        return IDENTICAL
    return REORDERED if Counter(a[:k]) == Counter(b[:k]) else OTHER_IDS


def compare_results(a: dict, b: dict, k: int | None = None) -> dict:
    """Per-query kinds, the counts, and the overall metrics with B − A (JSON-ready)."""
    rows_a = {r["query_id"]: r for r in a["queries"]}
    rows_b = {r["query_id"]: r for r in b["queries"]}
    if len(rows_a) != len(a["queries"]) or len(rows_b) != len(b["queries"]):
        raise DiffError("a file lists one query_id twice")
    only_a, only_b = sorted(rows_a.keys() - rows_b.keys()), sorted(rows_b.keys() - rows_a.keys())
    if only_a or only_b:
        raise DiffError(
            f"the files hold different query sets: {len(only_a)} only in A "
            f"({', '.join(only_a[:5])}{', ...' if len(only_a) > 5 else ''}), {len(only_b)} only "
            f"in B ({', '.join(only_b[:5])}{', ...' if len(only_b) > 5 else ''})")
    k = k or max(a.get("k", 0), b.get("k", 0)) or 10
    queries = []
    for qid, ra in rows_a.items():
        rb = rows_b[qid]
        queries.append({"query_id": qid, "category": ra.get("category", ""),
                        "kind": kind_of(ra["ranked_ids"], rb["ranked_ids"], k),
                        "relevant_ids": ra.get("relevant_ids", []),
                        "a": ra["ranked_ids"][:k], "b": rb["ranked_ids"][:k]})
    counts = Counter(q["kind"] for q in queries)
    overall_a, overall_b = a.get("overall", {}), b.get("overall", {})
    metrics = {m: {"a": overall_a[m], "b": overall_b[m], "delta": overall_b[m] - overall_a[m]}
               for m in overall_a if m != "n" and m in overall_b}
    return {"k": k, "queries": len(queries),
            "counts": {kind: counts.get(kind, 0) for kind in (IDENTICAL, REORDERED, OTHER_IDS)},
            "metrics": metrics,
            "differing": [q for q in queries if q["kind"] != IDENTICAL]}


def _ranking(ids: list[str], relevant: set[str]) -> str:
    return ", ".join(f"{i}*" if i in relevant else i for i in ids) or "(nothing)"


def _label(path: Path, data: dict) -> str:
    commit = str(data.get("git_commit", "?"))[:10]
    return f"{path} (config {data.get('config', '?')}, commit {commit})"


def text_report(result: dict, path_a: Path, a: dict, path_b: Path, b: dict, show: int) -> str:
    counts, n = result["counts"], result["queries"]
    lines = [f"A: {_label(path_a, a)}", f"B: {_label(path_b, b)}",
             f"{n} queries matched by query_id, top {result['k']} compared:"]
    lines += [f"  {kind:22} {count:6}" for kind, count in counts.items()]
    if result["metrics"]:
        lines += ["", f"  {'metric':22} {'A':>8} {'B':>8} {'B − A':>8}"]
        lines += [f"  {m:22} {v['a']:8.4f} {v['b']:8.4f} {v['delta']:+8.4f}"
                  for m, v in result["metrics"].items()]
    differing = result["differing"]
    if differing and show > 0:
        lines += ["", f"First {min(show, len(differing))} of {len(differing)} differing queries "
                  "(* = relevant):"]
        for q in differing[:show]:
            relevant = set(q["relevant_ids"])
            lines += [f"  {q['query_id']} ({q['category']}): {q['kind']}",
                      f"    A: {_ranking(q['a'], relevant)}",
                      f"    B: {_ranking(q['b'], relevant)}"]
    return "\n".join(lines) + "\n"


def diff(path_a: Path, path_b: Path, k: int | None = None, show: int = 5,
         json_to: Path | None = None) -> str:
    """The printed report; with `json_to`, also the counts, metrics and every differing query
    as JSON. Raises DiffError (exit status 2 from the command line)."""
    a, b = read_result(path_a), read_result(path_b)
    result = compare_results(a, b, k)
    if json_to is not None:
        json_to.parent.mkdir(parents=True, exist_ok=True)
        json_to.write_text(json.dumps({"a": str(path_a), "b": str(path_b), **result},
                                      indent=1) + "\n")
    return text_report(result, path_a, a, path_b, b, show)
