"""The misspellings benchmark's pieces without a stack (benchmarks/performance/typos.py,
benchmarks/replay/pool_compare.py)."""

from __future__ import annotations

import pytest

from benchmarks.performance.typos import misspell, served_lines
from benchmarks.replay.pool_compare import compare


def test_misspell_changes_one_inner_vowel_of_the_longest_word():
    assert misspell("Which medication does Jonas take?") == "Which medicetion does Jonas take?"
    assert misspell("Where is it?") == "Where is it?"  # no word of six letters or more
    asked = "What did Caroline research about adoption agencies?"
    typed = misspell(asked)
    assert typed != asked and len(typed) == len(asked)
    assert sum(a != b for a, b in zip(asked, typed, strict=True)) == 1
    assert misspell(asked) == typed  # deterministic


def test_served_lines_give_the_medians_ratio():
    runs = {"off": [{"p50": 30.0, "p95": 40.0}, {"p50": 32.0, "p95": 44.0}],
            "on": [{"p50": 31.0, "p95": 42.0}, {"p50": 33.0, "p95": 46.0}]}
    text = "\n".join(served_lines(runs, 100))
    assert "| off | 30.0 / 40.0, 32.0 / 44.0 | 31.00 | 42.00 |" in text
    assert f"| on / off | | {32 / 31:.3f} | {44 / 42:.3f} |" in text


def test_compare_counts_changes_by_cluster_and_lists_changed_questions():
    def q(recall: float, cluster: str, best: float = 0.5) -> dict:
        both = {"recall@10": recall, "ndcg@10": recall}
        return {"kind": "queries", "cluster": cluster, "text": "?", "best": best,
                "floor": both, "no_floor": both}

    base = {"s:c1:q1:0": q(1.0, "c1"), "s:c2:q2:0": q(1.0, "c2"), "s:c2:q3:0": q(0.0, "c2"),
            "s:c1:u1:0": {"kind": "unanswerable", "empty": 1.0}}
    new = {"s:c1:q1:0": q(0.0, "c1", 0.05), "s:c2:q2:0": q(1.0, "c2"), "s:c2:q3:0": q(1.0, "c2"),
           "s:c1:u1:0": {"kind": "unanswerable", "empty": 0.0}}
    r = compare(base, new)
    assert r["questions"] == 3 and r["clusters"] == 2
    assert r["floor:recall@10"]["base"] == pytest.approx(2 / 3)
    assert r["floor:recall@10"]["new"] == pytest.approx(2 / 3)
    assert (r["floor:recall@10"]["clusters_up"], r["floor:recall@10"]["clusters_down"]) == (1, 1)
    assert [c["recall@10"] for c in r["changed"]] == [[1.0, 0.0], [0.0, 1.0]]
    assert r["empty:unanswerable"] == {"questions": 1, "base": 1.0, "new": 0.0}
