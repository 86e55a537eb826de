"""Process configuration from environment variables, with documented defaults.

Every recallmesh process reads its settings here and nowhere else. The table in
docs/configuration.md lists each variable; keep the two in step.
"""

from __future__ import annotations

import math
import os
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from recallmesh.wire.policy import RecallPolicy

# Ports of the default local layout. Each service also serves Prometheus
# metrics over HTTP on its own port.
DEFAULT_PORTS: dict[str, tuple[int, int]] = {
    # service: (grpc port, metrics port)
    "gateway": (50051, 9451),
    "lexical": (50052, 9452),
    "vector": (50053, 9453),
    "embedding": (50054, 9454),
    "indexer": (50055, 9455),
    "fusion": (50056, 9456),
    "graph": (50057, 9457),
}

# How many RPCs each service runs at once (RECALLMESH_<SERVICE>_MAX_CONCURRENT_RPCS; 0: no
# limit); one more is refused at once with RESOURCE_EXHAUSTED. Why these numbers: see
# docs/configuration.md ("Admission control").
DEFAULT_MAX_CONCURRENT_RPCS: dict[str, int] = {
    "gateway": 32,
    "lexical": 64,
    "vector": 64,
    "graph": 64,
    "fusion": 64,
    "embedding": 128,
    "indexer": 16,  # serves health and reflection only, which are never counted
}


class ConfigError(ValueError):
    """A setting is present but unusable."""


def _env(
    name: str, default: str | None = None, environ: Mapping[str, str] | None = None
) -> str | None:
    value = (os.environ if environ is None else environ).get(name)
    if value is None or value.strip() == "":
        return default
    return value.strip()


def env_int(
    name: str, default: int, *, minimum: int | None = None, environ: Mapping[str, str] | None = None
) -> int:
    raw = _env(name, environ=environ)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise ConfigError(f"{name} must be an integer, got {raw!r}") from exc
    if minimum is not None and value < minimum:
        raise ConfigError(f"{name} must be >= {minimum}, got {value}")
    return value


def env_float(
    name: str,
    default: float,
    environ: Mapping[str, str] | None = None,
    *,
    minimum: float | None = None,
) -> float:
    raw = _env(name, environ=environ)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError as exc:
        raise ConfigError(f"{name} must be a number, got {raw!r}") from exc
    if not math.isfinite(value):
        raise ConfigError(f"{name} must be a finite number, got {raw!r}")
    if minimum is not None and value < minimum:
        raise ConfigError(f"{name} must be >= {minimum}, got {raw!r}")
    return value


def _at_most(name: str, value: int, maximum: int) -> int:
    if value > maximum:
        raise ConfigError(f"{name} must be at most {maximum}, got {value}")
    return value


def parse_bool(raw: str) -> bool:
    """A boolean's text (a variable, the CLI's --set): true/false, 1/0, yes/no, on/off;
    ValueError otherwise."""
    word = raw.strip().lower()
    if word in ("1", "true", "yes", "on"):
        return True
    if word in ("0", "false", "no", "off"):
        return False
    raise ValueError(raw)


def env_bool(name: str, default: bool, environ: Mapping[str, str] | None = None) -> bool:
    raw = _env(name, environ=environ)
    if raw is None:
        return default
    try:
        return parse_bool(raw)
    except ValueError:
        raise ConfigError(f"{name} must be true or false, got {raw!r}") from None


def env_str(name: str, default: str, environ: Mapping[str, str] | None = None) -> str:
    value = _env(name, default, environ)
    assert value is not None
    return value


def data_dir() -> Path:
    """Where the embedded Postgres keeps its data (RECALLMESH_DATA_DIR, default .data in the
    working directory: `make run` runs in the checkout's root)."""
    return Path(env_str("RECALLMESH_DATA_DIR", ".data")).resolve()


def default_target(name: str, environ: Mapping[str, str] | None = None) -> str:
    """host:port of a service: RECALLMESH_<NAME>_TARGET, else localhost on its configured port."""
    target = _env(f"RECALLMESH_{name.upper()}_TARGET", environ=environ)
    if target is not None:
        return target
    if name not in DEFAULT_PORTS:
        raise ConfigError(f"service {name!r} needs RECALLMESH_{name.upper()}_TARGET")
    return f"localhost:{ServerConfig.from_env(name, environ).port}"


