"""The graph leg's own settings: what a search and the cache use (GraphSettings), read from
the environment (GraphLegSettings)."""

from __future__ import annotations

from dataclasses import dataclass

from recallmesh.shared.settings import ConfigError, env_float, env_int, env_str


@dataclass(frozen=True)
class GraphSettings:
    mode: str = "ppr"  # or "hops"
    damping: float = 0.5  # probability of following an edge (1 - restart probability)
    max_iterations: int = 50
    tolerance: float = 1e-6
    # nodes ranked at most (docs/decisions/0017-smaller-settings-and-limits.md)
    node_cap: int = 10_000
    seed_top: int = 5  # nearest concept names seeded from the query vector
    seed_min_similarity: float = 0.45
    hop_decay: float = 0.5
    concept_edge_weight: float = 0.25  # concept-concept edges relative to mentions
    cache_namespaces: int = 1024
    cache_mb: int = 512  # estimated bytes of all cached graphs together


@dataclass(frozen=True)
class GraphLegSettings:
    graph: GraphSettings

    @classmethod
    def from_env(cls) -> GraphLegSettings:
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


