"""The recall policy (recallmesh/policy.py): one declaration per setting gives the
environment's parsing, the request's validation, the proto round trip, the CLI's --set and
the merge rule request > intent route > deployment > built-in."""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from recallmesh.policy import (
    DEFAULT_LEG_WEIGHTS,
    Overrides,
    RecallPolicy,
    checked,
    lexical_setting,
)
from recallmesh.shared.errors import InvalidArgument
from recallmesh.shared.settings import ConfigError
from recallmesh.v1 import memory_pb2

LEGS = ("lexical", "vector", "graph")


def test_every_setting_has_a_variable_a_doc_and_a_proto_field_named_like_it() -> None:
    proto_fields = set(memory_pb2.FusionOverrides.DESCRIPTOR.fields_by_name)
    specs = RecallPolicy.specs()
    assert set(specs) | {"weights"} == {f.name for f in fields(RecallPolicy)}
    for name, (spec, _) in specs.items():
        assert spec.env and spec.env.startswith("RECALLMESH_") and spec.doc
        assert (name in proto_fields) == (spec.proto is not None), name
    # what FusionOverrides carries beyond the settings: the weights and the legs to skip
    assert proto_fields - set(specs) == {"weights", "skip_legs"}
    assert len({spec.env for spec, _ in specs.values()}) == len(specs)


def test_built_in_defaults_and_the_environment() -> None:
    assert RecallPolicy.from_env(environ={}) == RecallPolicy()
    assert RecallPolicy().weights == DEFAULT_LEG_WEIGHTS
    policy = RecallPolicy.from_env(LEGS, {
        "RECALLMESH_FUSION_METHOD": " RRF ", "RECALLMESH_CONTEXT_HITS": "3",
        "RECALLMESH_TIME_BOOST": "0", "RECALLMESH_INTENT_ROUTING": "off",
        "RECALLMESH_LEG_WEIGHTS": "lexical=1.5"})
    assert (policy.method, policy.context_hits, policy.time_boost, policy.intent_routing) == (
        "rrf", 3, 0.0, False)
    assert policy.weights == {**DEFAULT_LEG_WEIGHTS, "lexical": 1.5}
    # legs not in DEFAULT_LEG_WEIGHTS weigh 1; weights are listed for the configured legs
    assert RecallPolicy.from_env(("lexical", "extra"), {}).weights == {
        "lexical": DEFAULT_LEG_WEIGHTS["lexical"], "extra": 1.0}


@pytest.mark.parametrize("env, value, message", [
    ("RECALLMESH_FUSION_METHOD", "borda", "must be one of rrf, cc, cc_bounded, calibrated"),
    ("RECALLMESH_RRF_K", "0", "must be >= 1"),
    ("RECALLMESH_RRF_K", "x", "must be an integer"),
    ("RECALLMESH_LEG_DEPTH", "1001", "must be <= 1000"),
    ("RECALLMESH_CONTEXT_NEXT_WEIGHT", "1.5", r"must be within \[0, 1\]"),
    ("RECALLMESH_TIME_BOOST", "nan", "must be a finite number"),
    ("RECALLMESH_GRAPH_SECOND_STAGE_MIN_MS", "-1", "must be >= 0"),
    ("RECALLMESH_INTENT_ROUTING", "maybe", "must be true or false"),
    ("RECALLMESH_LEG_WEIGHTS", "mystery=1", "not a configured leg"),
    ("RECALLMESH_LEG_WEIGHTS", "lexical=-1", "must be >= 0"),
])
def test_bad_environment_values_name_the_variable(env: str, value: str, message: str) -> None:
    with pytest.raises(ConfigError, match=f"{env}.*{message}|{message}"):
        RecallPolicy.from_env(LEGS, {env: value})


