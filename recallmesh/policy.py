"""The recall policy: every setting that decides how a recall ranks, defined once.

Each setting is one field of `RecallPolicy` and carries, in its field metadata, everything
else about it: its built-in default (the field's default), the environment variable a
deployment sets it with, how a request overrides it (`FusionOverrides.<name>` in
protos/recallmesh/v1/memory.proto), its bounds or choices, and one line of documentation.
From that one declaration come the deployment's parsing (`RecallPolicy.from_env`), the
request's validation (`Overrides.from_proto`), the request message a client or a benchmark
sends (`Overrides.to_proto`), the command line's `--set name=value` (`Overrides.parse`) and
the merge rule (`RecallPolicy.resolve`):

    request  >  query-intent route  >  deployment (environment)  >  built-in default

Adding a setting touches the proto (a `FusionOverrides` field named like the setting), one
field here, and the code that uses it.

Four settings belong to the lexical leg (`owner="lexical"`): the leg process reads their
environment variables itself (recallmesh.services.lexical), and the gateway passes them on only
when a request sets them, so their policy value is None unless a request asked.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from types import MappingProxyType, UnionType
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

from recallmesh.shared.errors import InvalidArgument
from recallmesh.shared.legs import GRAPH_LEG, LEXICAL_LEG, VECTOR_LEG, LegName
from recallmesh.shared.settings import (
    ConfigError,
    env_bool,
    env_float,
    env_int,
    env_str,
    parse_bool,
)
from recallmesh.v1 import memory_pb2

RRF_K = 60
# The ranker's methods and a recall's orders, by name (the wire's enums FusionMethod and SortBy;
# recallmesh/wire/enums.py refuses to import where they differ from the protos' names).
FusionMethod = Literal["rrf", "cc", "cc_bounded", "calibrated"]
METHODS: tuple[FusionMethod, ...] = get_args(FusionMethod)
SortBy = Literal["relevance", "importance", "recency"]
SORT_ORDERS: tuple[SortBy, ...] = get_args(SortBy)
DEFAULT_IMPORTANCE_STRENGTH = 0.3
DEFAULT_EXACT_BONUS = 0.05


@dataclass(frozen=True)
class FusionSettings:
    """How one recall's lists are fused (the part of the policy the fusion math reads; it
    crosses the fusion contract as FusionSettings, recallmesh/wire/fusion.py)."""

    method: FusionMethod = "rrf"
    rrf_k: int = RRF_K
    importance_strength: float = DEFAULT_IMPORTANCE_STRENGTH
    exact_bonus: float = DEFAULT_EXACT_BONUS
    sort_by: SortBy = "relevance"

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"fusion method must be one of {METHODS}, got {self.method!r}")
        if not 1 <= self.rrf_k <= 1000:
            raise ValueError(f"rrf_k must be within 1..1000, got {self.rrf_k}")
        for name in ("importance_strength", "exact_bonus"):
            value = getattr(self, name)
            if not (math.isfinite(value) and 0.0 <= value <= 1.0):
                raise ValueError(f"{name} must be within [0, 1], got {value}")


MAX_SEED_MEMORIES = 100  # memories one request may name as seeds (graph leg)
# How the lexical leg ranks, and whether it may search the BM25 index (its settings below).
LexicalRanking = Literal["ts_rank", "bm25"]
LEXICAL_RANKINGS: tuple[LexicalRanking, ...] = get_args(LexicalRanking)
BM25IndexMode = Literal["auto", "off"]
BM25_INDEX_MODES: tuple[BM25IndexMode, ...] = get_args(BM25IndexMode)
# The relevance floor a deployment serves with (RECALLMESH_MIN_SCORE overrides): the highest
# floor at which no evidence set loses recall clearly
# (docs/decisions/0012-ranking-apart-from-scoring.md).
DEFAULT_MIN_SCORE = 0.075
MAX_LEG_DEPTH = 1000  # candidates one leg may be asked for (SearchRequest.k)
# Default fusion weight per leg (RECALLMESH_LEG_WEIGHTS overrides); others get 1.0. Lexical
# and vector alike under cc: the setting the decision rule keeps
# (docs/decisions/0012-ranking-apart-from-scoring.md).
DEFAULT_LEG_WEIGHTS: dict[LegName, float] = {LEXICAL_LEG: 1.0, VECTOR_LEG: 1.0, GRAPH_LEG: 0.35}
LEG_WEIGHTS_ENV = "RECALLMESH_LEG_WEIGHTS"


@dataclass(frozen=True)
class Spec:
    """How one setting is set, checked and documented."""

    env: str | None  # the deployment's variable (None: not set per deployment)
    doc: str
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()
    # How FusionOverrides carries it: "optional" (unset when the field is absent), "zero"
    # (0 / "" is unset), or None (deployment only, no per-request override).
    proto: str | None = "optional"
    # "lexical": read by the lexical leg, passed on when a request sets it
    owner: Literal["gateway", "lexical"] = "gateway"


def setting(default: Any, spec: Spec) -> Any:
    return field(default=default, metadata={"spec": spec})


class _Bad(ValueError):
    """A value outside its setting's bounds (the caller names where it came from)."""


