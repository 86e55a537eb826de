"""The on-disk vector store: keys, identity, round trip, the fill-on-miss wrapper."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recallmesh.embedding_models.manifest import ModelManifest
from recallmesh.services.embedding.core import Embedded
from recallmesh.services.embedding.vector_store import VectorStore, model_identity, text_key


def manifest(tmp_path: Path, **changes: object) -> ModelManifest:
    (tmp_path / "model.onnx").write_bytes(b"graph")
    (tmp_path / "tokenizer.json").write_text("{}")
    base = ModelManifest(path=tmp_path / "manifest.json", model_id="m", onnx=tmp_path /
                         "model.onnx", tokenizer=tmp_path / "tokenizer.json", dimension=4,
                         max_length=8)
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def vectors(n: int, seed: int = 0) -> Embedded:
    rng = np.random.default_rng(seed)
    v = rng.normal(size=(n, 4)).astype(np.float32)
    return Embedded(v / np.linalg.norm(v, axis=1, keepdims=True), [i % 2 == 0 for i in range(n)])


def test_identity_follows_every_setting_that_changes_a_vector(tmp_path: Path) -> None:
    base = manifest(tmp_path)
    same = model_identity(base)
    assert model_identity(manifest(tmp_path)) == same
    for change in ({"max_length": 9}, {"pooling": "cls"}, {"normalize": False},
                   {"document_prefix": "d: "}, {"query_prefix": "q: "}, {"output": "x"},
                   {"sha256": {"model.onnx": "0" * 64}}):
        assert model_identity(manifest(tmp_path, **change)) != same, change
    (tmp_path / "model.onnx").write_bytes(b"another graph")
    assert model_identity(base) != same  # the file's bytes, when no sha256 is pinned


@given(st.text(max_size=50), st.text(max_size=50))
def test_keys_separate_kinds_and_texts(a: str, b: str) -> None:
    assert text_key("query", a) != text_key("document", a)
    assert (text_key("query", a) == text_key("query", b)) == (a == b)


def test_round_trip_is_bit_exact_and_survives_reopening(tmp_path: Path) -> None:
    m = manifest(tmp_path)
    store = VectorStore(tmp_path / "v", m, producer="test")
    texts = ["a", "b", "c"]
    embedded = vectors(3)
    store.put("document", texts, embedded)
    store.close()
    again = VectorStore(tmp_path / "v", m)
    got = again.get("document", ["b", "x", "a", "b"])
    assert got[1] is None and got[0] is not None and got[2] is not None
    assert np.array_equal(got[0][0], embedded.vectors[1]) and got[0][1] is False
    assert np.array_equal(got[2][0], embedded.vectors[0]) and got[2][1] is True
    assert again.get("query", ["a"]) == [None]  # another kind
    assert again.producers() == ["test"]
    assert len(again) == 3


def test_another_model_setting_is_another_file(tmp_path: Path) -> None:
    one = VectorStore(tmp_path / "v", manifest(tmp_path))
    one.put("query", ["a"], vectors(1))
    two = VectorStore(tmp_path / "v", manifest(tmp_path, max_length=16))
    assert two.path != one.path and two.get("query", ["a"]) == [None]


def test_put_refuses_vectors_of_the_wrong_shape(tmp_path: Path) -> None:
    store = VectorStore(tmp_path / "v", manifest(tmp_path))
    with pytest.raises(ValueError, match="4 dimensions"):
        store.put("query", ["a"], Embedded(np.zeros((1, 3), np.float32), [False]))


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from(["a", "b", "c", "d", "e"]), min_size=1, max_size=12))
def test_embed_computes_each_missing_text_once_and_keeps_order(
        tmp_path_factory: pytest.TempPathFactory, texts: list[str]) -> None:
    tmp = tmp_path_factory.mktemp("s")
    store = VectorStore(tmp / "v", manifest(tmp))
    table = dict(zip("abcde", vectors(5).vectors, strict=True))
    calls: list[list[str]] = []

    async def compute(missing: list[str]) -> Embedded:
        calls.append(missing)
        return Embedded(np.stack([table[t] for t in missing]), [False] * len(missing))

    store.put("document", ["a"], Embedded(table["a"][None, :], [False]))
    got = asyncio.run(store.embed(texts, "document", compute))
    assert np.array_equal(got.vectors, np.stack([table[t] for t in texts]))
    missing = sorted(set(texts) - {"a"})
    assert sorted(sum(calls, [])) == missing  # each once, "a" never
    assert asyncio.run(store.embed(texts, "document", compute)).vectors.shape == (len(texts), 4)
    assert len(calls) == (1 if missing else 0)  # the second call is all hits


def test_store_kinds_setting() -> None:
    from recallmesh.services.embedding.settings import store_kinds
    from recallmesh.shared.settings import ConfigError

    assert store_kinds("document") == ("document",)
    assert store_kinds(" query , document,query") == ("query", "document")
    for bad in ("", "documents", "query,image"):
        with pytest.raises(ConfigError, match="VECTOR_STORE_KINDS"):
            store_kinds(bad)
