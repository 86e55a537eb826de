"""The query-vector cache: LRU by bytes, only missing texts computed, each distinct text once."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recallmesh.services.embedding.core import Embedded
from recallmesh.services.embedding.query_cache import QueryVectorCache, entry_bytes

DIM = 8


def vector_of(text: str) -> np.ndarray:
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")
    v = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
    return v / np.linalg.norm(v)


class Model:
    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    async def __call__(self, texts: list[str]) -> Embedded:
        self.calls.append(list(texts))
        return Embedded(np.stack([vector_of(t) for t in texts]), [t.endswith("!") for t in texts])


async def test_only_missing_texts_are_computed_once_each_in_order() -> None:
    cache, model = QueryVectorCache(1 << 20), Model()
    first = await cache.embed(["a", "b", "a!"], model)
    assert model.calls == [["a", "b", "a!"]]
    again = await cache.embed(["b", "c", "c", "a!"], model)
    assert model.calls[1] == ["c"]  # b and a! were kept; c asked once although twice here
    assert np.array_equal(again.vectors[0], first.vectors[1])
    assert np.array_equal(again.vectors[1], vector_of("c"))
    assert again.truncated == [False, False, False, True]  # the flag is kept with the vector
    assert len(cache) == 4
    await cache.embed(["a", "b"], model)
    assert len(model.calls) == 2  # all hits: the model is not called


async def test_least_recently_used_goes_first_within_the_byte_bound() -> None:
    one = entry_bytes("q0", vector_of("q0"))
    cache, model = QueryVectorCache(3 * one), Model()
    for t in ("q0", "q1", "q2"):
        await cache.embed([t], model)
    await cache.embed(["q0"], model)  # used: q1 is now the oldest
    await cache.embed(["q3"], model)
    assert cache.get("q1") is None and cache.get("q0") is not None
    assert cache.bytes <= 3 * one and len(cache) == 3


async def test_cached_vectors_are_read_only_and_zero_bytes_turns_it_off() -> None:
    cache, model = QueryVectorCache(1 << 20), Model()
    await cache.embed(["x"], model)
    cached = cache.get("x")
    assert cached is not None
    vector, _ = cached
    with pytest.raises(ValueError):
        vector[0] = 1.0
    off = QueryVectorCache(0)
    assert not off.enabled
    await off.embed(["x"], model)
    await off.embed(["x"], model)
    assert model.calls[-2:] == [["x"], ["x"]] and off.bytes == 0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.sampled_from([f"t{i}" for i in range(12)]), min_size=1,
                         max_size=6), min_size=1, max_size=20),
       st.integers(min_value=0, max_value=6))
def test_answers_equal_the_model_and_bytes_stay_bounded(batches: list[list[str]],
                                                        entries: int) -> None:
    import asyncio

    bound = entries * entry_bytes("t0", vector_of("t0"))
    cache, model = QueryVectorCache(bound), Model()

    async def run() -> None:
        for texts in batches:
            got = await cache.embed(texts, model)
            assert np.array_equal(got.vectors, np.stack([vector_of(t) for t in texts]))
            assert cache.bytes <= bound
    asyncio.run(run())
