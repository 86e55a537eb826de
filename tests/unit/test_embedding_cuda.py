"""The CUDA path of OnnxEmbedder against the CPU path, on the served model.

Runs only where onnxruntime's CUDAExecutionProvider really works: the GPU wheel
(onnxruntime-gpu) installed, and a session created with it keeps CUDA (the GPU
wheel lists CUDA in get_available_providers() even where no GPU is present).
Everywhere else, CI included, it skips and says why.

Tolerance. onnxruntime's CUDA provider runs MatMul with TF32 by default
(provider option use_tf32=1), so CUDA and CPU vectors differ by more than float32
rounding. Measured with onnxruntime-gpu 1.31.1 (CUDA 13) on an NVIDIA H200
against the CPU provider, over 64 documents and queries (one truncated at 512
tokens), L2-normalised 768-d vectors:
  * nomic-embed-text-v1.5 (this model):     max |diff| 1.4e-4, 1 - cosine <= 6.0e-7;
  * the same graph with random weights:     max |diff| 4.4e-4, 1 - cosine <= 4.8e-6;
  * CUDA, one text per call vs batched:     max |diff| 1.9e-4, 1 - cosine <= 8.9e-7;
  * CUDA with use_tf32=0:                   max |diff| 2.1e-7 (float32 rounding).
The bounds below (max |diff| 2e-3, cosine >= 0.99995) leave about 5-10x headroom
over the worst of those (and >10x over this model's own) for other GPUs, drivers
and library versions, and stay tight enough that the GPU's vectors can be mixed
with CPU-made ones in one index.
"""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

from recallmesh.embedding_models.manifest import ModelManifest
from recallmesh.services.embedding.core import CPU, CUDA, OnnxEmbedder

MAX_ABS_DIFF = 2e-3
MIN_COSINE = 0.99995

DOCUMENTS = [
    "",
    "Hello world.",
    "Alice prefers tea over coffee and is allergic to peanuts.",
    "Kubernetes evicted the pod because the node ran out of ephemeral storage.",
    "SELECT id, embedding <=> $1 AS d FROM memories ORDER BY d LIMIT 10;",
    "Café, naïve, résumé, Zürich — accented text; 日本語のテキスト; emoji 🚀",
    "The meeting about the Q3 budget was moved to Thursday at 14:00 in room B. " * 4,
    "shard compaction log line " * 300,  # past max_length: truncated
]
QUERIES = [
    "what does alice drink",
    "why was the pod evicted",
    "budget meeting time",
    "x",
    "an unusually long query about shard compaction and leader reads " * 6,
]


@pytest.fixture(scope="module")
def cuda_embedder(manifest: ModelManifest) -> OnnxEmbedder:
    if CUDA not in ort.get_available_providers():
        pytest.skip(f"onnxruntime {ort.__version__} has no {CUDA} "
                    f"(providers: {ort.get_available_providers()}); `make install ORT=gpu` "
                    "on a machine with a GPU brings it")
    embedder = OnnxEmbedder(manifest, provider="cuda")
    if embedder.provider != CUDA:
        pytest.skip(f"{CUDA} is listed but unusable here: {embedder.provider_note}")
    return embedder


@pytest.fixture(scope="module")
def cpu_embedder(manifest: ModelManifest) -> OnnxEmbedder:
    return OnnxEmbedder(manifest, provider="cpu")


def vectors(embedder: OnnxEmbedder) -> tuple[np.ndarray, list[bool]]:
    docs = embedder.embed(DOCUMENTS, "document")
    queries = embedder.embed(QUERIES, "query")
    return (np.concatenate([docs.vectors, queries.vectors]),
            docs.truncated + queries.truncated)


def test_cuda_embeddings_match_cpu(cuda_embedder: OnnxEmbedder, cpu_embedder: OnnxEmbedder) -> None:
    assert cpu_embedder.provider == CPU
    on_gpu, truncated_gpu = vectors(cuda_embedder)
    on_cpu, truncated_cpu = vectors(cpu_embedder)
    assert truncated_gpu == truncated_cpu
    assert any(truncated_cpu)
    assert np.isfinite(on_gpu).all()
    np.testing.assert_allclose(np.linalg.norm(on_gpu, axis=1), 1.0, atol=1e-5)
    assert np.abs(on_gpu - on_cpu).max() <= MAX_ABS_DIFF
    cosine = np.sum(on_gpu * on_cpu, axis=1)  # both L2-normalised
    assert cosine.min() >= MIN_COSINE, f"worst text #{int(np.argmin(cosine))}"


def test_cuda_batched_matches_one_text_at_a_time(cuda_embedder: OnnxEmbedder) -> None:
    batched = cuda_embedder.embed(DOCUMENTS, "document").vectors
    alone = np.stack([cuda_embedder.embed([t], "document").vectors[0] for t in DOCUMENTS])
    assert np.abs(batched - alone).max() <= MAX_ABS_DIFF
    assert np.sum(batched * alone, axis=1).min() >= MIN_COSINE


def test_auto_picks_cuda_where_it_works(cuda_embedder: OnnxEmbedder,
                                        manifest: ModelManifest) -> None:
    auto = OnnxEmbedder(manifest, provider="auto")
    assert auto.provider == CUDA
    assert auto.provider_note == ""
