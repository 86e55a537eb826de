"""Property tests of the rank merge (weighted RRF) used by the gateway."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from gateway.ranking import RRF_K, rrf_fuse

ids = st.lists(st.sampled_from([f"m{i}" for i in range(30)]), unique=True, max_size=20)
legs = st.dictionaries(st.sampled_from(["lexical", "vector", "graph"]), ids, min_size=1)


def as_ranked(order):
    return [(memory_id, float(len(order) - i)) for i, memory_id in enumerate(order)]


@given(ids)
def test_single_leg_keeps_its_order_exactly(order):
    fused = rrf_fuse({"lexical": as_ranked(order)})
    assert [c.memory_id for c in fused] == order


@given(legs)
def test_leg_order_does_not_matter(lists):
    ranked = {leg: as_ranked(order) for leg, order in lists.items()}
    reversed_ranked = dict(reversed(list(ranked.items())))
    assert [(c.memory_id, c.score) for c in rrf_fuse(ranked)] == [
        (c.memory_id, c.score) for c in rrf_fuse(reversed_ranked)]


@given(legs)
def test_scores_finite_and_sorted_and_complete(lists):
    ranked = {leg: as_ranked(order) for leg, order in lists.items()}
    fused = rrf_fuse(ranked)
    assert {c.memory_id for c in fused} == {m for order in lists.values() for m in order}
    assert all(math.isfinite(c.score) and c.score > 0 for c in fused)
    assert [c.score for c in fused] == sorted((c.score for c in fused), reverse=True)


def test_rrf_formula_and_contributions():
    fused = rrf_fuse({"lexical": [("a", 3.0), ("b", 2.0)], "vector": [("b", 0.9)]},
                     weights={"lexical": 1.0, "vector": 0.5})
    by_id = {c.memory_id: c for c in fused}
    assert by_id["a"].score == 1 / (RRF_K + 1)
    assert by_id["b"].score == 1 / (RRF_K + 2) + 0.5 / (RRF_K + 1)
    assert [(c.leg, c.rank, c.score) for c in by_id["b"].contributions] == [
        ("lexical", 2, 2.0), ("vector", 1, 0.9)]


def test_ties_break_deterministically():
    fused = rrf_fuse({"lexical": [("x", 1.0)], "vector": [("a", 1.0)]})
    assert [c.memory_id for c in fused] == ["a", "x"]  # equal score and rank: by id
