"""benchmarks.quality.model_pair: two runs side by side, the other's configurations renamed."""

from __future__ import annotations

import json

import pytest

from benchmarks.harness.report import compare, load_results
from benchmarks.quality.model_pair import pair


def result(config: str, model: str, hits: list[float], sha: str = "abc") -> dict:
    queries = [{"query_id": f"q{i}", "cluster": f"q{i}", "category": "single-hop",
                "metrics": {"recall@10": h}, "latency_ms": 10.0, "ranked_ids": [],
                "degraded": False} for i, h in enumerate(hits)]
    return {"config": config, "model_id": model, "queries": queries, "k": 10,
            "git_commit": "0" * 40, "dataset": {"name": "locomo", "path": "x",
                                                "files_sha256": sha},
            "overall": {"n": len(hits), "recall@10": sum(hits) / len(hits)},
            "per_category": {"single-hop": {"n": len(hits), "recall@10": sum(hits) / len(hits)}},
            "latency_ms": {"p50": 10.0, "p95": 12.0}}


def write(folder, data) -> None:
    folder.mkdir(exist_ok=True)
    (folder / f"{data['config']}.json").write_text(json.dumps(data))


def test_the_other_run_is_renamed_and_paired_with_the_base(tmp_path):
    write(tmp_path / "a", result("default", "fp32", [1, 0, 1, 1]))
    write(tmp_path / "b", result("default", "int8", [1, 0, 0, 1]))
    names = pair(tmp_path / "a", [(tmp_path / "b", "int8")], tmp_path / "ab")
    assert names == ["default", "default@int8"]
    both = load_results(tmp_path / "ab")
    assert both["default@int8"]["renamed_from"] == "default"
    assert both["default@int8"]["model_id"] == "int8" and both["default"]["model_id"] == "fp32"
    report = compare(tmp_path / "ab", "default")
    row = next(line for line in report.splitlines() if line.startswith("| default@int8 |"))
    assert "-0.250" in row  # one of four queries lost its hit: paired delta -0.25
    assert "default@int8 (model int8)" in report and "not comparable" in report


def test_runs_on_other_dataset_files_are_refused(tmp_path):
    write(tmp_path / "a", result("default", "fp32", [1], sha="one"))
    write(tmp_path / "b", result("default", "int8", [1], sha="two"))
    with pytest.raises(SystemExit, match="same dataset"):
        pair(tmp_path / "a", [(tmp_path / "b", "int8")], tmp_path / "ab")
