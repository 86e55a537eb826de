"""Issue 39's pure rules: absolute scores (the model's cosine floor, the fitted relevance
map), the relevance floor, restatements newest first, and the write key of a memory."""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from recallmesh.embedding_models.calibration import (
    RelevanceModel,
    ScoreCalibration,
    calibration_for,
)
from recallmesh.embedding_models.fetch import catalogue_entry, catalogue_names
from recallmesh.gateway.stages import (
    above_floor,
    content_words,
    evidence,
    newer_first,
    non_increasing,
    place_unseen,
    relevance_scores,
    restatable,
    restates,
    scores_are_estimates,
    ties_by_estimate,
)
from recallmesh.gateway.write_keys import content_key
from recallmesh.policy import FusionSettings
from recallmesh.services.fusion.core import fuse
from recallmesh.wire.fusion import FusedCandidate, LegCandidate, LegList
from recallmesh.wire.memory_fields import NewMemory

CAL = FusionSettings(method="calibrated", importance_strength=0.0, exact_bonus=0.0)


def vector_list(scores: dict[str, float], floor: float | None) -> LegList:
    ranked = sorted(scores.items(), key=lambda kv: -kv[1])
    return LegList("vector", 1.0, [LegCandidate(i, s) for i, s in ranked], (-1.0, 1.0),
                   score_floor=floor)


@given(st.lists(st.floats(-1.0, 1.0, allow_nan=False), max_size=60))
def test_with_a_floor_a_score_does_not_depend_on_the_rest_of_the_list(others: list[float]
                                                                        ) -> None:
    """The same memory and cosine score the same whatever else the leg returned."""
    alone = fuse([vector_list({"m": 0.8}, 0.55)], CAL)[0].score
    crowd = {"m": 0.8} | {f"o{i}": s for i, s in enumerate(others)}
    among = next(c.score for c in fuse([vector_list(crowd, 0.55)], CAL) if c.memory_id == "m")
    assert among == pytest.approx(alone) == pytest.approx((0.8 - 0.55) / (1 - 0.55))


def test_without_a_floor_the_median_still_measures() -> None:
    """A leg that gives no floor (the graph leg, an uncalibrated model): as before."""
    fused = fuse([vector_list({"a": 0.9, "b": 0.5, "c": 0.1}, None)], CAL)
    assert [round(c.score, 6) for c in fused] == [round(0.4 / 0.5, 6), 0.0, 0.0]


def test_a_cosine_at_or_below_the_floor_adds_nothing() -> None:
    fused = fuse([vector_list({"a": 0.5, "b": 0.3}, 0.55)], CAL)
    assert all(c.score == 0.0 for c in fused)


def candidates(*scores: float) -> list[FusedCandidate]:
    return [FusedCandidate(f"m{i}", s) for i, s in enumerate(scores)]


LISTS = [LegList("lexical", 0.3, []), LegList("vector", 1.0, []), LegList("graph", 0.0, [])]
MODEL = RelevanceModel(-4.0, {"cosine": 12.0, "lexical": 3.0})
CALIBRATION = ScoreCalibration(0.5, MODEL)


def legs(cosines: dict[str, float], bm25: dict[str, float], scale: float = 2.0,
         sensitive: frozenset[str] = frozenset(), exact: frozenset[str] = frozenset()
         ) -> list[LegList]:
    return [
        LegList("vector", 1.0, [LegCandidate(i, s) for i, s in
                                sorted(cosines.items(), key=lambda kv: -kv[1])],
                (-1.0, 1.0), blind_to_sensitive=True, score_floor=0.5),
        LegList("lexical", 0.3, [LegCandidate(i, s, sensitive=i in sensitive,
                                              exact_match=i in exact) for i, s in
                                 sorted(bm25.items(), key=lambda kv: -kv[1])], score_scale=scale),
    ]