def test_the_lexical_leg_reads_its_own_settings_through_the_policy() -> None:
    assert lexical_setting("bm25_k1", 0.9, {}) == 0.9
    assert lexical_setting("bm25_k1", 0.9, {"RECALLMESH_LEXICAL_BM25_K1": "1.2"}) == 1.2
    with pytest.raises(ConfigError, match="RECALLMESH_LEXICAL_BM25_B"):
        lexical_setting("bm25_b", 0.4, {"RECALLMESH_LEXICAL_BM25_B": "2"})
    # the deployment policy leaves them to the leg: a request passes them on only when set
    assert RecallPolicy.from_env(LEGS, {"RECALLMESH_LEXICAL_BM25_K1": "1.2"}).bm25_k1 is None


def test_the_spelling_threshold_is_the_lexical_legs_deployment_setting() -> None:
    """RECALLMESH_LEXICAL_SPELLING_SIMILARITY (docs/decisions/0013): pg_trgm's default 0.3,
    within 0..1, no per-request override."""
    from recallmesh.services.lexical.settings import LexicalSettings

    spec, _ = RecallPolicy.specs()["lexical_spelling_similarity"]
    assert (spec.owner, spec.proto, spec.env) == (
        "lexical", None, "RECALLMESH_LEXICAL_SPELLING_SIMILARITY")
    assert LexicalSettings().spelling_similarity == 0.3
    assert lexical_setting("lexical_spelling_similarity", 0.3,
                           {"RECALLMESH_LEXICAL_SPELLING_SIMILARITY": "1"}) == 1.0
    with pytest.raises(ConfigError, match="RECALLMESH_LEXICAL_SPELLING_SIMILARITY"):
        lexical_setting("lexical_spelling_similarity", 0.3,
                        {"RECALLMESH_LEXICAL_SPELLING_SIMILARITY": "1.5"})


def test_merge_request_over_route_over_deployment() -> None:
    deployment = RecallPolicy(context_hits=7, time_boost=2.0)
    route = Overrides.of(weights={"lexical": 0.1}, context_hits=0, time_boost=0.0)
    routed = deployment.resolve(Overrides(), route, LEGS)
    assert (routed.context_hits, routed.time_boost, routed.weight("lexical")) == (0, 0.0, 0.1)
    asked = deployment.resolve(Overrides.of(context_hits=3, weights={"lexical": 0.8}), route,
                               LEGS)
    assert (asked.context_hits, asked.time_boost, asked.weight("lexical")) == (3, 0.0, 0.8)
    assert deployment.resolve(Overrides(), None, LEGS) == deployment
    # a route's weight is a cap: it never raises a deployment's lower weight
    low = replace(deployment, weights={"lexical": 0.05, "vector": 1.0})
    assert low.resolve(Overrides(), route).weight("lexical") == 0.05


def test_requests_naming_legs_the_gateway_lacks_or_asking_nothing_are_refused() -> None:
    policy = RecallPolicy()
    with pytest.raises(InvalidArgument, match="unknown legs: mystery"):
        policy.resolve(Overrides.of(weights={"mystery": 1.0}), None, LEGS)
    with pytest.raises(InvalidArgument, match="must leave at least one leg"):
        policy.resolve(Overrides.of(skip_legs=LEGS), None, LEGS)
    with pytest.raises(InvalidArgument, match="every asked leg weight 0"):
        policy.resolve(Overrides.of(weights={"lexical": 0.0, "vector": 0.0},
                                    skip_legs=("graph",)), None, LEGS)
    with pytest.raises(InvalidArgument, match="graph_second_stage needs the graph leg"):
        policy.resolve(Overrides.of(graph_second_stage=True), None, ("lexical", "vector"))


