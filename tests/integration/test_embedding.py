"""The half of tests/unit/test_embedding.py that needs a real Postgres and real gRPC."""

from __future__ import annotations

import urllib.request
import uuid
from collections.abc import Iterator

import grpc
import numpy as np
import pytest

from recallmesh.embedding_models.manifest import ModelManifest
from recallmesh.services.embedding import core
from recallmesh.stack.supervisor import Stack
from recallmesh.v1 import embedder_pb2, embedder_pb2_grpc
from tests.helpers import expect_status


@pytest.fixture(scope="module")
def embedder_stub(stack: Stack) -> Iterator[embedder_pb2_grpc.EmbedderServiceStub]:
    with stack.dial("embedding") as channel:
        yield embedder_pb2_grpc.EmbedderServiceStub(channel)


def embed(stub: embedder_pb2_grpc.EmbedderServiceStub, texts: list[str],
          kind: embedder_pb2.EmbedKind = embedder_pb2.EMBED_KIND_QUERY) -> np.ndarray:
    response = stub.Embed(embedder_pb2.EmbedRequest(texts=texts, kind=kind), timeout=30)
    return np.array([list(e.values) for e in response.embeddings])


@pytest.mark.integration
def test_grpc_batch_of_32_equals_32_single_calls(
        embedder_stub: embedder_pb2_grpc.EmbedderServiceStub, manifest: ModelManifest) -> None:
    texts = [f"memory {i}: " + "the user mentioned something " * (i % 5) for i in range(32)]
    batch = embed(embedder_stub, texts, embedder_pb2.EMBED_KIND_DOCUMENT)
    singles = np.vstack([embed(embedder_stub, [t], embedder_pb2.EMBED_KIND_DOCUMENT)
                         for t in texts])
    assert batch.shape == (32, manifest.dimension)
    assert np.abs(batch - singles).max() < 1e-5


@pytest.mark.integration
def test_grpc_identical_texts_identical_vectors(
        embedder_stub: embedder_pb2_grpc.EmbedderServiceStub) -> None:
    a, b = embed(embedder_stub, ["same text", "same text"])
    assert np.array_equal(a, b)
    assert np.array_equal(a, embed(embedder_stub, ["same text"])[0])


@pytest.mark.integration
def test_model_info_reports_the_provider_in_use(
        embedder_stub: embedder_pb2_grpc.EmbedderServiceStub, manifest: ModelManifest) -> None:
    info = embedder_stub.ModelInfo(embedder_pb2.ModelInfoRequest(), timeout=10)
    assert info.model_id == manifest.model_id == "nomic-embed-text-v1.5-onnx-fp32"  # the default
    assert (info.dimension, info.max_tokens, info.precision) == (768, 512, "fp32")
    assert info.provider in (core.CPU, core.CUDA)
    assert info.max_texts_per_call == 256


@pytest.mark.integration
def test_bad_embed_calls_are_invalid_argument(
        embedder_stub: embedder_pb2_grpc.EmbedderServiceStub) -> None:
    expect_status(grpc.StatusCode.INVALID_ARGUMENT, embedder_stub.Embed,
                  embedder_pb2.EmbedRequest(texts=[]))
    details = expect_status(grpc.StatusCode.INVALID_ARGUMENT, embedder_stub.Embed,
                            embedder_pb2.EmbedRequest(texts=["x"] * 257))
    assert "at most 256" in details


@pytest.mark.integration
def test_grpc_truncation_is_reported(embedder_stub: embedder_pb2_grpc.EmbedderServiceStub) -> None:
    response = embedder_stub.Embed(
        embedder_pb2.EmbedRequest(texts=["long " * 5000, "short"]), timeout=30)
    assert response.truncated == 1 and len(response.embeddings) == 2


def _cache_hits(stack: Stack) -> float:
    text = urllib.request.urlopen(
        f"http://localhost:{stack.metrics['embedding']}/metrics", timeout=5).read().decode()
    for line in text.splitlines():
        if line.startswith('recallmesh_embedding_query_cache_total{result="hit"}'):
            return float(line.split()[-1])
    return 0.0


@pytest.mark.integration
def test_a_repeated_query_is_answered_from_the_query_cache(
        embedder_stub: embedder_pb2_grpc.EmbedderServiceStub, stack: Stack) -> None:
    text = f"what did I decide about the garden shed? {uuid.uuid4()}"
    before = _cache_hits(stack)
    first = embed(embedder_stub, [text])
    assert _cache_hits(stack) == before  # a new text: computed
    second = embed(embedder_stub, [text])
    assert _cache_hits(stack) == before + 1
    assert np.array_equal(first, second)
    embed(embedder_stub, [text], embedder_pb2.EMBED_KIND_DOCUMENT)  # documents: never cached
    assert _cache_hits(stack) == before + 1