def test_evidence_is_read_from_the_legs_own_values_never_from_the_rankers_score() -> None:
    lists = legs({"a": 0.8, "b": 0.6, "c": 0.55}, {"a": 1.0, "z": 3.0}, sensitive=frozenset("z"))
    top = [FusedCandidate("a", 99.0), FusedCandidate("b", 0.1), FusedCandidate("z", 5.0),
           FusedCandidate("q", 0.0)]
    e = evidence(top, lists, CALIBRATION)
    assert e[0] == pytest.approx({"cosine": 0.3, "cosine_gap": 0.0, "lexical": 0.5,
                                  "lexical_gap": -0.5, "rank": 0.0, "context": 0.0})
    assert e[1]["lexical"] == 0.0 and e[1]["rank"] == pytest.approx(math.log(2))
    # a sensitive memory the vector leg cannot see: the vector leg says nothing of it (the
    # model fitted without the vector leg estimates it)
    assert "cosine" not in e[2] and "cosine_gap" not in e[2]
    assert e[2]["lexical"] == 1.0 and e[2]["lexical_gap"] == 0.0  # BM25 over scale, at most 1
    # seen but not listed: at most the lowest listed cosine
    assert e[3]["cosine"] == pytest.approx(0.05) and e[3]["cosine_gap"] == pytest.approx(-0.25)


def test_a_hit_without_a_legs_evidence_is_estimated_by_the_model_fitted_without_it() -> None:
    lexical_only = RelevanceModel(-1.0, {"lexical": 2.0})
    model = RelevanceModel(-4.0, {"cosine": 12.0, "lexical": 3.0}, {"vector": lexical_only})
    assert model.probability({"lexical": 1.0}) == pytest.approx(lexical_only.probability(
        {"lexical": 1.0}))
    assert model.probability({"lexical": 1.0, "cosine": 0.0}) == pytest.approx(
        MODEL.probability({"lexical": 1.0, "cosine": 0.0}))
    # no model fitted without it: its evidence counts as 0
    assert MODEL.probability({"lexical": 1.0}) == MODEL.probability({"lexical": 1.0,
                                                                      "cosine": 0.0})
    only_lexical = [LegList("lexical", 0.3, [LegCandidate("a", 2.0)], score_scale=2.0)]
    assert evidence([FusedCandidate("a", 1.0)], only_lexical, CALIBRATION) == [
        {"rank": 0.0, "context": 0.0, "lexical": 1.0, "lexical_gap": 0.0}]  # no vector leg


@given(st.lists(st.floats(0.0, 1.0, allow_nan=False), max_size=40))
def test_non_increasing_never_rises_keeps_the_sum_and_leaves_a_falling_list_alone(
        values: list[float]) -> None:
    fitted = non_increasing(values)
    assert len(fitted) == len(values)
    assert all(a >= b - 1e-12 for a, b in zip(fitted, fitted[1:], strict=False))
    assert sum(fitted) == pytest.approx(sum(values))
    falling = sorted(values, reverse=True)
    assert non_increasing(falling) == pytest.approx(falling)


def test_relevance_scores_are_the_models_estimates_made_non_increasing_in_ranking_order() -> None:
    lists = legs({"a": 0.55, "b": 0.9}, {"b": 2.0})
    top = [FusedCandidate("a", 1.0), FusedCandidate("b", 0.5)]  # the ranker put a first
    raw = [MODEL.probability(e) for e in evidence(top, lists, CALIBRATION)]
    assert raw[0] < raw[1]
    scored = relevance_scores(top, lists, "cc", CALIBRATION)
    assert [c.memory_id for c in scored] == ["a", "b"]  # the ranker's order is kept
    assert [c.score for c in scored] == pytest.approx([sum(raw) / 2] * 2)
    by_recency = relevance_scores(top, lists, "cc", CALIBRATION, "recency")
    assert [c.score for c in by_recency] == pytest.approx(raw)  # no relevance order to follow


def test_two_candidates_the_legs_order_oppositely_tie_in_cc_and_the_estimate_orders_them(
) -> None:
    """A namespace of two memories that share the person's name: the lexical leg puts the
    shorter first by a hair, the vector leg the one the question means by a clear margin.
    Min-max fusion gives both 1 + 0; the estimate (here the cosine's) decides, whichever id is
    the smaller."""
    for right, wrong in (("a", "b"), ("b", "a")):
        lists = [replace(lst, weight=1.0)  # the shipped cc weighs both legs alike
                 for lst in legs({right: 0.76, wrong: 0.62}, {wrong: 0.184, right: 0.180})]
        fused = fuse(lists, FusionSettings(method="cc", importance_strength=0.0,
                                           exact_bonus=0.0))
        assert fused[0].score == fused[1].score  # the ranker cannot tell them apart
        scored = relevance_scores(ties_by_estimate(fused, lists, CALIBRATION), lists, "cc",
                                  CALIBRATION)
        assert [c.memory_id for c in scored] == [right, wrong]
        assert scored[0].score > scored[1].score
        assert ties_by_estimate(fused, lists, None) == fused  # no estimate: the ranker's order


