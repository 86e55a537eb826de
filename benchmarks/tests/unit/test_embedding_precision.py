"""benchmarks/performance/embedding_precision.py and benchmarks/replay/vector_precision.py end to
end on the tiny nomic-bert graph of tests/tiny_nomic.py and its int8 build, over a few texts in the
datasets' shape: every table is there and the numbers are sane (a model is its own reference at
cosine 1, and ranks as itself)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from benchmarks.performance import embedding_precision
from benchmarks.replay import vector_precision
from recallmesh.embedding_models.build.int8_onnx import quantize
from recallmesh.embedding_models.build.nomic_onnx import build, build_tokenizer
from tests.tiny_nomic import tiny_model


def tiny_cache(tmp_path: Path) -> Path:
    """<cache>/tiny (fp32) and <cache>/tiny-int8, with manifests as the catalogue writes them."""
    cache = tmp_path / "cache"
    gguf, _ = tiny_model(tmp_path)
    manifest = {"model_id": "tiny-fp32", "onnx": "model.onnx", "tokenizer": "tokenizer.json",
                "dimension": 8, "max_length": 64, "query_prefix": "search_query: ",
                "document_prefix": "search_document: "}
    for name, precision in (("tiny", "fp32"), ("tiny-int8", "int8")):
        (cache / name).mkdir(parents=True)
        build_tokenizer(gguf, cache / name / "tokenizer.json")
        (cache / name / "manifest.json").write_text(json.dumps(
            manifest | {"model_id": f"tiny-{precision}", "precision": precision}))
    build(gguf, cache / "tiny" / "model.onnx")
    quantize(cache / "tiny" / "model.onnx", cache / "tiny-int8" / "model.onnx")
    return cache


def test_report_of_two_tiny_models_and_a_variant(tmp_path, monkeypatch):
    cache, data = tiny_cache(tmp_path), tmp_path / "datasets"
    shutil.copy(cache / "tiny" / "model.onnx", tmp_path / "same.onnx")
    words = ["the cat sat on the mat", "cats sat", "the mat", "sating cat on the mat " * 5]
    for folder, field in (("locomo", "corpus"), ("locomo", "queries"), ("scifact", "corpus")):
        (data / folder).mkdir(parents=True, exist_ok=True)
        (data / folder / f"{field}.jsonl").write_text("".join(
            json.dumps({"text": words[i % len(words)]}) + "\n" for i in range(12)))
    monkeypatch.setenv("RECALLMESH_MODEL_CACHE", str(cache))
    out = tmp_path / "report.md"
    embedding_precision.main([
        "--models", "tiny,tiny-int8", "--variant", f"same={tmp_path / 'same.onnx'}",
        "--datasets", str(data), "--queries", "5", "--warmup", "2", "--batch-sizes", "1,4",
        "--locomo-texts", "8", "--scifact-texts", "4", "--cosine-queries", "6",
        "--report-to", str(out), "--json", str(tmp_path / "r.json")])
    text = out.read_text()
    for heading in ("## Query latency (5 LoCoMo questions", "## Document throughput, LoCoMo turns",
                    "## Document throughput, SciFact abstracts", "## Cosine of each model's"):
        assert heading in text
    result = json.loads((tmp_path / "r.json").read_text())
    assert [m["label"] for m in result["models"]] == ["tiny", "tiny-int8", "same"]
    assert [m["precision"] for m in result["models"]] == ["fp32", "int8", "fp32"]
    for _, per_model in result["cosine"].values():
        assert per_model["same"]["min"] > 0.99999
        assert 0.9 < per_model["tiny-int8"]["mean"] <= 1.00001
    assert set(result["throughput"]["LoCoMo turns"]) == {"1", "4"}  # JSON keys
    assert result["query_latency"]["tiny-int8"]["n"] == 5


def test_vector_rankings_of_two_tiny_models_paired(tmp_path, monkeypatch):
    cache, data = tiny_cache(tmp_path), tmp_path / "datasets" / "locomo"
    data.mkdir(parents=True)
    texts = ["the cat sat on the mat", "cats sat", "the mat", "sating cat", "on the mat",
             "the cat", "mat sat on", "the the cat"]
    (data / "corpus.jsonl").write_text("".join(
        json.dumps({"id": f"m{i}", "text": t, "conversation_id": f"c{i % 2}"}) + "\n"
        for i, t in enumerate(texts)))
    (data / "queries.jsonl").write_text("".join(
        json.dumps({"query_id": f"q{i}", "text": texts[i], "category": 1,
                    "category_name": "one", "conversation_id": f"c{i % 2}"}) + "\n"
        for i in range(6)))
    (data / "qrels.jsonl").write_text("".join(
        json.dumps({"query_id": f"q{i}", "relevant_ids": [f"m{i}"]}) + "\n" for i in range(6)))
    monkeypatch.setenv("RECALLMESH_MODEL_CACHE", str(cache))
    out = tmp_path / "vectors.md"
    args = ["--sets", "locomo", "--datasets", str(data.parent), "--cache", str(tmp_path / "v"),
            "--report-to", str(out), "--json", str(tmp_path / "v.json")]
    vector_precision.main(["--models", "tiny,tiny"] + args)
    same = json.loads((tmp_path / "v.json").read_text())["sets"][0]
    assert same["queries"] == 6 and same["clusters"] == 2
    assert same["delta"] == 0 and same["same_top10"] == 6 and same["better"] == same["worse"] == 0
    vector_precision.main(["--models", "tiny,tiny-int8"] + args)
    pair = json.loads((tmp_path / "v.json").read_text())["sets"][0]
    assert pair["mean"]["tiny"] == same["mean"]["tiny"]
    assert pair["low"] <= pair["delta"] <= pair["high"]
    assert "| locomo (recall@10) | 6 |" in out.read_text()
