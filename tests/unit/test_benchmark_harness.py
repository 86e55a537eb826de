"""The benchmark harness: metrics and bootstrap by hand, and one end-to-end run of
`python -m benchmarks run` + `compare` on a tiny fixture against the real stack."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from benchmarks.harness import metrics
from benchmarks.harness.data import content_of, load
from benchmarks.harness.stats import cluster_bootstrap, paired_bootstrap

FIXTURE = Path(__file__).parents[1] / "fixtures" / "bench_tiny"
LOG3 = math.log2(3)


def test_metrics_by_hand():
    ranked = ["a", "x", "b", "y", "z", "c"]
    relevant = {"a", "b", "c"}
    assert metrics.recall_at(ranked, relevant, 5) == pytest.approx(2 / 3)
    assert metrics.recall_at(ranked, relevant, 10) == 1.0
    dcg = 1 + 1 / 2 + 1 / math.log2(7)  # ranks 1, 3, 6
    ideal = 1 + 1 / LOG3 + 1 / 2
    assert metrics.ndcg_at(ranked, relevant) == pytest.approx(dcg / ideal)
    assert metrics.mrr(["x", "y", "b"], relevant) == pytest.approx(1 / 3)
    assert metrics.mrr(["x"], relevant) == 0.0
    assert metrics.any_at(["s1", "s2"], {"s2"}, 1) == 0.0
    assert metrics.any_at(["s1", "s2"], {"s2"}, 2) == 1.0


def test_metrics_agree_with_ir_measures():
    """Our metrics against a maintained implementation (pytrec_eval via ir-measures) on
    random rankings: recall@5/@10, nDCG@10 with binary gains, reciprocal rank."""
    import random

    import ir_measures
    from ir_measures import RR, R, nDCG

    rng = random.Random(7)
    qrels, run_, ours = [], [], {}
    for q in range(200):
        pool = [f"d{i}" for i in range(30)]
        relevant = set(rng.sample(pool, rng.randint(1, 6)))
        ranked = rng.sample(pool, rng.randint(0, 10))
        qid = f"q{q}"
        qrels += [ir_measures.Qrel(qid, d, 1) for d in relevant]
        run_ += [ir_measures.ScoredDoc(qid, d, float(100 - i)) for i, d in enumerate(ranked)]
        ours[qid] = metrics.per_query(ranked, relevant)
    measures = {"recall@5": R @ 5, "recall@10": R @ 10, "ndcg@10": nDCG @ 10, "mrr": RR}
    theirs = {}
    for m in ir_measures.iter_calc(list(measures.values()), qrels, run_):
        theirs[(m.query_id, str(m.measure))] = m.value
    for qid, values in ours.items():
        for name, measure in measures.items():
            # pytrec_eval leaves out queries with an empty run; those score 0 here
            assert values[name] == pytest.approx(theirs.get((qid, str(measure)), 0.0)), (
                qid, name)


def test_bootstrap_intervals():
    better = paired_bootstrap([0.5] * 20 + [0.0] * 5)
    assert better.low > 0 and better.clear_of_zero and better.share_not_better == 0.0
    same = paired_bootstrap([0.0] * 30)
    assert not same.clear_of_zero and same.share_not_better == 1.0
    mixed = paired_bootstrap([1.0, -1.0] * 10)
    assert mixed.low < 0 < mixed.high
    assert paired_bootstrap([1.0, -1.0] * 10) == mixed  # fixed seed
    # Two conversations that disagree: resampling whole conversations widens the interval.
    deltas = [0.2] * 10 + [-0.1] * 10
    clusters = ["a"] * 10 + ["b"] * 10
    per_query, per_cluster = paired_bootstrap(deltas), cluster_bootstrap(deltas, clusters)
    assert per_cluster.high - per_cluster.low > per_query.high - per_query.low


def test_loader_scopes_and_stored_text():
    ds = load(FIXTURE)
    assert [q.query_id for q in ds.queries] == ["q1", "q2", "q3", "q4"]  # q5: nothing to find
    assert {q.scope for q in ds.queries} == {"c1", "c2"}
    assert len(ds.scopes["c1"]) == 4 and len(ds.scopes["c2"]) == 3
    caption = next(m for m in ds.scopes["c1"] if m.corpus_id == "c1:3")
    assert caption.content == (
        "Alice: Stripes the zebra loves carrots [shared image: a zebra eating]")
    assert caption.created_at.isoformat() == "2024-01-06T09:00:00+00:00"
    assert content_of({"title": "T", "text": "body"}) == "T\nbody"


def test_bm25_candidates_ask_for_the_default_with_only_k1_and_b_set():
    from benchmarks.harness.configs import BM25_CANDIDATES, BM25_CONFIG_NAMES, CONFIGS
    from benchmarks.relabel import same_as_default

    assert len(set(BM25_CONFIG_NAMES)) == len(BM25_CANDIDATES)
    plain = CONFIGS["default"].overrides(["lexical", "vector", "graph"])
    for name, (k1, b) in zip(BM25_CONFIG_NAMES, BM25_CANDIDATES, strict=True):
        msg = CONFIGS[name].overrides(["lexical", "vector", "graph"])
        assert (msg.bm25_k1, msg.bm25_b) == (k1, b)
        msg.ClearField("bm25_k1")
        msg.ClearField("bm25_b")
        assert msg == plain  # nothing else differs from the default's request
        assert not same_as_default(CONFIGS[name])


def test_a_bound_clear_of_zero_never_prints_as_zero():
    from benchmarks.harness.report import _fmt
    from benchmarks.harness.stats import Interval

    assert _fmt(Interval(0.0203, 0.0003, 0.0422, 0.03)) == "+0.020 [+0.0003, +0.042]"
    assert _fmt(Interval(-0.02, -0.042, -0.0004, 0.99)) == "-0.020 [-0.042, -0.0004]"
    assert _fmt(Interval(0.016, -0.0004, 0.033, 0.04)) == "+0.016 [-0.000, +0.033] (n.s.)"
    assert _fmt(Interval(0.0, 0.0, 0.0, 1.0)) == "+0.000 [+0.000, +0.000] (n.s.)"
    assert _fmt(Interval(0.1, 0.05, 0.2, 0.0)) == "+0.100 [+0.050, +0.200]"
