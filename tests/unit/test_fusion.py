"""The fusion core (recallmesh/services/fusion/core.py): formulas and properties (hypothesis)."""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Sequence
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from recallmesh.policy import METHODS, RRF_K, FusionSettings
from recallmesh.services.fusion.core import fuse
from recallmesh.wire.fusion import FusedCandidate, LegCandidate, LegList

IDS = [f"m{i:02d}" for i in range(30)]
orders = st.lists(st.sampled_from(IDS), unique=True, max_size=20)
importances = st.dictionaries(st.sampled_from(IDS), st.floats(0, 1), max_size=30)
methods = st.sampled_from(METHODS)
settings_st = st.builds(
    FusionSettings,
    method=methods,
    rrf_k=st.integers(1, 1000),
    importance_strength=st.floats(0, 1),
    exact_bonus=st.floats(0, 1),
    sort_by=st.sampled_from(["relevance", "importance"]),
)
leg_lists = st.dictionaries(st.sampled_from(["lexical", "vector", "graph"]), orders, min_size=1)


def leg(name: str, order: list[str], weight: float = 1.0,
        importance: dict[str, float] | None = None, exact: Collection[str] = (),
        bounds: tuple[float, float] | None = None) -> LegList:
    importance = importance or {}
    return LegList(name, weight, [
        LegCandidate(m, float(len(order) - i) / max(len(order), 1), importance.get(m, 0.5),
                     m in exact)
        for i, m in enumerate(order)
    ], bounds)


def ids(fused: Iterable[FusedCandidate]) -> list[str]:
    return [c.memory_id for c in fused]


@given(orders, settings_st, importances)
def test_lexical_alone_is_exactly_the_lexical_order(order: list[str], settings: FusionSettings,
                                                    importance: dict[str, float]) -> None:
    # Whatever the method, prior or bonus: the relevance fallback is the lexical ranking...
    fused = fuse([leg("lexical", order, importance=importance, exact=order[-1:])], settings)
    if settings.sort_by == "relevance":
        assert ids(fused) == order
    else:  # ...and sort_by=importance still orders by importance.
        got = [c.importance for c in fused]
        assert got == sorted(got, reverse=True)


@given(leg_lists, settings_st, importances)
def test_leg_order_does_not_matter(lists: dict[str, list[str]], settings: FusionSettings,
                                   importance: dict[str, float]) -> None:
    built = [leg(name, order, importance=importance) for name, order in lists.items()]
    forward = [(c.memory_id, c.score) for c in fuse(built, settings)]
    backward = [(c.memory_id, c.score) for c in fuse(list(reversed(built)), settings)]
    assert forward == backward


@given(leg_lists, settings_st)
def test_a_zero_weight_removes_a_leg(lists: dict[str, list[str]],
                                     settings: FusionSettings) -> None:
    built = [leg(name, order) for name, order in lists.items()]
    silenced = [*built, leg("ghost", IDS[::-1], weight=0.0)]
    assert [(c.memory_id, c.score) for c in fuse(silenced, settings)] == [
        (c.memory_id, c.score) for c in fuse(built, settings)]


@given(leg_lists, settings_st, importances)
def test_scores_finite_and_pool_complete(lists: dict[str, list[str]], settings: FusionSettings,
                                         importance: dict[str, float]) -> None:
    built = [leg(name, order, importance=importance) for name, order in lists.items()]
    fused = fuse(built, settings)
    # No candidate of any leg is barred from the pool by construction.
    assert set(ids(fused)) == {m for order in lists.values() for m in order}
    assert all(math.isfinite(c.score) for c in fused)
    assert fuse(built, settings) == fused  # deterministic


def test_rrf_formula_and_contributions() -> None:
    lexical = LegList("lexical", 1.0, [LegCandidate("a", 3.0), LegCandidate("b", 2.0)])
    vector = LegList("vector", 0.5, [LegCandidate("b", 0.9)])
    by_id = {c.memory_id: c for c in fuse([lexical, vector],
                                          FusionSettings(importance_strength=0, exact_bonus=0))}
    assert by_id["a"].score == 1 / (RRF_K + 1)
    assert by_id["b"].score == 1 / (RRF_K + 2) + 0.5 / (RRF_K + 1)
    assert [(c.leg, c.rank, c.score) for c in by_id["b"].contributions] == [
        ("lexical", 2, 2.0), ("vector", 1, 0.9)]


