"""The half of benchmarks/tests/unit/test_benchmark_harness.py that needs a real Postgres and
real gRPC."""

from __future__ import annotations

import json

import pytest

from benchmarks.harness.report import compare
from benchmarks.harness.runner import run
from benchmarks.tests.unit.test_benchmark_harness import FIXTURE, LOG3


@pytest.mark.integration
def test_run_and_compare_end_to_end(gateway, stack, tmp_path):
    out = tmp_path / "out"
    run(FIXTURE, ["lexical", "hybrid_rrf"], out, limit=None, target=stack.endpoints["gateway"],
        api_key=stack.api_key)
    lexical = json.loads((out / "lexical.json").read_text())
    # By hand: q1, q2, q3 find everything at rank 1 (q2's two relevant turns both match all
    # terms); q4 finds c2:1 first (AND) and c2:2 (OR), never c2:3 ("Lunch is at noon").
    q4_ndcg = 1 / (1 + 1 / LOG3)
    assert lexical["overall"]["n"] == 4
    assert lexical["overall"]["recall@5"] == pytest.approx((3 + 0.5) / 4)
    assert lexical["overall"]["ndcg@10"] == pytest.approx((3 + q4_ndcg) / 4)
    assert lexical["overall"]["mrr"] == pytest.approx(1.0)
    # LongMemEval's official metrics: q4 has one of its two relevant turns, at rank 1 (its
    # ideal DCG is 1 + 1: ranks 1 and 2 are undiscounted there).
    assert lexical["overall"]["recall_any@5"] == pytest.approx(1.0)
    assert lexical["overall"]["recall_all@10"] == pytest.approx(3 / 4)
    assert lexical["overall"]["ndcg_any@10"] == pytest.approx((3 + 1 / 2) / 4)
    assert lexical["per_category"]["multi-hop"]["recall@10"] == pytest.approx(0.75)
    perfect = dict.fromkeys(["recall@5", "recall@10", "ndcg@10", "mrr", "recall_any@5",
                             "recall_any@10", "recall_all@5", "recall_all@10", "ndcg_any@5",
                             "ndcg_any@10"], 1.0)
    assert lexical["per_category"]["single-hop"] == pytest.approx(perfect | {"n": 2})
    q4 = next(q for q in lexical["queries"] if q["query_id"] == "q4")
    assert q4["ranked_ids"] == ["c2:1", "c2:2"]
    for key in ("settings", "dataset", "model_id", "git_commit", "timestamp", "machine",
                "latency_ms", "ingest"):
        assert key in lexical
    assert lexical["settings"]["legs"] == ["lexical"]
    assert lexical["dataset"]["files_sha256"] and lexical["ingest"]["memories"] == 7
    hybrid = json.loads((out / "hybrid_rrf.json").read_text())
    assert hybrid["settings"]["method"] == "rrf" and hybrid["degraded_queries"] == 0
    report = compare(out, "lexical")
    assert "| lexical |" in report and "| hybrid_rrf |" in report
    assert "cluster CI" in report and "multi-hop (n=2)" in report
    assert "Run separately" not in report
    # A configuration run at another commit is named as such in the report.
    hybrid["git_commit"] = "0123456789abcdef"
    (out / "hybrid_rrf.json").write_text(json.dumps(hybrid))
    assert ("(latency from that run, not comparable with this one's): commit 0123456789: "
            "hybrid_rrf (model nomic-embed-text-v1.5-onnx-fp32).") in compare(out, "lexical")
    # ... and one run by another process on the same load (--target --skip-ingest) as that.
    hybrid["ingest"] = {"skipped": True}
    (out / "hybrid_rrf.json").write_text(json.dumps(hybrid))
    report = compare(out, "lexical")
    assert "Run separately" not in report
    assert "same stack and load (`--target --skip-ingest`), at another commit: commit " \
           "0123456789: hybrid_rrf." in report
    # A second load of the same folder would store every memory twice: refused.
    with pytest.raises(SystemExit, match="already holds memories"):
        run(FIXTURE, ["lexical"], tmp_path / "again", limit=None,
            target=stack.endpoints["gateway"], api_key=stack.api_key)


@pytest.mark.integration
def test_peers_side_by_side(gateway, stack, tmp_path):
    """Peers rank what the stack stored (texts and vectors read back from Postgres)."""
    out = tmp_path / "out"
    run(FIXTURE, ["peer_bm25", "peer_lancedb_fts", "peer_lancedb_hybrid"], out, limit=None,
        target=stack.endpoints["gateway"], dsn=stack.dsn, embedder=stack.endpoints["embedding"],
        namespace_tag="peers", api_key=stack.api_key, internal_token=stack.internal_token)
    bm25 = json.loads((out / "peer_bm25.json").read_text())
    ranked = {q["query_id"]: q["ranked_ids"] for q in bm25["queries"]}
    # BM25 is OR over stemmed terms: q1 "zebra carrots" ranks the turn with both terms first,
    # then c1:1 ("zebra"); q3 "Saturn" has one match; q4 never reaches "Lunch is at noon".
    assert ranked == {"q1": ["c1:3", "c1:1"], "q2": ["c1:1", "c1:3"], "q3": ["c2:2"],
                      "q4": ["c2:1", "c2:2"]}
    assert bm25["overall"]["recall@10"] == pytest.approx((3 + 0.5) / 4)
    assert bm25["settings"]["peer"] and bm25["settings"]["settings_"]["k1"] == 1.5
    assert bm25["peer"]["namespaces"] == 2 and bm25["latency_ms"]["p50"] > 0
    fts = json.loads((out / "peer_lancedb_fts.json").read_text())
    assert {q["query_id"]: q["ranked_ids"][0] for q in fts["queries"]} == {
        "q1": "c1:3", "q2": "c1:1", "q3": "c2:2", "q4": "c2:1"}
    hybrid = json.loads((out / "peer_lancedb_hybrid.json").read_text())
    # The vector side returns every stored turn of the conversation, so nothing is missed;
    # every ranked id is one of the scope's stored memories.
    assert hybrid["overall"]["recall@10"] == 1.0
    scopes = {"q1": "c1", "q2": "c1", "q3": "c2", "q4": "c2"}
    for q in hybrid["queries"]:
        assert q["ranked_ids"] and all(i.startswith(scopes[q["query_id"]] + ":")
                                       for i in q["ranked_ids"])