def _check(name: str, spec: Spec, kind: type, value: Any, style: str) -> Any:
    """`value` checked against the spec; _Bad with a message in the caller's style ("env":
    `>= / <=`, "proto": `within`) otherwise."""
    if spec.choices:
        value = str(value).strip().lower()
        if value not in spec.choices:
            raise _Bad(f"must be one of {', '.join(spec.choices)}, got {value[:32]!r}")
        return value
    if kind is bool:
        return bool(value)
    low, high = spec.low, spec.high
    if isinstance(value, float) and not math.isfinite(value) and kind is int:
        raise _Bad(f"must be a whole number, got {value}")
    if kind is float and not math.isfinite(value):
        if low is not None and high is not None:
            raise _Bad(f"must be within [{low:g}, {high:g}], got {value}")
        raise _Bad(f"must be a finite number, got {value!r}")
    inside = (low is None or value >= low) and (high is None or value <= high)
    if inside:
        return kind(value)
    if kind is float and low is not None and high is not None:
        raise _Bad(f"must be within [{low:g}, {high:g}], got {value}")
    if style == "proto" and low is not None and high is not None:
        lowest = low if spec.proto != "zero" else max(low, 1)
        unset = " (0 = default)" if spec.proto == "zero" else ""
        raise _Bad(f"must be within {lowest:g}..{high:g}{unset}, got {value}")
    if low is not None and value < low:
        raise _Bad(f"must be >= {low:g}, got {value}")
    raise _Bad(f"must be <= {high:g}, got {value}")