def configured_dsn() -> str | None:
    """An external Postgres DSN, or None for the embedded default."""
    return _env("RECALLMESH_DSN")


@dataclass(frozen=True)
class ServerConfig:
    """Where one service listens."""

    name: str
    host: str
    port: int
    metrics_port: int  # 0 disables the metrics HTTP endpoint
    grace_seconds: float = 5.0
    readiness_interval_s: float = 2.0  # how often readiness is checked again
    max_concurrent_rpcs: int = 0  # RPCs in progress at once; 0: no limit

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @classmethod
    def from_env(cls, name: str, environ: Mapping[str, str] | None = None) -> ServerConfig:
        grpc_port, metrics_port = DEFAULT_PORTS[name]
        prefix = f"RECALLMESH_{name.upper()}_"
        return cls(
            name=name,
            host=env_str(prefix + "HOST", "localhost", environ),
            port=env_int(prefix + "PORT", grpc_port, minimum=1, environ=environ),
            metrics_port=env_int(prefix + "METRICS_PORT", metrics_port, minimum=0, environ=environ),
            grace_seconds=env_float("RECALLMESH_SHUTDOWN_GRACE_S", 5.0, environ),
            readiness_interval_s=env_float("RECALLMESH_READINESS_INTERVAL_S", 2.0, environ,
                                           minimum=0.1),
            max_concurrent_rpcs=env_int(prefix + "MAX_CONCURRENT_RPCS",
                                        DEFAULT_MAX_CONCURRENT_RPCS[name], minimum=0,
                                        environ=environ),
        )


# The name-embedding cosine at which a new surface form joins an existing concept. It depends on
# the model's cosine scale: 0.84 for nomic-embed-text-v1.5 (the default), 0.78 for MiniLM
# (benchmarks/reports/concept-names.md); RECALLMESH_CONCEPT_MERGE_THRESHOLD overrides.
DEFAULT_CONCEPT_MERGE_THRESHOLD = 0.84


# Legs searched with the embedded query (RECALLMESH_<LEG>_NEEDS_VECTOR overrides).
LEGS_NEEDING_VECTOR = frozenset({"vector", "graph"})
# The legs a gateway fans out to unless RECALLMESH_LEGS says otherwise. The graph leg runs
# in every stack but is not among them: on the dev benchmarks it did not earn its place
# (benchmarks/reports/retrieval.md); RECALLMESH_LEGS=lexical,vector,graph turns it on.
DEFAULT_LEGS = "lexical,vector"
ALL_LEGS = "lexical,vector,graph"
# The legs that search sensitive memories: they are never embedded nor linked into the concept
# graph, so every other leg is blind to them (calibrated fusion does not count it against them).
SENSITIVE_LEGS = ("lexical",)
# Most memories a graph search may be seeded with (SearchRequest.seed_memory_ids).
MAX_SEED_MEMORIES = 100


@dataclass(frozen=True)
class LegTarget:
    name: str
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


_DURATION = re.compile(r"^(\d+)\s*([smhd]?)$")
_UNIT_S = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
MAX_TTL_S = 100 * 365 * 86400  # a century: longer is no expiry, and would overflow timestamps


