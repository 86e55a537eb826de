"""The headline report: best peer chosen per dataset, paired deltas, targets and the p95 rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.quality.headline import headline, markdown


def write(folder: Path, config: str, hits: list[float], p95: float, categories: list[str],
          session: list[float] | None = None) -> None:
    rows = [{"query_id": f"q{i}", "category": c, "cluster": f"c{i % 2}",
             "metrics": {"recall@10": h} | ({"session_recall_any@5": session[i]} if session
                                             else {})}
            for i, (h, c) in enumerate(zip(hits, categories, strict=True))]
    per_category = {}
    for c in sorted(set(categories)):
        mine = [r["metrics"]["recall@10"] for r in rows if r["category"] == c]
        per_category[c] = {"recall@10": sum(mine) / len(mine), "n": len(mine)}
    overall = {"recall@10": sum(hits) / len(hits), "n": len(hits)}
    if session:
        overall["session_recall_any@5"] = sum(session) / len(session)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{config}.json").write_text(json.dumps({
        "config": config, "queries": rows, "overall": overall, "per_category": per_category,
        "latency_ms": {"p50": p95 / 2, "p95": p95}, "git_commit": "abc"}))


def test_headline_compares_default_with_rrf_lexical_and_the_best_peer(tmp_path):
    cats = ["multi-hop"] * 4 + ["single-hop"] * 4
    loco = tmp_path / "locomo"
    write(loco, "default", [1, 1, 1, 1, 1, 1, 1, 0], 30.0, cats)
    write(loco, "lexical", [0, 0, 0, 0, 1, 1, 0, 0], 10.0, cats)
    write(loco, "hybrid_rrf", [1, 0, 1, 0, 1, 1, 1, 0], 25.0, cats)
    write(loco, "peer_weak", [0, 0, 0, 0, 0, 0, 0, 0], 5.0, cats)
    write(loco, "peer_strong", [1, 1, 1, 0, 1, 1, 1, 0], 5.0, cats)
    lme = tmp_path / "longmemeval"
    write(lme, "default", [1, 1, 1, 1], 20.0, ["x"] * 4, session=[1, 1, 1, 1])
    write(lme, "hybrid_rrf", [1, 1, 1, 1], 10.0, ["x"] * 4)
    report = headline(tmp_path)
    loc = report["datasets"]["locomo"]
    assert loc["best_peer"] == "peer_strong"
    assert list(loc["overall"]) == ["lexical", "hybrid_rrf", "peer_strong"]
    assert loc["overall"]["lexical"]["delta"] == pytest.approx(5 / 8)
    assert loc["overall"]["peer_strong"]["delta"] == pytest.approx(1 / 8)
    assert loc["per_category"]["multi-hop"]["delta"]["hybrid_rrf"]["delta"] == pytest.approx(0.5)
    assert loc["p95_ratio_vs_hybrid_rrf"] == pytest.approx(1.2)
    assert report["datasets"]["longmemeval"]["p95_ratio_vs_hybrid_rrf"] == pytest.approx(2.0)
    targets = {(t["dataset"], t["metric"], t["category"]): t for t in report["targets"]}
    assert targets[("locomo", "recall@10", None)]["value"] == pytest.approx(7 / 8)
    assert targets[("locomo", "recall@10", None)]["met"]
    assert targets[("locomo", "recall@10", "multi-hop")]["met"]
    assert targets[("longmemeval", "session_recall_any@5", None)]["value"] == 1.0
    assert ("scifact", "ndcg@10", None) not in targets  # no run, no verdict
    text = markdown(report)
    assert "| 1.20x | yes |" in text and "| 2.00x | no |" in text
    assert "peer_strong (best peer)" in text