@dataclass(frozen=True)
class RecallPolicy:
    """The settings one recall runs with. A deployment's policy comes from `from_env`; a
    request's is `deployment.resolve(request overrides, route, legs)`."""

    method: FusionMethod = setting("cc", Spec(
        "RECALLMESH_FUSION_METHOD", "the ranker (fusion method; a hit's score is its "
        "relevance estimate whatever the method): convex combination of min-max normalised "
        "scores, cc with cosine on its -1..1 range, calibrated (each leg's score on an "
        "absolute scale: BM25 over the query's summed idf, cosine above the model's cosine "
        "floor), or weighted Reciprocal Rank Fusion",
        choices=METHODS, proto="zero"))
    rrf_k: int = setting(RRF_K, Spec(
        "RECALLMESH_RRF_K", "the RRF constant k", 1, 1000, proto="zero"))
    importance_strength: float = setting(DEFAULT_IMPORTANCE_STRENGTH, Spec(
        "RECALLMESH_IMPORTANCE_STRENGTH", "how much a memory's importance weighs its fused "
        "score: x ((1 - s) + s x importance)", 0.0, 1.0))
    exact_bonus: float = setting(DEFAULT_EXACT_BONUS, Spec(
        "RECALLMESH_EXACT_BONUS", "bonus, as a share of the best possible fused score, for a "
        "memory that contains every query term", 0.0, 1.0))
    leg_depth: int = setting(50, Spec(
        "RECALLMESH_LEG_DEPTH", "candidates asked of each leg (at least k)", 1, MAX_LEG_DEPTH,
        proto="zero"))
    lexical_ranking: LexicalRanking | None = setting(None, Spec(
        "RECALLMESH_LEXICAL_RANKING", "the lexical leg's ranking: bm25, or ts_rank (the plain "
        "Postgres full-text baseline)", choices=LEXICAL_RANKINGS, proto="zero", owner="lexical"))
    bm25_k1: float | None = setting(None, Spec(
        "RECALLMESH_LEXICAL_BM25_K1", "BM25 term-frequency saturation k1", 0.0, 10.0,
        owner="lexical"))
    bm25_b: float | None = setting(None, Spec(
        "RECALLMESH_LEXICAL_BM25_B", "BM25 length normalisation b", 0.0, 1.0, owner="lexical"))
    lexical_spelling_similarity: float | None = setting(None, Spec(
        "RECALLMESH_LEXICAL_SPELLING_SIMILARITY", "BM25: a query term no memory of the "
        "namespace holds is read as the namespace's nearest term by spelling (an edit away) "
        "among those whose trigram similarity (pg_trgm) reaches this, weighted by it (1: off)",
        0.0, 1.0, proto=None,
        owner="lexical"))
    lexical_language_prior: float | None = setting(None, Spec(
        "RECALLMESH_LEXICAL_LANGUAGE_PRIOR", "BM25: a term's idf counts the namespace's "
        "memories as if this many memories of the language stood beside them, holding the term "
        "as often as the language uses it (wordfreq; docs/decisions/0021-words-of-the-"
        "language.md); 0: the namespace's own counts alone", 0.0, 1_000_000.0, proto=None,
        owner="lexical"))
    lexical_bm25_index: BM25IndexMode | None = setting(None, Spec(
        "RECALLMESH_LEXICAL_BM25_INDEX", "BM25: auto searches the pg_textsearch index when the "
        "database has it and a query's terms are common (docs/decisions/0018-bm25-index.md); "
        "off keeps every query on the SQL statements over the postings",
        choices=BM25_INDEX_MODES, proto=None, owner="lexical"))
    lexical_bm25_index_min_postings: int | None = setting(None, Spec(
        "RECALLMESH_LEXICAL_BM25_INDEX_MIN_POSTINGS", "BM25: the postings a query's terms must "
        "bring in the namespace for the index to answer it (below, the SQL statement is the "
        "faster; 0: every query the index can answer)", 0, 1_000_000_000, proto=None,
        owner="lexical"))
    graph_second_stage: bool = setting(False, Spec(
        "RECALLMESH_GRAPH_SECOND_STAGE", "ask the graph leg again, seeded by the other legs' "
        "best fused hits (needs the graph leg)"))
    graph_second_stage_seeds: int = setting(5, Spec(
        "RECALLMESH_GRAPH_SECOND_STAGE_SEEDS", "memories the second stage is seeded with",
        1, MAX_SEED_MEMORIES, proto=None))
    graph_second_stage_min_ms: int = setting(50, Spec(
        "RECALLMESH_GRAPH_SECOND_STAGE_MIN_MS", "budget left that the second stage needs to "
        "run", 0, None, proto=None))
    context_hits: int = setting(5, Spec(
        "RECALLMESH_CONTEXT_HITS", "context propagation: how many of the best hits pass a "
        "share of their score to the memories stored right after / before them in their "
        "thread (Memory.thread; 0: off)",
        0, 50))
    context_next_weight: float = setting(0.3, Spec(
        "RECALLMESH_CONTEXT_NEXT_WEIGHT", "the share the memory stored next after a hit "
        "gains", 0.0, 1.0))
    context_prev_weight: float = setting(0.2, Spec(
        "RECALLMESH_CONTEXT_PREV_WEIGHT", "the share the memory stored just before a hit "
        "gains", 0.0, 1.0))
    time_boost: float = setting(0.0, Spec(
        "RECALLMESH_TIME_BOOST", "memories created inside the time window a query names get "
        "their fused score x (1 + this) (0: off)", 0.0, 10.0))
    restated_similarity: float = setting(0.8, Spec(
        "RECALLMESH_RESTATED_SIMILARITY", "newest first among restatements: of two current "
        "hits that are facts (no thread), whose vectors are at least this similar (cosine), "
        "share two content words and where the newer says it changed, the newer ranks just "
        "above the older (0: off)", 0.0, 1.0))
    min_score: float = setting(DEFAULT_MIN_SCORE, Spec(
        "RECALLMESH_MIN_SCORE", "the relevance floor: Recall answers nothing when its best hit "
        "scores below it; Context leaves out every hit below it (0: none). Under calibrated "
        "fusion a score estimates the probability that the memory is relevant "
        "(recallmesh/embedding_models/calibration.py)",
        0.0, 1.0))
    intent_routing: bool = setting(True, Spec(
        "RECALLMESH_INTENT_ROUTING", "query-intent routing: an intent read from the query "
        "(advice) sets the settings the request leaves unset"))
    # Per-leg fusion weights (RECALLMESH_LEG_WEIGHTS "leg=w,..."; per request
    # FusionOverrides.weights); a leg not listed weighs 1.
    weights: Mapping[LegName, float] = field(default_factory=lambda: dict(DEFAULT_LEG_WEIGHTS))

    def weight(self, leg: LegName) -> float:
        return self.weights.get(leg, 1.0)

    def fusion_settings(self, sort_by: SortBy) -> FusionSettings:
        """What the fusion core (and the fusion service) needs of it."""
        return FusionSettings(method=self.method, rrf_k=self.rrf_k,
                              importance_strength=self.importance_strength,
                              exact_bonus=self.exact_bonus,
                              sort_by="relevance" if sort_by == "recency" else sort_by)

    @classmethod
    def specs(cls) -> Mapping[str, tuple[Spec, type]]:
        """name -> (spec, value type) of every setting but the weights (read once)."""
        return _specs()

    @classmethod
    def from_env(cls, legs: Iterable[LegName] = tuple(DEFAULT_LEG_WEIGHTS),
                 environ: Mapping[str, str] | None = None) -> RecallPolicy:
        """The deployment's policy: built-in defaults, then the environment's settings.
        `legs`: the legs the gateway fans out to (weights are listed for those)."""
        legs = list(legs)
        values: dict[str, Any] = {}
        for name, (spec, kind) in cls.specs().items():
            if spec.env is None or spec.owner != "gateway":
                continue
            raw = env_str(spec.env, "", environ)
            if raw:
                values[name] = env_value(spec.env, spec, kind, raw)
        weights = {leg: DEFAULT_LEG_WEIGHTS.get(leg, 1.0) for leg in legs}
        weights.update(parse_weights(env_str(LEG_WEIGHTS_ENV, "", environ), legs))
        return cls(**values, weights=weights)

    def resolve(self, request: Overrides, route: Overrides | None = None,
                legs: Iterable[LegName] | None = None) -> RecallPolicy:
        """This (deployment) policy with a route's and then a request's overrides applied:
        request > route > deployment. A route's weights are caps on the deployment's (never
        raise a weight). `legs`, when given, are the legs the gateway runs: a request that
        names another, or skips them all, or asks the graph second stage without the graph
        leg, is refused (InvalidArgument)."""
        if legs is not None:
            request.check_legs(legs)
        values = dict(route.values) if route is not None else {}
        weights = dict(self.weights)
        for leg, cap in (route.weights if route is not None else {}).items():
            if leg in weights and leg not in request.weights:
                weights[leg] = min(weights[leg], cap)
        values.update(request.values)
        weights.update(request.weights)
        policy = replace(self, **values, weights=weights)
        asked = [leg for leg in (legs if legs is not None else weights)
                 if leg not in request.skip_legs]
        if legs is not None and asked and not any(policy.weight(leg) > 0 for leg in asked):
            raise InvalidArgument("fusion.weights give every asked leg weight 0")
        return policy