def parse_duration_s(text: str, name: str) -> int:
    """Whole seconds from `86400`, `90s`, `15m`, `12h` or `30d`."""
    match = _DURATION.match(text.strip().lower())
    if match is None:
        raise ConfigError(f"{name}: a duration is whole seconds or a number with s, m, h or d, "
                          f"got {text.strip()!r}")
    seconds = int(match.group(1)) * _UNIT_S[match.group(2)]
    if seconds > MAX_TTL_S:
        raise ConfigError(f"{name}: {text.strip()!r} is longer than {MAX_TTL_S} seconds")
    return seconds


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
    `policy` (recallmesh/wire/policy.py: every recall setting, with its env variable)."""

    legs: tuple[LegTarget, ...]
    default_budget_ms: int
    reserve_ms: int  # kept back from the budget for fusion + hydration
    embedding_target: str = "localhost:50054"  # embeds queries for legs that need a vector
    index_wait_ms: int = 30000  # default upper bound of a write's wait for indexing
    fusion_target: str = ""  # host:port of the fusion service; "" fuses in-process only
    fusion_timeout_ms: int = 25  # a fusion call later than this falls back to in-process
    namespace_ttl: NamespaceTTL = NamespaceTTL()  # default TTL of memories by namespace
    policy: RecallPolicy = field(default_factory=lambda: _policy_type()())

    @classmethod
    def from_env(cls) -> GatewaySettings:
        raw = env_str("RECALLMESH_LEGS", DEFAULT_LEGS)
        names = [n.strip() for n in raw.split(",") if n.strip()]
        if not names:
            raise ConfigError("RECALLMESH_LEGS names no leg")
        if len(set(names)) != len(names):
            raise ConfigError(f"RECALLMESH_LEGS names a leg twice: {raw!r}")
        legs = [
            LegTarget(
                name,
                default_target(name),
                env_bool(f"RECALLMESH_{name.upper()}_NEEDS_VECTOR", name in LEGS_NEEDING_VECTOR),
            )
            for name in names
        ]
        from recallmesh.wire.validation import MAX_BUDGET_MS, MAX_INDEX_WAIT_MS

        budget = _at_most("RECALLMESH_RECALL_BUDGET_MS",
                          env_int("RECALLMESH_RECALL_BUDGET_MS", 800, minimum=10), MAX_BUDGET_MS)
        reserve = env_int("RECALLMESH_RECALL_RESERVE_MS", 50, minimum=0)
        if reserve >= budget:
            raise ConfigError("RECALLMESH_RECALL_RESERVE_MS must be below the budget")
        return cls(
            legs=tuple(legs),
            default_budget_ms=budget,
            reserve_ms=reserve,
            embedding_target=default_target("embedding"),
            index_wait_ms=_at_most("RECALLMESH_INDEX_WAIT_MS",
                                   env_int("RECALLMESH_INDEX_WAIT_MS", 30000, minimum=0),
                                   MAX_INDEX_WAIT_MS),
            fusion_target=(
                "" if env_str("RECALLMESH_FUSION_TARGET", "x").lower() in ("local", "none")
                else default_target("fusion")
            ),
            fusion_timeout_ms=env_int("RECALLMESH_FUSION_TIMEOUT_MS", 25, minimum=1),
            namespace_ttl=parse_namespace_ttl(env_str("RECALLMESH_NAMESPACE_TTL", "")),
            policy=_policy_type().from_env(names),
        )


def _policy_type() -> type[RecallPolicy]:
    from recallmesh.wire.policy import RecallPolicy  # imports this module: imported when used

    return RecallPolicy


@dataclass(frozen=True)
class LexicalSettings:
    # Rows admitted by the OR-broaden step must reach this ts_rank; keeps the
    # broaden step from flooding a short AND result with one-word noise.
    or_min_rank: float = 0.01
    # BM25 (k1 0.9, b 0.4) by default: it beat ts_rank in every fused configuration measured
    # (benchmarks/reports/retrieval.md); "ts_rank" is the faithful Postgres full-text baseline.
    # The three are recall settings the lexical leg owns (recallmesh/wire/policy.py): their
    # variables and bounds are declared there, a request may override them.
    ranking: str = "bm25"
    bm25_k1: float = 0.9
    bm25_b: float = 0.4

    @classmethod
    def from_env(cls) -> LexicalSettings:
        from recallmesh.wire.policy import lexical_setting

        return cls(or_min_rank=env_float("RECALLMESH_LEXICAL_OR_MIN_RANK", 0.01),
                   ranking=lexical_setting("lexical_ranking", cls.ranking),
                   bm25_k1=lexical_setting("bm25_k1", cls.bm25_k1),
                   bm25_b=lexical_setting("bm25_b", cls.bm25_b))


@dataclass(frozen=True)
class PoolSettings:
    min_size: int
    max_size: int
    # The longest wait for a connection (a call's deadline cuts it shorter): psycopg_pool's
    # own default, 30 s, is far beyond any recall budget.
    timeout_s: float = 2.0
    # Callers that may wait for a connection at once; one more is refused at once
    # (RESOURCE_EXHAUSTED). 0: no bound.
    max_waiting: int = 32

    @classmethod
    def from_env(cls) -> PoolSettings:
        return cls(
            min_size=env_int("RECALLMESH_DB_POOL_MIN", 1, minimum=0),
            max_size=env_int("RECALLMESH_DB_POOL_MAX", 10, minimum=1),
            timeout_s=env_float("RECALLMESH_DB_POOL_TIMEOUT_S", 2.0, minimum=0.01),
            max_waiting=env_int("RECALLMESH_DB_POOL_MAX_WAITING", 32, minimum=0),
        )


@dataclass(frozen=True)
class EmbeddingSettings:
    provider: str  # auto | cpu | cuda
    intra_op_threads: int  # 0 = onnxruntime's default (one per core)
    max_batch: int  # texts per model run
    max_batch_tokens: int  # padded tokens per model run
    max_wait_ms: float  # how long a batch waits for more concurrent requests
    max_texts_per_call: int
    max_queue_texts: int = 256  # texts waiting for the model; more is RESOURCE_EXHAUSTED
    query_cache_mb: int = 32  # query vectors kept by text (LRU); 0: no cache

    @classmethod
    def from_env(cls) -> EmbeddingSettings:
        provider = env_str("RECALLMESH_EMBEDDING_PROVIDER", "auto").lower()
        if provider not in ("auto", "cpu", "cuda"):
            raise ConfigError(
                f"RECALLMESH_EMBEDDING_PROVIDER must be auto, cpu or cuda, got {provider!r}"
            )
        wait = env_float("RECALLMESH_EMBEDDING_MAX_WAIT_MS", 2.0)
        if wait < 0:
            raise ConfigError("RECALLMESH_EMBEDDING_MAX_WAIT_MS must be >= 0")
        return cls(
            provider=provider,
            intra_op_threads=env_int("RECALLMESH_EMBEDDING_THREADS", 0, minimum=0),
            max_batch=env_int("RECALLMESH_EMBEDDING_MAX_BATCH", 32, minimum=1),
            max_batch_tokens=env_int("RECALLMESH_EMBEDDING_MAX_BATCH_TOKENS", 2048, minimum=1),
            max_wait_ms=wait,
            max_texts_per_call=_at_most(
                "RECALLMESH_EMBEDDING_MAX_TEXTS",
                env_int("RECALLMESH_EMBEDDING_MAX_TEXTS", 256, minimum=1), 10_000),
            max_queue_texts=env_int("RECALLMESH_EMBEDDING_MAX_QUEUE", 256, minimum=1),
            query_cache_mb=env_int("RECALLMESH_EMBEDDING_QUERY_CACHE_MB", 32, minimum=0),
        )


# HNSW candidate list per vector search (hnsw.ef_search). 200, not pgvector's 40 or the 100 it
# was: at 100,000 memories 100 left recall@10 at 0.93-0.96 with single queries at 0.00, 200
# gives 0.98 for about 2 ms more (docs/performance.md, benchmarks/reports/scale*.md).
DEFAULT_EF_SEARCH = 200


@dataclass(frozen=True)
class VectorSettings:
    ef_search: int  # HNSW candidate list size per search (raised to k when smaller)
    iterative_scan: str  # off | relaxed_order | strict_order

    @classmethod
    def from_env(cls) -> VectorSettings:
        scan = env_str("RECALLMESH_VECTOR_ITERATIVE_SCAN", "relaxed_order")
        if scan not in ("off", "relaxed_order", "strict_order"):
            raise ConfigError(
                "RECALLMESH_VECTOR_ITERATIVE_SCAN must be off, relaxed_order or strict_order"
            )
        return cls(
            ef_search=_at_most("RECALLMESH_VECTOR_EF_SEARCH",  # pgvector allows 1..1000
                               env_int("RECALLMESH_VECTOR_EF_SEARCH", DEFAULT_EF_SEARCH,
                                       minimum=1), 1000),
            iterative_scan=scan,
        )


@dataclass(frozen=True)
class HnswSettings:
    """Build parameters of the HNSW index (read when the index is created)."""

    m: int = 16
    ef_construction: int = 64

    @classmethod
    def from_env(cls) -> HnswSettings:
        m = env_int("RECALLMESH_HNSW_M", 16, minimum=2)
        ef = env_int("RECALLMESH_HNSW_EF_CONSTRUCTION", 64, minimum=4)
        if ef < 2 * m:
            raise ConfigError(
                "RECALLMESH_HNSW_EF_CONSTRUCTION must be at least 2 * RECALLMESH_HNSW_M"
            )
        return cls(m=m, ef_construction=ef)


@dataclass(frozen=True)
class GraphLegSettings:
    graph: Any  # recallmesh.services.graph.core.GraphSettings

    @classmethod
    def from_env(cls) -> GraphLegSettings:
        from recallmesh.services.graph.core import GraphSettings

        mode = env_str("RECALLMESH_GRAPH_MODE", "ppr")
        if mode not in ("ppr", "hops"):
            raise ConfigError(f"RECALLMESH_GRAPH_MODE must be ppr or hops, got {mode!r}")
        damping = env_float("RECALLMESH_GRAPH_DAMPING", 0.5, minimum=0.0)
        if damping >= 1.0:
            raise ConfigError("RECALLMESH_GRAPH_DAMPING must be below 1")
        return cls(GraphSettings(
            mode=mode,
            damping=damping,
            max_iterations=env_int("RECALLMESH_GRAPH_MAX_ITERATIONS", 50, minimum=1),
            tolerance=env_float("RECALLMESH_GRAPH_TOLERANCE", 1e-6, minimum=0.0),
            node_cap=env_int("RECALLMESH_GRAPH_NODE_CAP", 10_000, minimum=1),
            seed_top=env_int("RECALLMESH_GRAPH_SEED_TOP", 5, minimum=0),
            seed_min_similarity=env_float("RECALLMESH_GRAPH_SEED_MIN_SIMILARITY", 0.45),
            hop_decay=env_float("RECALLMESH_GRAPH_HOP_DECAY", 0.5, minimum=0.0),
            concept_edge_weight=env_float("RECALLMESH_GRAPH_CONCEPT_EDGE_WEIGHT", 0.25,
                                          minimum=0.0),
            cache_namespaces=env_int("RECALLMESH_GRAPH_CACHE_NAMESPACES", 1024, minimum=1),
            cache_mb=env_int("RECALLMESH_GRAPH_CACHE_MB", 512, minimum=1),
        ))


@dataclass(frozen=True)
class IndexerSettings:
    embedding_target: str
    batch_size: int  # memories claimed and embedded per transaction
    poll_s: float  # fallback poll interval (new jobs also wake it via NOTIFY)
    max_backoff_s: float  # retry delay cap while the embedding service fails
    embed_timeout_s: float
    concept_extractor: str = "spacy"  # "none" switches concept extraction off
    concept_merge_threshold: float = DEFAULT_CONCEPT_MERGE_THRESHOLD
    expiry_sweep_s: float = 60.0  # how often expired memories are purged; 0 switches it off
    # A job whose own text failed this many times is parked (not retried any more).
    max_attempts: int = 5
    base_backoff_s: float = 0.5  # first retry delay of a failed job (and of the loop)
    concept_cache_mb: int = 256  # concept name vectors kept to merge new surface forms

    @classmethod
    def from_env(cls) -> IndexerSettings:
        # The indexer may use its own embedding pool (bulk imports then do not
        # queue in front of latency-critical query embeddings).
        target = _env("RECALLMESH_INDEXER_EMBEDDING_TARGET") or default_target("embedding")
        batch = env_int("RECALLMESH_INDEXER_BATCH", 64, minimum=1)
        if batch > 1000:
            raise ConfigError("RECALLMESH_INDEXER_BATCH must be at most 1000")
        return cls(
            embedding_target=target,
            batch_size=batch,
            poll_s=env_float("RECALLMESH_INDEXER_POLL_S", 1.0, minimum=0.01),
            max_backoff_s=env_float("RECALLMESH_INDEXER_MAX_BACKOFF_S", 30.0, minimum=0.1),
            embed_timeout_s=env_float("RECALLMESH_INDEXER_EMBED_TIMEOUT_S", 30.0, minimum=0.1),
            concept_extractor=env_str("RECALLMESH_CONCEPT_EXTRACTOR", "spacy"),
            concept_merge_threshold=env_float("RECALLMESH_CONCEPT_MERGE_THRESHOLD",
                                              DEFAULT_CONCEPT_MERGE_THRESHOLD,
                                              minimum=0.0),
            expiry_sweep_s=env_float("RECALLMESH_EXPIRY_SWEEP_S", 60.0, minimum=0.0),
            max_attempts=env_int("RECALLMESH_INDEXER_MAX_ATTEMPTS", 5, minimum=1),
            base_backoff_s=env_float("RECALLMESH_INDEXER_BASE_BACKOFF_S", 0.5, minimum=0.01),
            concept_cache_mb=env_int("RECALLMESH_INDEXER_CONCEPT_CACHE_MB", 256, minimum=1),
        )


# How callers prove who they are (recallmesh/auth). `required` (the default): the gateway
# answers only API keys and JWTs, and internal services only internal callers (mutual TLS, or
# RECALLMESH_INTERNAL_TOKEN when TLS is off). `off`: no credential is asked for anywhere; for
# local development only (every caller can read, write and delete every namespace).
AUTH_MODES = ("required", "off")
# Where `recallmesh up` keeps the local admin key it creates (under the data directory,
# owner-only) and where the CLI looks for a key when RECALLMESH_API_KEY is not set.
LOCAL_KEY_FILE = "admin.key"


def local_key_path() -> Path:
    return data_dir() / LOCAL_KEY_FILE


@dataclass(frozen=True)
class AuthSettings:
    mode: str = "required"
    # How long the gateway trusts a verified API key before looking it up again (a revoked
    # key stops working within this many seconds on every replica).
    key_cache_s: float = 5.0
    # The secret internal services accept from internal callers when TLS is off ("": none).
    internal_token: str = ""
    # JWT bearer tokens: a JWKS (file path or http(s) URL; "" turns JWTs off), the issuer and
    # audience every token must carry, and the claims that list its namespace grants and scopes.
    jwt_jwks: str = ""
    jwt_issuer: str = ""
    jwt_audience: str = ""
    jwt_namespaces_claim: str = "recallmesh_namespaces"
    jwt_scopes_claim: str = "scope"
    jwt_leeway_s: float = 30.0  # clock skew tolerated on exp / nbf / iat

    @property
    def required(self) -> bool:
        return self.mode == "required"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> AuthSettings:
        mode = env_str("RECALLMESH_AUTH", "required", environ).lower()
        if mode not in AUTH_MODES:
            raise ConfigError(f"RECALLMESH_AUTH must be one of {', '.join(AUTH_MODES)}, "
                              f"got {mode!r}")
        jwks = env_str("RECALLMESH_JWT_JWKS", "", environ)
        audience = env_str("RECALLMESH_JWT_AUDIENCE", "", environ)
        issuer = env_str("RECALLMESH_JWT_ISSUER", "", environ)
        if jwks and not (audience and issuer):
            raise ConfigError("RECALLMESH_JWT_JWKS needs RECALLMESH_JWT_ISSUER and "
                              "RECALLMESH_JWT_AUDIENCE (every token is checked for both)")
        token = env_str("RECALLMESH_INTERNAL_TOKEN", "", environ)
        if token and len(token) < 32:
            raise ConfigError("RECALLMESH_INTERNAL_TOKEN must be at least 32 characters (e.g. "
                              "`python -c 'import secrets; print(secrets.token_urlsafe(32))'`)")
        return cls(
            mode=mode,
            key_cache_s=env_float("RECALLMESH_AUTH_CACHE_S", 5.0, environ, minimum=0.0),
            internal_token=token,
            jwt_jwks=jwks,
            jwt_issuer=issuer,
            jwt_audience=audience,
            jwt_namespaces_claim=env_str("RECALLMESH_JWT_NAMESPACES_CLAIM",
                                         "recallmesh_namespaces", environ),
            jwt_scopes_claim=env_str("RECALLMESH_JWT_SCOPES_CLAIM", "scope", environ),
            jwt_leeway_s=env_float("RECALLMESH_JWT_LEEWAY_S", 30.0, environ, minimum=0.0),
        )
