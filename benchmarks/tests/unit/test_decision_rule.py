"""The decision rule (benchmarks/replay/decision.py) on made-up splits, and the relevance
estimate's fit and reliability (benchmarks/quality/relevance.py): what each rule keeps, and that
a fitted model's estimates are calibrated where the truth is a logistic model."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.quality.relevance import Rows, fit, out_of_fold, predict, reliability
from benchmarks.replay.cross_validation import Setting, Split
from benchmarks.replay.decision import Versus, decide, family_of, simplicity, versus

SHIPPED = Setting("calibrated", 0.3, (5, 0.3, 0.2), 0.0, True)
CC = Setting("cc", 1.0, (5, 0.3, 0.2), 0.0, True)
CC_PLAIN = Setting("cc", 1.0, (0, 0.0, 0.0), 0.0, True)
RRF = Setting("rrf", 1.0, (0, 0.0, 0.0), 0.0, True)


def split(name: str, clusters: int, scores: dict[Setting, list[float]]) -> Split:
    per = len(next(iter(scores.values()))) // clusters
    pool = {"dataset": name, "queries": [{"query_id": f"{name}{i}", "cluster": f"c{i // per}"}
                                         for i in range(clusters * per)]}
    folds = np.array([i // per for i in range(clusters * per)])
    return Split(name, "recall@10", pool, folds, {s: np.array(v, float) for s, v in
                                                   scores.items()}, {})


def oof_of(splits: list[Split], setting: Setting) -> dict[str, dict[str, np.ndarray]]:
    """Each family's out-of-fold scores, here simply those of `setting`'s own."""
    families = ("vector alone", "cc", "calibrated", "calibrated (median)", "rrf")
    return {f: {s.name: s.scores[setting] for s in splits} for f in families}


def test_versus_counts_clusters_and_bootstraps_them():
    v = versus(np.array([1.0, 1.0, 0.0, 0.0]), np.array([0.0, 0.0, 0.0, 1.0]),
               ["a", "a", "b", "b"])
    assert (v.up, v.down) == (1, 1) and v.delta == pytest.approx(0.25)
    assert not v.clear_win and not v.clear_loss  # two clusters say nothing clear
    assert Versus(0.0, 0.0, 0.0, 0, 0).ahead and not Versus(0.0, 0.0, 0.0, 0, 0).wins


def test_a_dominated_default_changes_to_the_simplest_that_dominates_it():
    # cc is clearly ahead on "zh" (every cluster up) and level on "en"; so is plain cc, which
    # is simpler (no context), but it is clearly behind on "en": only cc dominates.
    up = [0.0] * 20
    en = split("en", 10, {SHIPPED: [0.5] * 20, CC: [0.5] * 20, CC_PLAIN: [0.2] * 20})
    zh = split("zh", 10, {SHIPPED: up, CC: [1.0] * 20, CC_PLAIN: [1.0] * 20})
    chosen, why = decide([en, zh], oof_of([en, zh], CC), SHIPPED, [CC, CC_PLAIN])
    assert chosen == CC and why[0].startswith("rule 0")


def test_an_undominated_default_stays_unless_a_simpler_setting_ties_with_it():
    level = {SHIPPED: [0.5, 0.6] * 10, CC_PLAIN: [0.5, 0.6] * 10, RRF: [0.4, 0.6] * 10}
    a, b = split("a", 10, level), split("b", 10, level)
    chosen, why = decide([a, b], oof_of([a, b], SHIPPED), SHIPPED, [CC_PLAIN, RRF])
    # RRF is behind (mean lower, clusters down): no tie; plain cc ties and is simpler
    assert chosen == CC_PLAIN and "rule 2" in why[0]
    assert simplicity(CC_PLAIN) < simplicity(SHIPPED)
    alone, _ = decide([a, b], oof_of([a, b], SHIPPED), SHIPPED, [RRF])
    assert alone == SHIPPED
    assert family_of(Setting("calibrated", 1, (0, 0, 0), 0, True, list_median=True)) == \
        "calibrated (median)"


def test_the_vector_leg_alone_is_a_family_of_its_own_and_the_simplest():
    from benchmarks.replay.decision import GRID
    from benchmarks.replay.decision import SHIPPED as INCUMBENT
    from recallmesh.policy import RecallPolicy
    alone = Setting("cc", 0.0, (0, 0.0, 0.0), 0.0, False)
    assert family_of(alone) == "vector alone" and family_of(CC_PLAIN) == "cc"
    assert simplicity(alone) < min(simplicity(s) for s in (CC_PLAIN, RRF, SHIPPED))
    assert alone in GRID and INCUMBENT in GRID
    assert INCUMBENT == Setting.of(RecallPolicy()).ranking  # the rule starts from what ships


def rows(name: str, n: int, seed: int, beta: tuple[float, float]) -> Rows:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 1))
    y = (rng.random(n) < 1 / (1 + np.exp(-(beta[0] + beta[1] * x[:, 0])))).astype(float)
    questions = [{"answerable": True, "kind": "answerable", "relevant": [], "ranked": [],
                  "cluster": str(i)} for i in range(n)]  # one hit per question
    return Rows(name, x, y, np.arange(n), np.arange(n) % 5, questions)


def test_the_fit_recovers_a_logistic_truth_and_is_calibrated_out_of_fold():
    a, b = rows("a", 4000, 1, (-1.0, 2.0)), rows("b", 4000, 2, (-1.0, 2.0))
    beta = fit(np.vstack([a.x, b.x]), np.concatenate([a.y, b.y]), np.ones(8000))
    assert beta == pytest.approx([-1.0, 2.0], abs=0.15)
    oof = out_of_fold([a, b])
    for s in (a, b):
        ece, table = reliability(oof[s.name], s.y)
        assert ece < 0.03
        assert sum(r["hits"] for r in table) == len(s.y)
    assert 0 < predict(beta, np.array([[0.0]]))[0] < 1
