"""`python -m benchmarks diff A.json B.json` on small hand-made result files, and `compare`'s
LongMemEval columns (the official metrics shown, and said which is which, only there)."""

from __future__ import annotations

import json

import pytest

from benchmarks.__main__ import main
from benchmarks.harness import metrics
from benchmarks.harness.report import OFFICIAL_NOTE, compare


def result(config: str, rankings: dict[str, list[str]], relevant: dict[str, list[str]],
           dataset: str = "locomo", with_official: bool = True) -> dict:
    rows = []
    for qid, ranked in rankings.items():
        m = metrics.per_query(ranked, relevant[qid])
        if not with_official:
            m = {n: m[n] for n in metrics.METRICS}
        rows.append({"query_id": qid, "category": "single-hop", "cluster": qid,
                     "ranked_ids": ranked, "relevant_ids": relevant[qid], "metrics": m,
                     "degraded": False})
    names = list(rows[0]["metrics"])
    overall = {n: sum(r["metrics"][n] for r in rows) / len(rows) for n in names}
    return {"config": config, "settings": {}, "git_commit": "0123456789abcdef",
            "model_id": "m", "k": 10, "queries": rows, "overall": overall | {"n": len(rows)},
            "per_category": {"single-hop": overall | {"n": len(rows)}},
            "dataset": {"name": dataset, "path": f"/data/{dataset}", "files_sha256": "ab" * 32},
            "latency_ms": {"p50": 1.0, "p95": 2.0, "p99": 3.0}}


RELEVANT = {"q1": ["a"], "q2": ["b", "c"], "q3": ["d"], "q4": ["e"]}
BEFORE = {"q1": ["a", "x", "y"], "q2": ["b", "c", "z"], "q3": ["x", "d", "y"], "q4": ["y", "e"]}
AFTER = {"q1": ["a", "x", "y"],  # identical
         "q2": ["c", "b", "z"],  # same ids, other order
         "q3": ["x", "y", "w"],  # other ids: d dropped
         "q4": ["e", "y"]}  # same ids, other order


def write(tmp_path, name: str, data: dict):
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def test_diff_counts_kinds_deltas_and_shows_both_rankings(tmp_path, capsys):
    a = write(tmp_path, "a.json", result("default", BEFORE, RELEVANT))
    b = write(tmp_path, "b.json", result("default", AFTER, RELEVANT))
    out_json = tmp_path / "out" / "diff.json"
    main(["diff", str(a), str(b), "--show", "2", "--json-to", str(out_json)])
    out = capsys.readouterr().out
    assert "4 queries matched by query_id, top 10 compared:" in out
    assert "identical                   1" in out
    assert "same ids, other order       2" in out
    assert "other ids                   1" in out
    # recall@10: q3 loses its one relevant id -> (1 + 1 + 0 + 1) / 4 - 1 = -0.25
    assert "recall@10                1.0000   0.7500  -0.2500" in out
    assert "First 2 of 3 differing queries (* = relevant):" in out
    assert "    A: b*, c*, z\n    B: c*, b*, z\n" in out
    assert "    A: x, d*, y\n    B: x, y, w\n" in out
    assert "q4" not in out  # --show 2
    saved = json.loads(out_json.read_text())
    assert saved["counts"] == {"identical": 1, "same ids, other order": 2, "other ids": 1}
    assert [q["query_id"] for q in saved["differing"]] == ["q2", "q3", "q4"]
    assert saved["metrics"]["recall@10"]["delta"] == pytest.approx(-0.25)


def test_diff_of_a_file_with_itself_finds_nothing(tmp_path, capsys):
    a = write(tmp_path, "a.json", result("default", BEFORE, RELEVANT))
    main(["diff", str(a), str(a)])
    out = capsys.readouterr().out
    assert "identical                   4" in out
    assert "other ids                   0" in out
    assert "differing" not in out
    assert all(line.endswith("+0.0000") for line in out.splitlines()
               if line.startswith("  ") and "." in line)


def test_diff_top_k_cut(tmp_path, capsys):
    """--k 1: only the first id counts, so q3 (x first in both) is identical."""
    a = write(tmp_path, "a.json", result("default", BEFORE, RELEVANT))
    b = write(tmp_path, "b.json", result("default", AFTER, RELEVANT))
    main(["diff", str(a), str(b), "--k", "1"])
    out = capsys.readouterr().out
    assert "top 1 compared" in out
    assert "identical                   2" in out  # q1, q3
    assert "other ids                   2" in out  # q2 (b -> c), q4 (y -> e)


def test_diff_refuses_different_query_sets_and_unreadable_files(tmp_path, capsys):
    a = write(tmp_path, "a.json", result("default", BEFORE, RELEVANT))
    fewer = write(tmp_path, "b.json", result("default", {
        q: r for q, r in AFTER.items() if q != "q4"} | {"q5": ["a"]}, RELEVANT | {"q5": ["a"]}))
    with pytest.raises(SystemExit) as exit_:
        main(["diff", str(a), str(fewer)])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "different query sets: 1 only in A (q4), 1 only in B (q5)" in err
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    not_result = write(tmp_path, "summary.json", {"default": {"overall": {}}})
    for path in (broken, not_result, tmp_path / "missing.json"):
        with pytest.raises(SystemExit) as exit_:
            main(["diff", str(a), str(path)])
        assert exit_.value.code == 2
        assert "error:" in capsys.readouterr().err


def test_compare_shows_the_official_metrics_for_longmemeval_only(tmp_path):
    for dataset in ("longmemeval", "locomo"):
        out = tmp_path / dataset
        out.mkdir()
        for name, rankings in (("lexical", BEFORE), ("default", AFTER)):
            (out / f"{name}.json").write_text(json.dumps(result(name, rankings, RELEVANT,
                                                                dataset)))
        text = compare(out, "lexical")
        header = next(line for line in text.splitlines() if line.startswith("| config |"))
        if dataset == "longmemeval":
            assert all(m in header for m in metrics.LONGMEMEVAL_METRICS)
            assert header.index("mrr") < header.index("ndcg_any@10")  # the harness's first
            assert OFFICIAL_NOTE["longmemeval"] in text
            assert "Peers quote recall_any@5, which is easier" in text
        else:
            assert not any(m in header for m in metrics.LONGMEMEVAL_METRICS)
            assert "Peers quote" not in text


def test_compare_reads_result_files_written_before_the_official_metrics(tmp_path):
    out = tmp_path / "longmemeval"
    out.mkdir()
    (out / "lexical.json").write_text(json.dumps(result("lexical", BEFORE, RELEVANT,
                                                        "longmemeval")))
    (out / "peer_old.json").write_text(json.dumps(result("peer_old", AFTER, RELEVANT,
                                                         "longmemeval", with_official=False)))
    row = next(line for line in compare(out, "lexical").splitlines()
               if line.startswith("| peer_old |"))
    assert row.count("—") == len(metrics.LONGMEMEVAL_METRICS)  # its official cells
