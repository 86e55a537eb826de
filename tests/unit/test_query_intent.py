"""Query-intent routing: the advice rule as plain code, its route inside the gateway's
Recaller (what a request sets itself wins; off per request and per deployment), and the
intent named in a real Recall through gRPC."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from recallmesh.gateway.query_intent import ADVICE, ADVICE_LEXICAL_WEIGHT, Route, route
from recallmesh.policy import Overrides
from recallmesh.wire.validation import RecallQuery
from tests.unit.test_recall_core import context_recaller, mid


@pytest.mark.parametrize("query, phrase", [
    ("I've been having trouble with my phone's battery lately. Any tips?", "any tips"),
    ("My slow cooker recipes come out bland. Any advice on getting better results?",
     "any advice"),
    ("I'm planning meal prep, any suggestions for new recipes?", "any suggestions"),
    ("Free evening tonight, any documentary recommendations?", "any documentary recommendations"),
    ("Can you recommend a hotel for my trip to Miami?", "can you recommend"),
    ("Could you please suggest some accessories for my phone?", "could you please suggest"),
    ("Do you have any good ideas for a rainy weekend?", "do you have any good ideas"),
    ("What do you think about buying a NAS now?", "what do you think"),
    ("Do you think I should go to my high school reunion?", "do you think"),
    ("Which UI library should I use for the dashboard?", "should i"),
    ("Recommend some podcasts for my commute.", "recommend some"),
    ("Thanks! Suggest a wine for tonight.", "suggest a"),
])
def test_requests_for_advice_are_read_as_advice(query: str, phrase: str) -> None:
    assert route(query) == Route(ADVICE, phrase, lexical_weight=ADVICE_LEXICAL_WEIGHT,
                                 context_hits=0, time_boost=0.0)


@pytest.mark.parametrize("query", [
    "What UI library does the user prefer?",
    "When did I suggest a trip to Paris?",  # telling of a suggestion, not asking for one
    "What book did Melanie recommend to Caroline?",
    "How many tips did I leave at the restaurant last week?",
    "Where did I go last weekend?",
    "0-dimensional biomaterials show inductive properties.",
    "",
])
def test_questions_of_fact_are_not_routed(query: str) -> None:
    assert route(query) is None


@given(st.text(max_size=300))
def test_route_never_fails_and_names_words_of_the_query(text: str) -> None:
    for query in (text, text + " Any tips?", "Should I " + text):
        routed = route(query)
        if routed is not None:
            assert routed.phrase and routed.phrase in " ".join(query.lower().split())
    assert route("Should I " + text) is not None


ADVICE_QUERY = "Any tips for my garden?"


def query(text: str = ADVICE_QUERY, **fusion: Any) -> RecallQuery:
    return RecallQuery("ns", text, k=10, fusion=Overrides.of(method="rrf", **fusion))


def test_the_route_sets_the_lexical_weight_the_request_leaves_unset() -> None:
    r, _ = context_recaller()

    def lexical_weight(q: RecallQuery) -> float:  # what fusion gets once the route is applied
        return r.policy_for(q)[0].weights["lexical"]

    applied, routed = r.policy_for(query())
    assert routed is not None and routed.intent == ADVICE
    assert (applied.context_hits, applied.time_boost) == (0, 0.0)
    assert applied.weights == {"lexical": ADVICE_LEXICAL_WEIGHT, "vector": 1.0, "graph": 0.35}
    explicit = query(weights={"lexical": 0.8}, context_hits=3)
    assert lexical_weight(explicit) == 0.8
    assert r.policy_for(explicit)[0].context_hits == 3  # the request's own setting wins
    fact = query("Which garden tools do I own?")
    policy, routed = r.policy_for(fact)
    assert routed is None and policy == r.settings.policy.resolve(fact.fusion)
    assert lexical_weight(fact) == 1.0
    # a cap, not a raise: a deployment weighting the lexical leg lower keeps its weight
    r.settings = replace(r.settings, policy=replace(r.settings.policy, weights={
        "lexical": 0.05, "vector": 1.0, "graph": 0.35}))
    assert lexical_weight(query()) == 0.05


async def test_an_advice_recall_is_routed_without_context_unless_asked() -> None:
    # the server default (5 hits) looks up the neighbours of a question of fact
    r, store = context_recaller(after={mid(2): mid(40)})
    fact = await r.recall(query("Which garden tools do I own?"))
    assert fact.route is None and mid(40) in [h.memory.id for h in fact.hits]
    assert len(store.next_calls) == 1
    store.next_calls.clear()
    advice = await r.recall(query())
    assert advice.route is not None and advice.route.phrase == "any tips"
    assert store.next_calls == [] and mid(40) not in [h.memory.id for h in advice.hits]
    asked = await r.recall(query(context_hits=2))  # the request's own setting wins
    # ... and the route's lexical weight still holds: the vector leg's 4 is second, not 1
    assert store.next_calls == [[mid(2), mid(4)]] and mid(40) in [h.memory.id for h in asked.hits]


async def test_routing_is_off_per_request_per_deployment_and_for_recency() -> None:
    r, store = context_recaller(after={mid(2): mid(40)})
    off = await r.recall(query(intent_routing=False))
    assert off.route is None and mid(40) in [h.memory.id for h in off.hits]
    assert r.policy_for(replace(query(), sort_by="recency"))[1] is None
    r.settings = replace(r.settings, policy=replace(r.settings.policy, intent_routing=False))
    assert r.policy_for(query())[1] is None
    assert r.policy_for(query(intent_routing=True))[1] is not None  # a request may still ask