@pytest.mark.parametrize("field, value, message", [
    ("method", "borda", "fusion.method must be one of rrf, cc, cc_bounded, calibrated"),
    ("rrf_k", 1001, r"fusion.rrf_k must be within 1..1000 \(0 = default\)"),
    ("leg_depth", 5000, r"fusion.leg_depth must be within 1..1000 \(0 = default\)"),
    ("context_hits", 51, "fusion.context_hits must be within 0..50"),
    ("bm25_k1", 11.0, r"fusion.bm25_k1 must be within \[0, 10\]"),
    ("exact_bonus", -0.1, r"fusion.exact_bonus must be within \[0, 1\]"),
    ("time_boost", float("inf"), r"fusion.time_boost must be within \[0, 10\]"),
])
def test_bad_request_values_name_the_field(field: str, value: float, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        Overrides.from_proto(memory_pb2.FusionOverrides(
            **{field: value}))  # type: ignore[arg-type]  # the field is named at run time


def test_unset_proto_fields_stay_unset() -> None:
    assert Overrides.from_proto(memory_pb2.FusionOverrides()) == Overrides()
    # "zero" fields: 0 / "" is the deployment's; optional fields: presence is the signal
    msg = memory_pb2.FusionOverrides(method=" ", rrf_k=0, leg_depth=0, context_hits=0)
    assert dict(Overrides.from_proto(msg).values) == {"context_hits": 0}


settings_strategy = st.fixed_dictionaries({}, optional={
    "method": st.sampled_from(["rrf", "cc", "cc_bounded", "calibrated"]),
    "rrf_k": st.integers(1, 1000),
    "importance_strength": st.floats(0, 1),
    "exact_bonus": st.floats(0, 1),
    "leg_depth": st.integers(1, 1000),
    "lexical_ranking": st.sampled_from(["bm25", "ts_rank"]),
    "bm25_k1": st.floats(0, 10),
    "bm25_b": st.floats(0, 1),
    "graph_second_stage": st.booleans(),
    "context_hits": st.integers(0, 50),
    "context_next_weight": st.floats(0, 1),
    "context_prev_weight": st.floats(0, 1),
    "time_boost": st.floats(0, 10),
    "intent_routing": st.booleans(),
})


@given(settings_strategy, st.dictionaries(st.sampled_from(LEGS), st.floats(0, 5), max_size=3))
def test_overrides_survive_the_proto_and_the_command_line(values: dict[str, Any],
                                                           weights: dict[str, float]) -> None:
    overrides = Overrides.of(weights=weights, **values)
    assert Overrides.from_proto(overrides.to_proto()) == overrides
    assignments = [f"{name}={value}" for name, value in values.items()] + [
        f"weights.{leg}={w!r}" for leg, w in weights.items()]
    assert Overrides.parse(assignments) == overrides
    # the request's settings are exactly what the resolved policy runs with
    resolved = RecallPolicy().resolve(overrides)
    for name, value in values.items():
        assert getattr(resolved, name) == value
    for leg, weight in weights.items():
        assert resolved.weight(leg) == weight


@given(st.sampled_from(sorted(RecallPolicy.specs())), st.one_of(
    st.integers(-10**6, 10**6), st.floats(allow_nan=True), st.text(max_size=20)))
def test_checked_accepts_or_refuses_with_the_field_name_never_crashes(name: str,
                                                                      value: float | str) -> None:
    spec, kind = RecallPolicy.specs()[name]
    if kind in (int, float) and isinstance(value, str):
        return  # the proto's types make a string impossible for a number field
    try:
        checked(name, value, f"fusion.{name}")
    except InvalidArgument as exc:
        assert exc.message.startswith(f"fusion.{name} ")


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_values_are_refused_for_every_numeric_setting(value: float) -> None:
    # found by hypothesis: graph_second_stage_min_ms (no upper bound) with nan raised TypeError
    for name, (spec, kind) in RecallPolicy.specs().items():
        if kind in (int, float) and not spec.choices:
            with pytest.raises(InvalidArgument, match=f"fusion.{name} "):
                checked(name, value, f"fusion.{name}")


@pytest.mark.parametrize("assignment, message", [
    ("intent_routing=maybe", "not true or false"),
    ("context_hits=three", "not an integer"),
    ("weights.vector=heavy", "a weight is a number"),
    ("graph_second_stage_seeds=3", "unknown setting 'graph_second_stage_seeds'"),  # deployment
    ("rrf_k", "expected name=value"),
])
def test_bad_command_line_settings_say_what_is_wrong(assignment: str, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        Overrides.parse([assignment])