def test_ties_break_on_best_rank_then_id() -> None:
    lists = [LegList("lexical", 1.0, [LegCandidate("x", 1.0)]),
             LegList("vector", 1.0, [LegCandidate("a", 1.0)])]
    assert ids(fuse(lists, FusionSettings(importance_strength=0, exact_bonus=0))) == ["a", "x"]


def test_importance_prior_after_fusion() -> None:
    lists = [leg("lexical", ["low", "high"], importance={"low": 0.0, "high": 1.0}),
             leg("vector", ["high", "low"], importance={"low": 0.0, "high": 1.0})]
    off = fuse(lists, FusionSettings(importance_strength=0, exact_bonus=0))
    assert off[0].score == off[1].score  # a tie without the prior...
    on = fuse(lists, FusionSettings(importance_strength=0.3, exact_bonus=0))
    assert ids(on) == ["high", "low"]  # ...broken by importance
    assert on[0].score == pytest.approx(off[0].score * 1.0)
    assert on[1].score == pytest.approx(off[1].score * 0.7)


def test_exact_bonus_keeps_a_perfect_lexical_hit_first() -> None:
    # The known RRF weakness: one exact lexical hit vs a dense near-tie.
    lexical = leg("lexical", ["exact", "dense"], exact={"exact"})
    vector = leg("vector", ["dense", "other", "exact"])
    plain = fuse([lexical, vector], FusionSettings(exact_bonus=0, importance_strength=0))
    assert ids(plain)[0] == "dense"
    bonus = fuse([lexical, vector], FusionSettings(exact_bonus=0.05, importance_strength=0))
    assert ids(bonus)[0] == "exact"


def test_sort_by_importance_orders_the_pool_by_importance() -> None:
    imp = {"a": 0.2, "b": 0.9, "c": 0.9}
    lists = [leg("lexical", ["a", "b", "c"], importance=imp), leg("vector", ["c"], importance=imp)]
    assert ids(fuse(lists, FusionSettings(sort_by="importance"))) == ["c", "b", "a"]


def test_convex_combination_minmax_and_bounded() -> None:
    lexical = LegList("lexical", 1.0, [LegCandidate("a", 10.0), LegCandidate("b", 5.0),
                                       LegCandidate("c", 0.0)])
    vector = LegList("vector", 1.0, [LegCandidate("c", 0.9), LegCandidate("d", 0.5)], (-1.0, 1.0))
    cc = {c.memory_id: c.score for c in fuse(
        [lexical, vector], FusionSettings(method="cc", importance_strength=0, exact_bonus=0))}
    # min-max: lexical a=1, b=.5, c=0; vector c=1, d=0; a missing candidate gets the minimum.
    assert cc == pytest.approx({"a": 1.0, "b": 0.5, "c": 1.0, "d": 0.0})
    bounded = {c.memory_id: c.score for c in fuse(
        [lexical, vector],
        FusionSettings(method="cc_bounded", importance_strength=0, exact_bonus=0))}
    # cosine normalised by its range: c=(0.9+1)/2=.95, d=.75; a, b get vector's minimum .75.
    assert bounded == pytest.approx({"a": 1.75, "b": 1.25, "c": 0.95, "d": 0.75})


def calibrated(lists: Sequence[LegList]) -> dict[str, float]:
    return {c.memory_id: c.score for c in fuse(
        lists, FusionSettings(method="calibrated", importance_strength=0, exact_bonus=0))}


def test_calibrated_scores_mean_the_same_in_every_query() -> None:
    # lexical with a scale (BM25: the query's summed idf): score / scale, at most 1
    lexical = LegList("lexical", 1.0, [LegCandidate("a", 6.0), LegCandidate("b", 1.5)],
                      score_scale=3.0)
    # cosine: the margin over the list's median (0.5), on the way to its maximum 1
    vector = LegList("vector", 1.0, [LegCandidate("c", 0.8), LegCandidate("b", 0.5),
                                     LegCandidate("d", 0.2)], (-1.0, 1.0))
    # a leg that did not return a candidate adds 0 for it
    assert calibrated([lexical, vector]) == pytest.approx(
        {"a": 1.0, "b": 0.5, "c": 0.6, "d": 0.0})


