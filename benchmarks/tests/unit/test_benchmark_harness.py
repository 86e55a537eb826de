"""The benchmark harness: metrics and bootstrap by hand, and one end-to-end run of
`python -m benchmarks run` + `compare` on a tiny fixture against the real stack."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

from benchmarks.harness import metrics
from benchmarks.harness.data import content_of, load
from benchmarks.harness.stats import cluster_bootstrap, paired_bootstrap

FIXTURE = Path(__file__).parents[1] / "fixtures" / "bench_tiny"
LOG3 = math.log2(3)


def random_cases(seed: int, most_relevant: int) -> dict[str, tuple[list[str], set[str]]]:
    """200 queries over 30 documents: (a random ranking of 0-10, 1-`most_relevant` relevant)."""
    rng = random.Random(seed)
    cases = {}
    for q in range(200):
        pool = [f"d{i}" for i in range(30)]
        relevant = set(rng.sample(pool, rng.randint(1, most_relevant)))
        ranked = rng.sample(pool, rng.randint(0, 10))
        cases[f"q{q}"] = (ranked, relevant)
    return cases


def ir_measures_input(cases: dict, skip: int = 0) -> tuple[list, list]:
    """(qrels, run) for ir-measures; `skip` leaves the first ids of every ranking out."""
    import ir_measures

    qrels = [ir_measures.Qrel(qid, d, 1) for qid, (_, relevant) in cases.items()
             for d in relevant]
    run = [ir_measures.ScoredDoc(qid, d, float(100 - i)) for qid, (ranked, _) in cases.items()
           for i, d in enumerate(ranked[skip:])]
    return qrels, run


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
    import ir_measures
    from ir_measures import RR, R, nDCG

    cases = random_cases(7, 6)
    qrels, run_ = ir_measures_input(cases)
    ours = {qid: metrics.per_query(ranked, relevant) for qid, (ranked, relevant) in cases.items()}
    measures = {"recall@5": R @ 5, "recall@10": R @ 10, "ndcg@10": nDCG @ 10, "mrr": RR}
    theirs = {}
    for m in ir_measures.iter_calc(list(measures.values()), qrels, run_):
        theirs[(m.query_id, str(m.measure))] = m.value
    for qid, values in ours.items():
        for name, measure in measures.items():
            # pytrec_eval leaves out queries with an empty run; those score 0 here
            assert values[name] == pytest.approx(theirs.get((qid, str(measure)), 0.0)), (
                qid, name)


def test_longmemeval_official_metrics_by_hand():
    """recall_any / recall_all / ndcg_any as LongMemEval's eval_utils.py defines them: its DCG
    leaves ranks 1 and 2 undiscounted, then 1/log2(rank); ideal = min(#relevant, k) hits."""
    # one relevant, at rank 2: a perfect ndcg_any (rank 2 is undiscounted), not for ndcg@10
    one = metrics.per_query(["x", "a", "y"], {"a"})
    assert (one["recall_any@5"], one["recall_all@5"], one["ndcg_any@5"]) == (1.0, 1.0, 1.0)
    assert one["ndcg@10"] == pytest.approx(1 / LOG3)
    assert metrics.ndcg_any_at(["x", "y", "a"], {"a"}, 5) == pytest.approx(1 / LOG3)
    # several relevant, at ranks 1, 3 and 6
    several = metrics.per_query(["a", "x", "b", "y", "z", "c"], {"a", "b", "c"})
    assert (several["recall_any@5"], several["recall_all@5"]) == (1.0, 0.0)
    assert (several["recall_any@10"], several["recall_all@10"]) == (1.0, 1.0)
    ideal = 1 + 1 + 1 / LOG3
    assert several["ndcg_any@5"] == pytest.approx((1 + 1 / LOG3) / ideal)
    assert several["ndcg_any@10"] == pytest.approx((1 + 1 / LOG3 + 1 / math.log2(6)) / ideal)
    # more relevant than k, the top k all relevant: ndcg_any 1, recall_all 0
    many = metrics.per_query(list("abcdefg"), set("abcdefg"))
    assert (many["ndcg_any@5"], many["recall_all@5"], many["recall_all@10"]) == (1.0, 0.0, 1.0)
    # none retrieved, or nothing returned
    for ranked in (["x", "y"], []):
        none = metrics.per_query(ranked, {"a", "b"})
        assert all(none[m] == 0.0 for m in metrics.LONGMEMEVAL_METRICS), none
    # a repeated id counts once (and still takes its rank)
    assert metrics.ndcg_any_at(["a", "a", "b"], {"a", "b"}, 5) == pytest.approx(
        (1 + 1 / LOG3) / 2)
    assert metrics.all_at(["a", "a", "b"], {"a", "b"}, 2) == 0.0
    # no relevant id: recall_all is vacuously 1, as in the official all(); the others 0
    empty = metrics.per_query(["x"], set())
    assert (empty["recall_all@5"], empty["recall_any@5"], empty["ndcg_any@5"]) == (
        1.0, 0.0, 0.0)


def test_longmemeval_official_metrics_agree_with_ir_measures():
    """recall_any@k is ir-measures' Success@k, recall_all@k is R@k == 1. Its nDCG discounts
    rank r by 1/log2(r+1), so it is not ndcg_any; but LongMemEval's DCG of a list is the
    first hit's gain plus the standard DCG of the rest at cutoff k-1, which checks ndcg_any
    through nDCG@(k-1) of the list without its first id."""
    import ir_measures
    from ir_measures import R, Success, nDCG

    def idcg_standard(n: int) -> float:
        return sum(1 / math.log2(r + 1) for r in range(1, n + 1))

    def idcg_official(n: int) -> float:
        return sum(1.0 if r == 1 else 1 / math.log2(r) for r in range(1, n + 1))

    cases = random_cases(11, 8)
    qrels, run_ = ir_measures_input(cases)
    _, tail_run = ir_measures_input(cases, skip=1)
    measures = [m @ k for k in (5, 10) for m in (Success, R)]
    theirs = {(m.query_id, str(m.measure)): m.value
              for m in ir_measures.iter_calc(measures, qrels, run_)}
    tails = {(m.query_id, str(m.measure)): m.value
             for m in ir_measures.iter_calc([nDCG @ 4, nDCG @ 9], qrels, tail_run)}
    for qid, (ranked, relevant) in cases.items():
        ours = metrics.per_query(ranked, relevant)
        for k in (5, 10):
            assert ours[f"recall_any@{k}"] == theirs.get((qid, str(Success @ k)), 0.0), qid
            recall = theirs.get((qid, str(R @ k)), 0.0)
            assert ours[f"recall_all@{k}"] == (1.0 if recall == pytest.approx(1.0) else 0.0)
            first = 1.0 if ranked and ranked[0] in relevant else 0.0
            tail = tails.get((qid, str(nDCG @ (k - 1))), 0.0) * idcg_standard(
                min(len(relevant), k - 1))
            assert ours[f"ndcg_any@{k}"] == pytest.approx(
                (first + tail) / idcg_official(min(len(relevant), k))), (qid, k)


def test_session_level_recall_by_hand():
    """LongMemEval's evaluate_retrieval_turn2session: turns mapped to their sessions, the cut-off
    widened from k until the top holds k distinct sessions, then any / all of the relevant
    sessions above it. Worked by hand on a ranking of turns' sessions."""
    ranked = ["s1", "s1", "s2", "s1", "s3", "s4", "s2", "s5", "s6", "s7", "s8", "s9", "s10",
              "s11"]
    # k=5: five distinct sessions first reached at position 8 (s1 s2 s3 s4 s5)
    assert metrics.session_cut(ranked, 5) == (8, True)
    assert metrics.session_recall(ranked, {"s5"}, 5) == (1.0, 1.0)  # 8th turn: inside
    assert metrics.session_recall(ranked, {"s5", "s6"}, 5) == (1.0, 0.0)  # s6 is 9th
    assert metrics.session_recall(ranked, {"s6"}, 5) == (0.0, 0.0)
    # k=10: ten distinct sessions at position 13 (s1..s10)
    assert metrics.session_cut(ranked, 10) == (13, True)
    assert metrics.session_recall(ranked, {"s6", "s10"}, 10) == (1.0, 1.0)
    assert metrics.session_recall(ranked, {"s11"}, 10) == (0.0, 0.0)
    # distinct sessions from the start: the cut-off is k itself
    assert metrics.session_cut(["a", "b", "c", "d", "e", "f"], 5) == (5, True)
    # a ranking that ends first: all of it, and flagged (the score is then a lower bound)
    assert metrics.session_cut(["a", "a", "b"], 5) == (3, False)
    assert metrics.session_recall(["a", "a", "b"], {"b"}, 5) == (1.0, 1.0)
    rows = metrics.session_metrics(ranked, {"s2", "s6"})
    assert rows == {"session_recall_any@5": 1.0, "session_recall_all@5": 0.0,
                    "session_recall_any@10": 1.0, "session_recall_all@10": 1.0}


def test_session_level_recall_matches_the_official_definition():
    """Against a transcription of the official loop (turn ids stripped of their last part,
    the cut-off grown one at a time while fewer than k distinct sessions are above it) on
    random rankings."""
    rng = random.Random(7)

    def official(turns: list[str], correct: set[str], k: int) -> tuple[float, float]:
        strip = lambda t: "_".join(t.split("_")[:-1])  # noqa: E731
        sessions = [strip(t) for t in turns]
        want = {strip(t) for t in correct}
        n = k
        while n <= len(sessions) and len(set(sessions[:n])) < k:
            n += 1
        found = set(sessions[:n])
        return float(any(s in found for s in want)), float(all(s in found for s in want))

    for _ in range(300):
        turns = [f"q{rng.randrange(12)}_{i}" for i in range(rng.randrange(1, 40))]
        correct = set(rng.sample(turns, rng.randrange(1, min(4, len(turns)) + 1)))
        sessions = ["_".join(t.split("_")[:-1]) for t in turns]
        relevant = {"_".join(t.split("_")[:-1]) for t in correct}
        for k in (5, 10):
            assert metrics.session_recall(sessions, relevant, k) == official(turns, correct, k)


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


def test_a_bound_clear_of_zero_never_prints_as_zero():
    from benchmarks.harness.report import fmt_interval
    from benchmarks.harness.stats import Interval

    assert fmt_interval(Interval(0.0203, 0.0003, 0.0422, 0.03)) == "+0.020 [+0.0003, +0.042]"
    assert fmt_interval(Interval(-0.02, -0.042, -0.0004, 0.99)) == "-0.020 [-0.042, -0.0004]"
    assert fmt_interval(Interval(0.016, -0.0004, 0.033, 0.04)) == "+0.016 [-0.000, +0.033] (n.s.)"
    assert fmt_interval(Interval(0.0, 0.0, 0.0, 1.0)) == "+0.000 [+0.000, +0.000] (n.s.)"
    assert fmt_interval(Interval(0.1, 0.05, 0.2, 0.0)) == "+0.100 [+0.050, +0.200]"


def test_reports_record_settings_but_never_credentials(monkeypatch):
    from benchmarks.harness.script import recallmesh_env

    monkeypatch.setenv("RECALLMESH_API_KEY", "rmk_secret")
    monkeypatch.setenv("RECALLMESH_INTERNAL_TOKEN", "x" * 40)
    monkeypatch.setenv("RECALLMESH_LEGS", "lexical")
    monkeypatch.setenv("OTHER", "y")
    env = recallmesh_env()
    assert env["RECALLMESH_API_KEY"] == env["RECALLMESH_INTERNAL_TOKEN"] == "***"
    assert env["RECALLMESH_LEGS"] == "lexical" and "OTHER" not in env


def test_loader_adds_only_the_unanswerable_questions_when_asked():
    assert load(FIXTURE).unanswerable == []
    ds = load(FIXTURE, unanswerable=True)
    assert [q.query_id for q in ds.unanswerable] == ["q6"]  # q7's reason is not "nothing"
    assert ds.unanswerable[0].scope == "c1" and not ds.unanswerable[0].relevant
    assert [q.query_id for q in ds.queries] == ["q1", "q2", "q3", "q4"]


def test_a_corpus_sample_keeps_the_relevant_documents_and_is_the_same_every_time(tmp_path):
    import json

    docs = [{"id": f"d{i}", "text": f"document {i}"} for i in range(50)]
    (tmp_path / "corpus.jsonl").write_text("\n".join(json.dumps(d) for d in docs))
    (tmp_path / "queries.jsonl").write_text(json.dumps({"query_id": "q", "text": "x"}))
    (tmp_path / "qrels.jsonl").write_text(json.dumps({"query_id": "q",
                                                      "relevant_ids": ["d7", "d42"]}))
    first = load(tmp_path, corpus_sample=10)
    kept = {m.corpus_id for m in first.scopes["all"]}
    assert len(kept) == 10 and {"d7", "d42"} <= kept
    assert kept == {m.corpus_id for m in load(tmp_path, corpus_sample=10).scopes["all"]}


def test_the_relevance_map_fit_recovers_a_known_curve():
    import numpy as np

    from benchmarks.quality.floor import logistic

    rng = np.random.default_rng(7)
    x = rng.uniform(0, 1, 20000)
    y = (rng.uniform(0, 1, x.size) < 1 / (1 + np.exp(-(-4.0 + 7.0 * x)))).astype(float)
    a, b = logistic(x, y, np.ones_like(x))
    assert a == pytest.approx(-4.0, abs=0.3) and b == pytest.approx(7.0, abs=0.5)