def env_value(env: str, spec: Spec, kind: type, raw: str) -> Any:
    """A setting's environment variable, parsed (recallmesh.shared.settings's readers) and
    checked against its bounds (ConfigError otherwise)."""
    environ = {env: raw}
    if kind is bool:
        return env_bool(env, False, environ)
    value: Any = raw
    if kind is int:
        value = env_int(env, 0, environ=environ)
    elif kind is float:
        value = env_float(env, 0.0, environ)
    try:
        return _check(env, spec, kind, value, "env")
    except _Bad as exc:
        raise ConfigError(f"{env} {exc}") from None


def parse_weights(raw: str, legs: list[LegName]) -> dict[LegName, float]:
    """RECALLMESH_LEG_WEIGHTS ("lexical=0.7,vector=1"): weights of configured legs, >= 0."""
    weights = {}
    for item in filter(None, (part.strip() for part in raw.split(","))):
        name, _, value = item.partition("=")
        name = name.strip()
        if name not in legs:
            raise ConfigError(f"{LEG_WEIGHTS_ENV} names {name!r}, not a configured leg")
        try:
            weight = float(value)
        except ValueError:
            raise ConfigError(f"{LEG_WEIGHTS_ENV}: bad weight in {item!r}") from None
        if not (math.isfinite(weight) and weight >= 0):
            raise ConfigError(f"{LEG_WEIGHTS_ENV}: weight of {name} must be >= 0")
        weights[name] = weight
    return weights


