"""The embedding service: model core in-process, micro-batching, and the real gRPC service."""

from __future__ import annotations

import asyncio
import json
import time
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from recallmesh.embedding_models.manifest import ModelManifest
from recallmesh.services.embedding import core
from recallmesh.services.embedding.batching import MicroBatcher
from recallmesh.services.embedding.core import Embedded, OnnxEmbedder
from recallmesh.shared.settings import ConfigError

PARAPHRASE_QUERY = "what UI library do they like?"
PARAPHRASE_MEMORY = "Prefers Svelte for frontend work"


@pytest.fixture(scope="module")
def embedder(manifest: ModelManifest) -> OnnxEmbedder:
    return OnnxEmbedder(manifest, provider="cpu", max_batch=8)


# ----------------------------------------------------------------- manifest


def test_default_manifest_is_verified_nomic(manifest: ModelManifest) -> None:
    manifest.verify()
    assert (manifest.dimension, manifest.max_length, manifest.pooling) == (768, 512, "mean")
    assert manifest.sha256["model.onnx"].startswith("8896af06")
    assert (manifest.query_prefix, manifest.document_prefix) == ("search_query: ",
                                                                 "search_document: ")


def write_manifest(tmp_path: Path, **changes: object) -> Path:
    base: dict[str, object] = {"model_id": "m", "onnx": "model.onnx",
                               "tokenizer": "tokenizer.json", "dimension": 8, "max_length": 16}
    base.update(changes)
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps({k: v for k, v in base.items() if v is not None}))
    return path


