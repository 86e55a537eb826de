"""The gateway's own settings: the legs it fans out to, its budget, its targets, the default
expiry by namespace; how it ranks is its `policy` (recallmesh/policy.py)."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field

from recallmesh.policy import RecallPolicy
from recallmesh.shared.legs import (
    BUILT_IN_LEGS,
    GRAPH_LEG,
    LEXICAL_LEG,
    VECTOR_LEG,
    LegName,
    leg_names,
)
from recallmesh.shared.settings import (
    ConfigError,
    at_most,
    default_target,
    env_bool,
    env_int,
    env_str,
    parse_duration_s,
)
from recallmesh.wire.validation import MAX_BUDGET_MS, MAX_INDEX_WAIT_MS

# Legs searched with the embedded query (RECALLMESH_<LEG>_NEEDS_VECTOR overrides).
LEGS_NEEDING_VECTOR = frozenset({VECTOR_LEG, GRAPH_LEG})
ALL_LEGS = ",".join(BUILT_IN_LEGS)
# The legs that search sensitive memories: they are never embedded nor linked into the concept
# graph, so every other leg is blind to them (calibrated fusion does not count it against them).
SENSITIVE_LEGS = (LEXICAL_LEG,)

@dataclass(frozen=True)
class LegTarget:
    name: LegName
    target: str  # host:port of a RetrieverService
    needs_vector: bool = False


@dataclass(frozen=True)
class NamespaceTTL:
    """Default time to live of memories by namespace (RECALLMESH_NAMESPACE_TTL): rules
    `pattern=duration`, a pattern an exact namespace or a prefix ending in `*` (`*` alone
    matches every namespace). An exact rule beats a prefix rule, and a longer prefix a
    shorter one; a duration of 0 means no default TTL (an exception to a broader rule)."""

    exact: tuple[tuple[str, int], ...] = ()
    prefixes: tuple[tuple[str, int], ...] = ()  # longest prefix first

    def ttl_s(self, namespace: str) -> int | None:
        """Seconds a memory stored in `namespace` without its own expires_at lives, or None."""
        for name, seconds in self.exact:
            if name == namespace:
                return seconds or None
        for prefix, seconds in self.prefixes:
            if namespace.startswith(prefix):
                return seconds or None
        return None


def parse_namespace_ttl(raw: str, name: str = "RECALLMESH_NAMESPACE_TTL") -> NamespaceTTL:
    """`team-*=30d,scratch=1h,team-keep=0` -> NamespaceTTL; ConfigError when malformed."""
    exact: dict[str, int] = {}
    prefixes: dict[str, int] = {}
    for item in (part.strip() for part in raw.split(",")):
        if not item:
            continue
        pattern, sep, duration = item.rpartition("=")
        pattern = unicodedata.normalize("NFC", pattern).strip()
        if not sep or not pattern:
            raise ConfigError(f"{name}: each rule is pattern=duration, got {item!r}")
        seconds = parse_duration_s(duration, name)
        star = pattern.endswith("*")
        if "*" in pattern[:-1]:
            raise ConfigError(f"{name}: `*` may only end a pattern, got {pattern!r}")
        table, key = (prefixes, pattern[:-1]) if star else (exact, pattern)
        if key in table:
            raise ConfigError(f"{name}: {pattern!r} has two rules")
        table[key] = seconds
    return NamespaceTTL(
        exact=tuple(exact.items()),
        prefixes=tuple(sorted(prefixes.items(), key=lambda kv: -len(kv[0]))),
    )


@dataclass(frozen=True)
class GatewaySettings:
    """Where the gateway finds everything and how long it waits; how it ranks is its
    `policy` (recallmesh/policy.py: every recall setting, with its env variable)."""

    legs: tuple[LegTarget, ...]
    default_budget_ms: int
    reserve_ms: int  # kept back from the budget for fusion + hydration
    embedding_target: str = "localhost:50054"  # embeds queries for legs that need a vector
    index_wait_ms: int = 30000  # default upper bound of a write's wait for indexing
    fusion_target: str = ""  # host:port of the fusion service; "" fuses in-process only
    fusion_timeout_ms: int = 25  # a fusion call later than this falls back to in-process
    namespace_ttl: NamespaceTTL = NamespaceTTL()  # default TTL of memories by namespace
    policy: RecallPolicy = field(default_factory=RecallPolicy)

    @classmethod
    def from_env(cls) -> GatewaySettings:
        names = leg_names()
        legs = [
            LegTarget(
                name,
                default_target(name),
                env_bool(f"RECALLMESH_{name.upper()}_NEEDS_VECTOR", name in LEGS_NEEDING_VECTOR),
            )
            for name in names
        ]
        budget = at_most("RECALLMESH_RECALL_BUDGET_MS",
                          env_int("RECALLMESH_RECALL_BUDGET_MS", 800, minimum=10), MAX_BUDGET_MS)
        reserve = env_int("RECALLMESH_RECALL_RESERVE_MS", 50, minimum=0)
        if reserve >= budget:
            raise ConfigError("RECALLMESH_RECALL_RESERVE_MS must be below the budget")
        return cls(
            legs=tuple(legs),
            default_budget_ms=budget,
            reserve_ms=reserve,
            embedding_target=default_target("embedding"),
            index_wait_ms=at_most("RECALLMESH_INDEX_WAIT_MS",
                                   env_int("RECALLMESH_INDEX_WAIT_MS", 30000, minimum=0),
                                   MAX_INDEX_WAIT_MS),
            fusion_target=(
                "" if env_str("RECALLMESH_FUSION_TARGET", "").lower() in ("local", "none")
                else default_target("fusion")
            ),
            fusion_timeout_ms=env_int("RECALLMESH_FUSION_TIMEOUT_MS", 25, minimum=1),
            namespace_ttl=parse_namespace_ttl(env_str("RECALLMESH_NAMESPACE_TTL", "")),
            policy=RecallPolicy.from_env(names),
        )


