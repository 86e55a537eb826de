"""Cross-validation of the levers (benchmarks/replay/cross_validation.py): a setting is chosen
without the held-out fold, and a replayed pool is ranked by the gateway's own code."""

from __future__ import annotations

import json

import numpy as np

from benchmarks.replay.cross_validation import (
    GRID,
    Setting,
    Split,
    best,
    out_of_fold,
    replay_split,
    run,
)

A = Setting("cc", 1.0, (0, 0.0, 0.0), 0.0, False)
B = Setting("calibrated", 1.0, (0, 0.0, 0.0), 0.0, False)


def split(scores: dict[Setting, list[float]], folds: list[int], name: str = "s") -> Split:
    return Split(name, "recall@10", {}, np.array(folds),
                 {s: np.array(v, float) for s, v in scores.items()}, {})


def test_the_held_out_fold_never_chooses_its_own_setting():
    # A wins fold 0 (one query), B wins fold 1 (two queries): in sample B is best, but held
    # out each fold gets the other fold's choice, and scores 0.
    s = split({A: [1, 0, 0], B: [0, 1, 1]}, [0, 1, 1])
    assert best([s], [A, B], lambda x: np.ones(3, bool)) == B
    scores, chosen, _ = out_of_fold([s], [A, B])
    assert scores["s"].tolist() == [0, 0, 0]
    assert chosen["s"] == [B.label, A.label]


def test_the_objective_weighs_every_split_equally():
    # split "big" prefers A by 0.1 over 10 queries; "small" prefers B by 0.5 over 1 query:
    # the mean over splits (not over queries) picks B.
    big = split({A: [0.6] * 10, B: [0.5] * 10}, [0] * 10, "big")
    small = split({A: [0.0], B: [0.5]}, [0], "small")
    assert best([big, small], [A, B], lambda x: np.ones(len(x.folds), bool)) == B


def tiny(tmp_path):
    """A dataset of two queries and its pool: lexical finds the code word's memory alone,
    the vector leg returns noise (more than k = 10 hits above it); 'any tips' routes the
    second query as advice."""
    data = tmp_path / "tiny"
    data.mkdir()
    noise_ids = [f"n{i}" for i in range(1, 13)]
    corpus = [{"id": "m1", "text": "code word lighthouse"}] + [
        {"id": i, "text": f"unrelated {i}"} for i in noise_ids]
    (data / "corpus.jsonl").write_text("\n".join(json.dumps(r) for r in corpus))
    (data / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in (
        {"query_id": "q1", "text": "lighthouse"}, {"query_id": "q2", "text": "any tips?"})))
    (data / "qrels.jsonl").write_text("\n".join(json.dumps(r) for r in (
        {"query_id": "q1", "relevant_ids": ["m1"]}, {"query_id": "q2", "relevant_ids": ["n3"]})))
    # twelve noise hits (cosine 0.50 down to 0.39), the code word's memory far below
    noise = [[i, rank, 0.51 - 0.01 * rank] for rank, i in enumerate(noise_ids, start=1)]
    noise.append(["m1", 13, 0.2])
    pool = {"dataset": "tiny", "git_commit": "x", "next": {}, "prev": {}, "sessions": {},
            "queries": [{"query_id": q, "category": "all", "cluster": "",
                         "relevant_ids": rel, "relevant_sessions": [], "served_top": [],
                         "legs": {"lexical": lexical, "vector": noise},
                         "scale": {"lexical": 4.0}}
                        for q, rel, lexical in (("q1", ["m1"], [["m1", 1, 4.1]]),
                                                ("q2", ["n3"], [["n1", 1, 1.0]]))]}
    path = tmp_path / "pool.json"
    path.write_text(json.dumps(pool))
    return pool, path


def test_replay_ranks_with_the_gateways_fusion_and_route(tmp_path):
    pool, _ = tiny(tmp_path)
    cc, calibrated = (Setting(m, 0.7, (0, 0.0, 0.0), 0.0, False) for m in ("cc", "calibrated"))
    routed = Setting("cc", 0.7, (0, 0.0, 0.0), 0.0, True)
    replayed = replay_split(pool, tmp_path / "tiny", [cc, calibrated, routed])
    # cc: the lone lexical hit's floor (1.0) goes to every vector hit: noise n1 first
    assert replayed.rows[cc][0]["ranked"][0] == "n1"
    assert replayed.rows[calibrated][0]["ranked"][0] == "m1"
    # routed as advice, lexical weighs 0.1: n1 (lexical 0.1 + vector 1) stays first
    assert replayed.rows[routed][1]["ranked"][0] == "n1"


def test_run_writes_the_lever_table_and_the_default(tmp_path, monkeypatch):
    _, path = tiny(tmp_path)
    small = [s for s in GRID if s.lexical_weight in (0.7, 1.0) and s.context[0] in (0, 5)]
    monkeypatch.setattr("benchmarks.replay.cross_validation.GRID", small)
    run([path], tmp_path, None, tmp_path / "cv.json", tmp_path / "cv.md", levers=())
    report = json.loads((tmp_path / "cv.json").read_text())
    assert report["datasets"]["tiny"]["queries"] == 2
    lever = report["levers"]["fusion method calibrated (vs cc min-max)"]
    assert lever["in_sample"]["tiny"] > 0
    text = (tmp_path / "cv.md").read_text()
    assert "| fusion method calibrated (vs cc min-max) |" in text