@pytest.mark.parametrize("changes, message", [
    ({"dimension": None}, "lacks dimension"),
    ({"pooling": "max"}, "pooling must be"),
    ({"dimension": 0}, "dimension must be"),
    ({"dimension": "x"}, "bad manifest value"),
    ({"surprise": 1}, "unknown manifest keys"),
])
def test_bad_manifests_are_clear_config_errors(tmp_path: Path, changes: dict[str, object],
                                               message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ModelManifest.load(write_manifest(tmp_path, **changes))


def test_padding_uses_the_tokenizer_files_own_pad_id(manifest: ModelManifest,
                                                     tmp_path: Path) -> None:
    # MPNet's tokenizer pads with <pad> (1) although its vocabulary also has a [PAD]: the id
    # the tokenizer file declares wins. Here: the default tokenizer, declaring [unused0].
    raw = json.loads(manifest.tokenizer.read_text())
    pad_id = raw["model"]["vocab"]["[unused0]"]
    padding = raw.get("padding") or {"strategy": "BatchLongest", "direction": "Right",
                                     "pad_to_multiple_of": None, "pad_type_id": 0}
    raw["padding"] = dict(padding, pad_id=pad_id, pad_token="[unused0]")
    (tmp_path / "tokenizer.json").write_text(json.dumps(raw))
    other = ModelManifest.load(write_manifest(
        tmp_path, onnx=str(manifest.onnx), dimension=manifest.dimension,
        max_length=manifest.max_length))
    model = OnnxEmbedder(other, provider="cpu")
    assert model.pad_id == pad_id != OnnxEmbedder(manifest, provider="cpu").pad_id
    texts = ["a short one", "a much longer text that makes the short one padded to its length"]
    batch = model.embed(texts).vectors
    singles = np.vstack([model.embed([t]).vectors for t in texts])
    assert np.abs(batch - singles).max() < 1e-5  # padded positions are masked out


def test_missing_manifest_says_how_to_fetch(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="make models"):
        ModelManifest.load(tmp_path / "nope.json")


def test_changed_model_file_fails_verification(tmp_path: Path) -> None:
    (tmp_path / "model.onnx").write_bytes(b"not the model")
    (tmp_path / "tokenizer.json").write_text("{}")
    path = write_manifest(tmp_path, sha256={"model.onnx": "0" * 64})
    with pytest.raises(ConfigError, match="sha256"):
        ModelManifest.load(path).verify()


# ----------------------------------------------------------------- model core


def test_vectors_are_normalised_and_deterministic(embedder: OnnxEmbedder,
                                                  manifest: ModelManifest) -> None:
    first = embedder.embed(["Maya prefers Svelte", "Maya prefers Svelte", "Tea at noon"]).vectors
    again = embedder.embed(["Maya prefers Svelte"]).vectors
    assert first.shape == (3, manifest.dimension)
    assert np.allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(first[0], first[1]) and np.array_equal(first[0], again[0])


def test_a_repeated_text_runs_through_the_model_once_and_every_place_gets_its_vector(
        embedder: OnnxEmbedder, monkeypatch: pytest.MonkeyPatch) -> None:
    texts = ["ok", "thanks", "Maya moved to Lisbon", "ok", "thanks", "ok"]
    alone = {t: embedder.embed([t], "document").vectors[0] for t in set(texts)}
    ran: list[int] = []
    run = embedder._run

    def counted(encodings: list[Any]) -> np.ndarray:
        ran.append(len(encodings))
        return run(encodings)

    monkeypatch.setattr(embedder, "_run", counted)
    out = embedder.embed(texts, "document")
    assert sum(ran) == 3  # the three distinct texts
    assert out.vectors.shape[0] == len(texts) and len(out.truncated) == len(texts)
    for text, vector in zip(texts, out.vectors, strict=True):
        assert np.abs(vector - alone[text]).max() < 1e-5


def test_length_sorted_sub_batches_keep_input_order(embedder: OnnxEmbedder) -> None:
    # max_batch=8: 20 texts of very different lengths run as 3 sorted sub-batches.
    texts = [("word " * (i * 7 % 40 + 1)) + str(i) for i in range(20)]
    batched = embedder.embed(texts).vectors
    singles = np.vstack([embedder.embed([t]).vectors for t in texts])
    assert np.abs(batched - singles).max() < 1e-5


@given(st.lists(st.integers(min_value=1, max_value=256), max_size=200))
def test_batch_plan_covers_every_text_once_within_limits(embedder: OnnxEmbedder,
                                                         lengths: list[int]) -> None:
    runs = embedder.plan_batches(lengths)
    assert sorted(i for run in runs for i in run) == list(range(len(lengths)))
    for run in runs:
        width = max(lengths[i] for i in run)
        assert len(run) <= embedder.max_batch
        assert len(run) == 1 or len(run) * width <= embedder.max_batch_tokens
        if len(run) > 1:  # padding stays bounded
            real = sum(lengths[i] for i in run)
            assert len(run) * width <= core.PADDING_SLACK * real + core.PADDING_ALLOWANCE
    # One 256-token text does not pad a crowd of short ones to its length.
    plan = embedder.plan_batches([8] * 7 + [256])
    assert [len(r) for r in plan] == [7, 1]


def test_over_long_text_is_truncated_not_rejected(embedder: OnnxEmbedder) -> None:
    long = "memory " * 2000
    result = embedder.embed([long, "short"])
    assert result.truncated == [True, False]
    assert np.isfinite(result.vectors).all()


def test_paraphrase_is_closer_than_unrelated(embedder: OnnxEmbedder) -> None:
    q = embedder.embed([PARAPHRASE_QUERY], "query").vectors[0]
    docs = embedder.embed([PARAPHRASE_MEMORY, "Allergic to peanuts and shellfish"], "document")
    sims = docs.vectors @ q
    assert sims[0] > sims[1] + 0.1


def test_cuda_request_without_a_gpu_falls_back_to_cpu_and_says_so(manifest: ModelManifest) -> None:
    forced = OnnxEmbedder(manifest, provider="cuda", max_batch=2)
    if forced.provider == core.CUDA:
        pytest.skip("a CUDA device is present")
    assert forced.provider == core.CPU
    assert "CUDA" in forced.provider_note


def test_two_onnxruntime_builds_are_detected(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metadata, "version", lambda name: "1.0")  # the module core reads
    assert core.onnxruntime_distributions() == ["onnxruntime", "onnxruntime-gpu"]


# ----------------------------------------------------------------- micro-batching


class CountingModel:
    def __init__(self, delay_s: float = 0.02) -> None:
        self.calls: list[list[str]] = []
        self.delay_s = delay_s

    def __call__(self, texts: list[str], kind: str) -> Embedded:
        self.calls.append(list(texts))
        time.sleep(self.delay_s)
        vectors = np.array([[float(len(t)), 1.0 if kind == "query" else 2.0] for t in texts])
        return Embedded(vectors.astype(np.float32), [False] * len(texts))


async def test_concurrent_requests_are_coalesced_and_split_back() -> None:
    model = CountingModel()
    batcher = MicroBatcher(model, max_batch=64, max_wait_s=0.005)
    batcher.start()
    try:
        texts = [["a" * (i + 1), "b" * (i + 2)] for i in range(20)]
        results = await asyncio.gather(*(batcher.embed(t, "query") for t in texts))
    finally:
        await batcher.close()
    for t, r in zip(texts, results, strict=True):
        assert r.vectors[:, 0].tolist() == [len(x) for x in t]
    assert sum(len(c) for c in model.calls) == 40
    assert len(model.calls) < 20  # requests shared model runs


async def test_a_lone_query_runs_at_once_while_documents_wait_for_company() -> None:
    """The query lane never waits for more requests (a recall's query is on its critical
    path); the document lane waits up to max_wait_s for a fuller batch."""
    batcher = MicroBatcher(CountingModel(delay_s=0.0), max_batch=64, max_wait_s=0.5)
    batcher.start()
    try:
        started = time.perf_counter()
        await batcher.embed(["where is the red notebook?"], "query")
        query_s = time.perf_counter() - started
        started = time.perf_counter()
        await batcher.embed(["the red notebook is in the drawer"], "document")
        document_s = time.perf_counter() - started
    finally:
        await batcher.close()
    assert query_s < 0.25 <= document_s


async def test_kinds_never_share_a_model_call() -> None:
    model = CountingModel(delay_s=0.0)
    batcher = MicroBatcher(model, max_batch=64, max_wait_s=0.01)
    batcher.start()
    try:
        q, d = await asyncio.gather(batcher.embed(["x"], "query"), batcher.embed(["y"], "document"))
    finally:
        await batcher.close()
    assert q.vectors[0, 1] == 1.0 and d.vectors[0, 1] == 2.0


async def test_a_model_failure_reaches_every_waiting_caller() -> None:
    def broken(texts: list[str], kind: str) -> Embedded:
        raise RuntimeError("model exploded")

    batcher = MicroBatcher(broken, max_batch=8, max_wait_s=0.005)
    batcher.start()
    try:
        results = await asyncio.gather(
            *(batcher.embed(["t"], "query") for _ in range(3)), return_exceptions=True
        )
        assert all(isinstance(r, RuntimeError) for r in results)
        # ...and the worker survives for the next request.
        with pytest.raises(RuntimeError):
            await batcher.embed(["t"], "query")
    finally:
        await batcher.close()


class PoisonableModel(CountingModel):
    """Fails every run that contains a text with POISON (a text the model cannot handle)."""

    def __call__(self, texts: list[str], kind: str) -> Embedded:
        if any("POISON" in t for t in texts):
            self.calls.append(list(texts))
            raise RuntimeError("the model failed on an input")
        return super().__call__(texts, kind)  # records the call


async def test_a_failing_text_fails_its_own_caller_only() -> None:
    """Callers batched with a poison text get their vectors; only the poison's caller fails."""
    model = PoisonableModel(delay_s=0.0)
    batcher = MicroBatcher(model, max_batch=64, max_wait_s=0.05)
    batcher.start()
    try:
        requests = [["tenant a, first", "tenant a, second"], ["tenant b POISON text"],
                    ["tenant c"], ["tenant d", "tenant d again"]]
        results = await asyncio.gather(*(batcher.embed(t, "document") for t in requests),
                                       return_exceptions=True)
        # ...and the next batch is not affected.
        after = await batcher.embed(["later text"], "document")
    finally:
        await batcher.close()
    assert isinstance(results[1], RuntimeError) and "failed on an input" in str(results[1])
    for texts, result in zip(requests, results, strict=True):
        if texts is not requests[1]:
            assert isinstance(result, Embedded)
            assert result.vectors[:, 0].tolist() == [len(t) for t in texts]
    assert after.vectors[0, 0] == len("later text")
    # They shared one model run first (the one that failed), then each ran alone.
    assert model.calls[0] == [t for r in requests for t in r]
    assert sorted(map(tuple, model.calls[1:5])) == sorted(map(tuple, requests))


async def test_stopping_is_unavailable() -> None:
    """A caller refused because the service stops gets UNAVAILABLE (retry), not INTERNAL."""
    from recallmesh.shared.errors import Unavailable

    batcher = MicroBatcher(CountingModel(), max_batch=1, max_wait_s=0.0)
    batcher.start()
    await batcher.close()
    with pytest.raises(Unavailable, match="stopping") as caught:
        await batcher.embed(["late"], "query")
    assert caught.value.code == "UNAVAILABLE" and isinstance(caught.value, RuntimeError)


async def test_close_answers_every_waiting_caller() -> None:
    model = CountingModel(delay_s=0.3)
    batcher = MicroBatcher(model, max_batch=1, max_wait_s=0.0)
    batcher.start()
    calls = [asyncio.ensure_future(batcher.embed([f"t{i}"], "query")) for i in range(3)]
    await asyncio.sleep(0.05)  # the first is in the model, the others queued
    await batcher.close()
    results = await asyncio.wait_for(asyncio.gather(*calls, return_exceptions=True), 2)
    assert all(isinstance(r, RuntimeError) for r in results)
    with pytest.raises(RuntimeError, match="stopping"):
        await batcher.embed(["late"], "query")


# ----------------------------------------------------------------- gRPC service


