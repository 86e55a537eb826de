"""The learned-ranking lab (benchmarks/replay/learned.py): what a candidate's features say,
and that the fit ranks by the evidence that predicts relevance."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.replay.learned import features, fit


def test_features_read_each_leg_on_its_own_scale():
    q = {"legs": {"lexical": [["a", 1, 6.0], ["b", 2, 3.0]],
                  "vector": [["b", 1, 0.9], ["c", 2, 0.5]]},
         "scale": {"lexical": 12.0}, "floor": {"vector": 0.5}}
    ids, rows = features(q)
    assert ids == ["a", "b", "c"]
    assert rows[:, 0].tolist() == [1.0, 1.0, 1.0]  # the intercept
    lexical, vector = rows[:, 1:7], rows[:, 7:13]
    assert lexical[:, 0].tolist() == [1.0, 1.0, 0.0]  # returned it
    assert lexical[:, 1].tolist() == pytest.approx([0.5, 0.25, 0.0])  # share of the query's idf
    assert lexical[:, 4].tolist() == pytest.approx([0.5] * 3)  # the leg's best evidence
    assert vector[:, 1].tolist() == pytest.approx([0.0, 0.8, 0.0])  # cosine above the floor
    assert vector[:, 3].tolist() == pytest.approx([0.0, 1.0, 0.5])  # 1 / rank


def test_the_fit_weighs_the_feature_that_predicts_relevance():
    rng = np.random.default_rng(7)
    x = np.c_[np.ones(400), rng.random((400, 2))]
    y = (x[:, 2] > 0.6).astype(float)  # only the second feature matters
    beta = fit(x, y, np.full(400, 1 / 400))
    assert beta[2] > 0 and abs(beta[2]) > 3 * abs(beta[1])