def test_a_leg_weighted_zero_orders_no_tie() -> None:
    """A request that weights the vector leg 0 gets the lexical leg's order, ties included:
    two memories the lexical leg scores alike keep its order whatever their cosines say."""
    for first, second in (("a", "b"), ("b", "a")):
        lists = [replace(lst, weight=0.0 if lst.leg == "vector" else 1.0)
                 for lst in legs({second: 0.80, first: 0.40}, {first: 0.3, second: 0.3})]
        fused = [FusedCandidate(first, 1.0), FusedCandidate(second, 1.0)]
        assert [c.memory_id for c in ties_by_estimate(fused, lists, CALIBRATION)] == \
            [first, second]
        weighted = [replace(lst, weight=1.0) for lst in lists]  # weighted: the cosine decides
        assert [c.memory_id for c in ties_by_estimate(fused, weighted, CALIBRATION)] == \
            [second, first]


@given(st.lists(st.sampled_from([0.2, 0.5, 0.9]), min_size=1, max_size=12),
       st.lists(st.floats(0.4, 1.0), min_size=12, max_size=12))
def test_only_hits_the_ranker_scored_alike_move_and_among_them_the_best_estimate_leads(
        ranker: list[float], cosines: list[float]) -> None:
    top = sorted((FusedCandidate(f"m{i:02d}", s) for i, s in enumerate(ranker)),
                 key=lambda c: -c.score)
    lists = legs({c.memory_id: cosines[i] for i, c in enumerate(top)}, {})
    ordered = ties_by_estimate(top, lists, CALIBRATION)
    assert [c.score for c in ordered] == [c.score for c in top]  # each place keeps its score
    assert sorted(c.memory_id for c in ordered) == sorted(c.memory_id for c in top)
    estimate = {c.memory_id: MODEL.probability(e | {"rank": 0.0})
                for c, e in zip(top, evidence(top, lists, CALIBRATION), strict=True)}
    place = {c.memory_id: i for i, c in enumerate(top)}
    for a, b in zip(ordered, ordered[1:], strict=False):
        if a.score == b.score:  # best estimate first; equal estimates in the ranker's order
            assert (estimate[a.memory_id], -place[a.memory_id]) > (
                estimate[b.memory_id], -place[b.memory_id])


def test_without_a_calibration_the_score_is_the_share_and_other_methods_keep_theirs() -> None:
    top = candidates(1.3, 0.65)
    assert [c.score for c in relevance_scores(top, LISTS, "calibrated", None)] == \
        pytest.approx([1.0, 0.5])
    assert relevance_scores(top, LISTS, "rrf", None) == top
    assert scores_are_estimates("rrf", CALIBRATION) and scores_are_estimates("calibrated", None)
    assert not scores_are_estimates("cc", None)


def test_a_secret_asked_for_by_what_it_holds_is_placed_by_its_own_evidence() -> None:
    """The ranker put the secret last (the vector leg cannot see it); it holds every query
    term, and its lexical evidence is stronger than the others' whole evidence, so it is
    placed first, its ranker score raised to stay there."""
    lists = legs({"a": 0.56, "b": 0.55}, {"s": 2.0, "a": 0.2}, sensitive=frozenset("s"),
                 exact=frozenset("s"))
    fused = [FusedCandidate("a", 0.9), FusedCandidate("b", 0.8), FusedCandidate("s", 0.3)]
    placed = place_unseen(fused, lists, CALIBRATION)
    assert [c.memory_id for c in placed] == ["s", "a", "b"]
    assert placed[0].score > placed[1].score
    assert place_unseen(fused, lists, None) == fused  # no estimate: the ranker's order



def test_a_sensitive_memory_with_weak_evidence_stays_below_what_answers() -> None:
    lists = legs({"a": 0.8, "b": 0.55}, {"s": 0.4, "a": 1.6}, sensitive=frozenset("s"),
                 exact=frozenset("s"))
    fused = [FusedCandidate("a", 0.9), FusedCandidate("b", 0.8), FusedCandidate("s", 0.3)]
    assert [c.memory_id for c in place_unseen(fused, lists, CALIBRATION)][0] == "a"