@functools.cache
def _specs() -> Mapping[str, tuple[Spec, type]]:
    hints = get_type_hints(RecallPolicy)
    return MappingProxyType({f.name: (f.metadata["spec"], _value_type(hints[f.name]))
                             for f in fields(RecallPolicy) if "spec" in f.metadata})


def _value_type(hint: Any) -> type:
    """The type a setting's value has: `float | None` is float, a Literal of names str."""
    if get_origin(hint) in (Union, UnionType):
        hint = next(a for a in get_args(hint) if a is not type(None))
    if get_origin(hint) is Literal:
        return type(get_args(hint)[0])
    assert isinstance(hint, type), hint
    return hint


@dataclass(frozen=True)
class Overrides:
    """What a request (or a route, a benchmark configuration, a CLI call) sets: only the
    settings it names. `values` holds checked values of RecallPolicy settings; `weights`
    per-leg weights; `skip_legs` legs not to ask."""

    values: Mapping[str, Any] = field(default_factory=dict)
    weights: Mapping[LegName, float] = field(default_factory=dict)
    skip_legs: tuple[LegName, ...] = ()

    @classmethod
    def of(cls, weights: Mapping[LegName, float] | None = None, skip_legs: Iterable[LegName] = (),
           **values: Any) -> Overrides:
        """Overrides from Python values, checked like a request's (InvalidArgument)."""
        specs = RecallPolicy.specs()
        checked = {}
        for name, value in values.items():
            if name not in specs:
                raise InvalidArgument(f"unknown recall setting {name!r} "
                                      f"(known: {', '.join(sorted(specs))})")
            if value is None:
                continue
            spec, kind = specs[name]
            checked[name] = _proto_checked(name, spec, kind, value)
        return cls(checked, _checked_weights(weights or {}),
                   tuple(dict.fromkeys(leg.strip() for leg in skip_legs)))


    @classmethod
    def from_proto(cls, msg: memory_pb2.FusionOverrides) -> Overrides:
        """A FusionOverrides message, validated (InvalidArgument naming the field)."""
        specs = RecallPolicy.specs()
        values = {}
        for name, (spec, kind) in specs.items():
            if spec.proto is None:
                continue
            if spec.proto == "optional":
                if not msg.HasField(name):
                    continue
                value = getattr(msg, name)
            else:
                value = getattr(msg, name)
                if isinstance(value, str):
                    value = value.strip()
                if not value:
                    continue
            values[name] = _proto_checked(name, spec, kind, value)
        return cls(values, _checked_weights(dict(msg.weights)),
                   tuple(dict.fromkeys(leg.strip() for leg in msg.skip_legs)))

    def to_proto(
        self, msg: memory_pb2.FusionOverrides | None = None,
    ) -> memory_pb2.FusionOverrides:
        """These overrides as a FusionOverrides message (what a client sends)."""
        msg = memory_pb2.FusionOverrides() if msg is None else msg
        for name, value in self.values.items():
            setattr(msg, name, value)
        msg.weights.update(self.weights)
        msg.skip_legs.extend(self.skip_legs)
        return msg

    @classmethod
    def parse(cls, assignments: Iterable[str]) -> Overrides:
        """`name=value` strings (the CLI's --set; `weights.<leg>=w`, `skip_legs=a,b`)."""
        specs = RecallPolicy.specs()
        values: dict[str, Any] = {}
        weights: dict[str, float] = {}
        skip: list[str] = []
        for item in assignments:
            name, sep, raw = item.partition("=")
            name, raw = name.strip(), raw.strip()
            if not sep:
                raise InvalidArgument(f"--set {item!r}: expected name=value")
            if name.startswith("weights."):
                try:
                    weights[name.removeprefix("weights.")] = float(raw)
                except ValueError:
                    raise InvalidArgument(f"--set {item!r}: a weight is a number") from None
            elif name == "skip_legs":
                skip.extend(leg for leg in raw.split(",") if leg.strip())
            elif name in specs and specs[name][0].proto is not None:
                kind = specs[name][1]
                try:
                    values[name] = parse_bool(raw) if kind is bool else kind(raw)
                except ValueError:
                    what = {bool: "true or false", int: "an integer"}.get(kind, "a number")
                    raise InvalidArgument(f"--set {item!r}: not {what}") from None
            else:
                per_request = sorted(n for n, (s, _) in specs.items() if s.proto is not None)
                raise InvalidArgument(f"--set: unknown setting {name!r} (per request: "
                                      f"{', '.join(per_request)}, weights.<leg>, skip_legs)")
        return cls.of(weights=weights, skip_legs=skip, **values)

    def check_legs(self, legs: Iterable[LegName]) -> None:
        """The legs it names exist; it leaves one to ask; the second stage has its leg."""
        names = set(legs)
        unknown = sorted((set(self.weights) | set(self.skip_legs)) - names)
        if unknown:
            raise InvalidArgument(f"fusion names unknown legs: {', '.join(unknown)} "
                                  f"(legs: {', '.join(sorted(names))})")
        if names and set(self.skip_legs) >= names:
            raise InvalidArgument("fusion.skip_legs must leave at least one leg")
        if self.values.get("graph_second_stage") and (GRAPH_LEG not in names
                                                      or GRAPH_LEG in self.skip_legs):
            raise InvalidArgument(
                "fusion.graph_second_stage needs the graph leg, which this request does not "
                f"ask (legs: {', '.join(sorted(names))}; skipped: "
                f"{', '.join(self.skip_legs) or 'none'})")


