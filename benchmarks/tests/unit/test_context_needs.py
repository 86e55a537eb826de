"""The agent-task Context report's measures (benchmarks/quality/context_needs.py)."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.quality.context_needs import ceiling, floors, quartiles
from benchmarks.quality.relevance import Rows


def rows() -> Rows:
    """Two task prompts (needing a, b / c) and one about nothing stored, three hits each."""
    questions = [
        {"answerable": True, "relevant": ["a", "b"], "ranked": ["a", "x", "b"], "cluster": "p1"},
        {"answerable": True, "relevant": ["c"], "ranked": ["y", "z", "c"], "cluster": "p2"},
        {"answerable": False, "kind": "unanswerable", "relevant": [], "ranked": ["a", "c", "y"],
         "cluster": "p1"},
    ]
    n = 9
    return Rows("agent_tasks_dev", np.zeros((n, 1)), np.zeros(n), np.repeat([0, 1, 2], 3),
                np.zeros(n), questions)


def test_the_ceiling_is_each_prefix_of_the_ranking():
    at = {c["k"]: c for c in ceiling(rows())}
    assert at[1]["kept"] == pytest.approx((0.5 + 0.0) / 2)
    assert at[1]["precision"] == pytest.approx(0.5)
    assert at[3]["kept"] == pytest.approx(1.0) and at[3]["precision"] == pytest.approx(0.5)


def test_a_floor_empties_the_prompts_whose_best_hit_is_below_it():
    estimates = [[0.3, 0.1, 0.05], [0.09, 0.05, 0.02], [0.12, 0.01, 0.0]]
    by = {f["floor"]: f for f in floors(rows(), estimates)}
    assert by[0.1]["tasks_emptied"] == pytest.approx(0.5)  # the second task's best is 0.09
    assert by[0.1]["empty"] == {"unanswerable": 0.0}
    assert by[0.15]["empty"] == {"unanswerable": 1.0}


def test_quartiles_split_the_needed_hits_from_the_others():
    estimates = [[0.3, 0.1, 0.05], [0.09, 0.05, 0.02], [0.12, 0.01, 0.0]]
    q = quartiles(rows(), estimates)
    assert q["needed"][1] == pytest.approx(np.median([0.3, 0.05, 0.02]))
    assert q["others"][1] == pytest.approx(np.median([0.1, 0.09, 0.05]))