@given(st.floats(-50, 50), st.floats(0, 50), st.floats(0, 1.5), st.floats(0, 1.5))
def test_the_relevance_model_is_a_probability_and_monotone_in_its_evidence(
        intercept: float, w: float, a: float, b: float) -> None:
    model = RelevanceModel(intercept, {"lexical": w})
    low, high = sorted((a, b))
    assert 0.0 <= model.probability({"lexical": low}) <= model.probability({"lexical": high}) <= 1.0


def test_the_floor_leaves_out_what_scores_below_it() -> None:
    """Context (each hit): what scores below the floor is left out. Recall (the answer): all
    of it when its best hit clears the floor, else nothing."""
    top = candidates(0.9, 0.5, 0.2)
    assert [c.memory_id for c in above_floor(top, 0.5, each_hit=True)] == ["m0", "m1"]
    assert above_floor(top, 0.95, each_hit=True) == []
    assert above_floor(top, 0.5) == top  # the best clears it: the whole ranking
    assert above_floor(top, 0.95) == []  # nothing fits: an empty answer
    assert above_floor([], 0.5) == []
    for each_hit in (False, True):
        assert above_floor(top, 0.0, each_hit=each_hit) == top
        assert above_floor(top, 0.95, False, each_hit) == top  # no absolute scale


def test_every_shipped_calibration_names_a_catalogue_model_and_is_found_by_its_id() -> None:
    found = 0
    for name in catalogue_names():
        entry = catalogue_entry(name)
        if "calibration" in entry:
            found += 1
            calibration = calibration_for(entry["manifest"]["model_id"])
            assert calibration == ScoreCalibration.from_dict(entry["calibration"])
            assert calibration.fitted_on
    assert found >= 1
    assert calibration_for("a-model-nobody-fitted") is None


@pytest.mark.parametrize("raw", [
    {"cosine_floor": 1.0, "relevance": {"intercept": 0, "weights": {"cosine": 1}}},
    {"cosine_floor": 0.5, "relevance": {"intercept": float("nan")}},
    {"cosine_floor": 0.5, "relevance": {"intercept": 0, "weights": {"colour": 1}}},
    {"cosine_floor": 0.5, "intercept": 0, "slope": 1},
    {"cosine_floor": 0.5, "relevance": {"intercept": 0, "without": {
        "vector": {"intercept": 0, "weights": {"cosine_gap": 1}}}}},
    {"cosine_floor": 0.5, "relevance": {"intercept": 0, "without": {
        "rank": {"intercept": 0}}}},
    {"relevance": {"intercept": 0}},
])
def test_a_malformed_calibration_is_refused(raw: dict[str, object]) -> None:
    with pytest.raises((ValueError, KeyError)):
        ScoreCalibration.from_dict(raw)


NOW = datetime(2026, 11, 27, tzinfo=UTC)


def test_a_newer_restatement_moves_just_above_the_older_one() -> None:
    top = candidates(0.9, 0.7, 0.6, 0.5)  # m0 old, m2 its newer restatement (a change)
    created = {f"m{i}": NOW - timedelta(days=10 - i) for i in range(4)}
    content = {"m0": "The user's favourite editor is Vim.",
               "m1": "Reads a chapter of a novel every night.",
               "m2": "The user switched editors and now prefers VS Code over Vim.",
               "m3": "Drinks sparkling water."}
    ranked, moves = newer_first(top, created, content, [("m0", "m2", 0.88)])
    assert moves == 1
    assert [c.memory_id for c in ranked] == ["m2", "m0", "m1", "m3"]
    assert [c.score for c in ranked] == [0.9, 0.9, 0.7, 0.5]  # still best first


def test_a_near_duplicate_without_shared_words_or_already_newer_first_stays() -> None:
    top = candidates(0.9, 0.7)
    created = {"m0": NOW - timedelta(days=2), "m1": NOW - timedelta(days=1)}
    unrelated = {"m0": "Jonas works at Kestrel Freight.", "m1": "Maya likes Svelte."}
    assert newer_first(top, created, unrelated, [("m0", "m1", 0.9)]) == (top, 0)
    newer_on_top = {"m0": NOW, "m1": NOW - timedelta(days=1)}
    same = {"m0": "Now lives at Harbour Road 3.", "m1": "Lives at Harbour Road 5."}
    assert newer_first(top, newer_on_top, same, [("m0", "m1", 0.9)]) == (top, 0)
    no_change = {"m0": "Caroline: the support group was great.",
                 "m1": "Caroline: I went to the support group again."}
    assert newer_first(top, created, no_change, [("m0", "m1", 0.9)]) == (top, 0)
    change = {"m0": "Lives at Harbour Road 3.", "m1": "Now lives at Harbour Road 5."}
    assert newer_first(top, created, change, [("m0", "m1", 0.9)])[1] == 1
    assert newer_first(top, created, change, [("m0", "m1", 0.9)], {"m1"}) == (top, 0)