def _proto_checked(name: str, spec: Spec, kind: type, value: Any) -> Any:
    return checked(name, value, f"fusion.{name}")


def checked(name: str, value: Any, label: str) -> Any:
    """`value` for setting `name`, checked like a request's; InvalidArgument naming `label`
    (the field it came in) otherwise. The lexical leg checks its SearchRequest with it."""
    spec, kind = RecallPolicy.specs()[name]
    try:
        return _check(name, spec, kind, value, "proto")
    except _Bad as exc:
        raise InvalidArgument(f"{label} {exc}") from None


def _checked_weights(weights: Mapping[LegName, float]) -> dict[LegName, float]:
    checked = {}
    for leg, weight in weights.items():
        if not (math.isfinite(weight) and weight >= 0):
            raise InvalidArgument(f"fusion.weights[{leg[:64]!r}] must be >= 0, got {weight}")
        checked[leg] = float(weight)
    return checked


def lexical_setting(name: str, default: Any, environ: Mapping[str, str] | None = None) -> Any:
    """One of the lexical leg's own settings (owner "lexical") from its environment."""
    spec, kind = RecallPolicy.specs()[name]
    assert spec.owner == "lexical" and spec.env is not None
    raw = env_str(spec.env, "", environ)
    return env_value(spec.env, spec, kind, raw) if raw else default