def test_the_only_lexical_match_beats_the_best_of_vector_noise() -> None:
    """The case of issue 27: one memory holds the code word (sensitive: no vector); the
    vector leg returns twenty memories of cosine 0.36..0.50 (noise). min-max (cc) makes the
    best noise a perfect match and gives the lone lexical hit's floor (1.0) to everyone;
    calibrated fusion does neither."""
    noise = [LegCandidate(f"n{i:02d}", 0.50 - i * 0.007) for i in range(20)]
    lexical = LegList("lexical", 0.7, [LegCandidate("secret", 4.1, exact_match=True)],
                      score_scale=4.3)
    vector = LegList("vector", 1.0, noise, (-1.0, 1.0))
    cc = fuse([lexical, vector], FusionSettings(method="cc"))
    assert ids(cc)[0] != "secret"
    assert ids(fuse([lexical, vector], FusionSettings(method="calibrated")))[0] == "secret"


def test_the_ranker_scores_a_sensitive_memory_on_what_its_legs_saw_and_never_rescales() -> None:
    """Fusion is the ranker only: a sensitive memory (never embedded: the vector leg is blind
    to it) gets what the lexical leg gave it, whether or not it holds every query term; where
    it belongs is decided after the ranker, on its relevance estimate
    (recallmesh/gateway/stages.py place_unseen)."""
    lexical = LegList("lexical", 0.7, [LegCandidate("code", 4.0, exact_match=True,
                                                    sensitive=True),
                                       LegCandidate("beeps", 2.0),
                                       LegCandidate("name", 2.0, sensitive=True)],
                      score_scale=4.0)
    vector = LegList("vector", 1.0, [LegCandidate("beeps", 0.75), LegCandidate("x", 0.5),
                                     LegCandidate("y", 0.4)], (-1.0, 1.0),
                     blind_to_sensitive=True)
    scores = calibrated([lexical, vector])
    assert scores == pytest.approx({"code": 0.7, "beeps": 0.35 + 0.5, "name": 0.35, "x": 0.0,
                                    "y": 0.0})


def test_calibrated_without_a_scale_or_range_uses_the_list_top() -> None:
    graph = LegList("graph", 1.0, [LegCandidate("a", 0.3), LegCandidate("b", 0.2),
                                   LegCandidate("c", 0.1)])
    lexical = LegList("lexical", 1.0, [LegCandidate("c", 1.0)], score_scale=1.0)
    # median 0.2, top 0.3: a 1, b 0; one candidate or a flat list gives nothing
    assert calibrated([graph, lexical]) == pytest.approx({"a": 1.0, "b": 0.0, "c": 1.0})
    flat = LegList("graph", 1.0, [LegCandidate("a", 0.3), LegCandidate("b", 0.3)])
    assert calibrated([flat, lexical]) == pytest.approx({"a": 0.0, "b": 0.0, "c": 1.0})


@pytest.mark.parametrize("bad", [
    {"method": "borda"}, {"rrf_k": 0}, {"importance_strength": 1.5}, {"exact_bonus": -0.1},
])
def test_bad_settings_are_rejected(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        FusionSettings(**bad)


def test_negative_or_infinite_weights_are_rejected() -> None:
    for weight in (-1.0, math.inf, math.nan):
        with pytest.raises(ValueError):
            fuse([LegList("lexical", weight, [LegCandidate("a", 1.0)])])


def test_the_fusion_contract_carries_scale_and_sensitivity_and_refuses_a_bad_scale() -> None:
    from recallmesh.shared.errors import InvalidArgument
    from recallmesh.v1 import fusion_pb2
    from recallmesh.wire.fusion import lists_from_proto, lists_to_proto

    lists = [LegList("lexical", 0.3, [LegCandidate("a", 2.0, 0.5, True, sensitive=True)],
                     score_scale=4.0),
             LegList("vector", 1.0, [LegCandidate("b", 0.7)], (-1.0, 1.0),
                     blind_to_sensitive=True, score_floor=0.55)]
    request = fusion_pb2.FuseRequest()
    lists_to_proto(lists, request)
    assert lists_from_proto(request.lists) == lists
    for bad in (0.0, -1.0, math.inf, math.nan):
        request.lists[0].score_scale = bad
        with pytest.raises(InvalidArgument, match=r"lists\[0\].score_scale must be finite"):
            lists_from_proto(request.lists)