def test_two_documents_on_one_subject_are_not_a_restatement() -> None:
    """Two abstracts on one subject: near-duplicate vectors, a dozen stems in common and a
    change word in the newer, but the newer does not say again most of what the older said:
    both keep their places (SciFact lost 0.04 nDCG@10 to this before issue 42)."""
    top = candidates(0.9, 0.7)
    created = {"m0": NOW - timedelta(days=2), "m1": NOW - timedelta(days=1)}
    abstracts = {
        "m0": "Statin therapy lowers low-density lipoprotein cholesterol and reduces the risk "
              "of major vascular events in patients with established coronary disease; the "
              "benefit was consistent across age groups, sexes and baseline lipid levels in "
              "a meta-analysis of randomised trials with long follow-up.",
        "m1": "We studied whether statin therapy changed the incidence of diabetes in patients "
              "with coronary disease. Intensive dosing raised glucose levels modestly; the "
              "risk of new-onset diabetes increased, which is currently weighed against the "
              "reduction of vascular events."}
    assert len(content_words(abstracts["m0"]) & content_words(abstracts["m1"])) >= 5
    assert newer_first(top, created, abstracts, [("m0", "m1", 0.9)]) == (top, 0)
    assert restates("Lives at Harbour Road 3.", "Now lives at Harbour Road 5.")
    assert not restates(abstracts["m0"], abstracts["m1"])


@given(st.permutations(range(5)))
def test_restatements_end_newest_first_whatever_the_order(order: list[int]) -> None:
    """Five restatements of one thing: whatever order fusion gave, newest first after."""
    ids = [f"m{i}" for i in order]
    top = [FusedCandidate(i, 1.0 - n / 10) for n, i in enumerate(ids)]
    created = {f"m{i}": NOW - timedelta(days=i) for i in range(5)}  # m0 newest
    content = {f"m{i}": f"Now lives at Harbour Road {i}." for i in range(5)}
    pairs = [(f"m{a}", f"m{b}", 0.9) for a in range(5) for b in range(a + 1, 5)]
    ranked, _ = newer_first(top, created, content, pairs)
    assert [c.memory_id for c in ranked] == ["m0", "m1", "m2", "m3", "m4"]
    assert all(a.score >= b.score for a, b in zip(ranked, ranked[1:], strict=False))


def test_content_words_meet_across_inflections_and_skip_stopwords() -> None:
    assert content_words("The user's favourite editors") & content_words("an editor") == {
        "edito"}
    assert not content_words("and the it is to")


def test_one_key_for_what_says_the_same_and_apart_otherwise() -> None:
    base = NewMemory("Prefers tea over coffee.", thread="chat-1", metadata={"source": "a"})
    same = NewMemory("  prefers TEA over\tcoffee. ", thread="chat-1", metadata={"source": "a"},
                     importance=0.9, id="4a7c1f0e-5b8d-4b1e-9d7a-2f3c4b5a6d7e")
    assert content_key(base) == content_key(same)
    for other in (NewMemory("Prefers tea over coffee.", thread="chat-2",
                            metadata={"source": "a"}),
                  NewMemory("Prefers tea over coffee.", thread="chat-1",
                            metadata={"source": "b"}),
                  NewMemory("Prefers tea over coffee.", thread="chat-1",
                            metadata={"source": "a"}, sensitive=True),
                  NewMemory("Prefers coffee over tea.", thread="chat-1",
                            metadata={"source": "a"})):
        assert content_key(other) != content_key(base)


def test_only_facts_of_which_one_says_it_changed_are_looked_up() -> None:
    top = candidates(0.9, 0.7, 0.6)
    content = {"m0": "Lives at Harbour Road 3.", "m1": "Now lives on Mill Lane.",
               "m2": "Caroline: we now meet on Fridays."}
    assert restatable(top, content, {"m2"}) == ["m0", "m1"]
    assert restatable(top, content, {"m1", "m2"}) == []  # one fact left
    assert restatable(top, content | {"m1": "Lives on Mill Lane."}, {"m2"}) == []  # no change
