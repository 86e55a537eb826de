"""The vector leg's own settings."""

from __future__ import annotations

from dataclasses import dataclass

from recallmesh.shared.settings import ConfigError, at_most, env_int, env_str

# HNSW candidate list per vector search (hnsw.ef_search). 200, not pgvector's 40 or the 100 it
# was: at 100,000 memories 100 left single queries with none of their exact top 10, and 200
# finds nearly all of it for a little more time (docs/decisions/0008-ef-search-200.md).
DEFAULT_EF_SEARCH = 200
# Namespaces of at most this many vectors are searched exactly, not through HNSW: up to 2,000 the
# two cost the same and exact is exact; at 5,000 HNSW is several times faster
# (docs/decisions/0008-ef-search-200.md, "The plan by namespace size"). 0: HNSW for every
# namespace that is a large enough share of the table (services/vector/core.py).
DEFAULT_EXACT_MAX = 2000


@dataclass(frozen=True)
class VectorSettings:
    ef_search: int  # HNSW candidate list size per search (raised to k when smaller)
    iterative_scan: str  # off | relaxed_order | strict_order
    exact_max: int = 0  # namespaces of at most this many vectors are searched exactly

    @classmethod
    def from_env(cls) -> VectorSettings:
        scan = env_str("RECALLMESH_VECTOR_ITERATIVE_SCAN", "relaxed_order")
        if scan not in ("off", "relaxed_order", "strict_order"):
            raise ConfigError(
                "RECALLMESH_VECTOR_ITERATIVE_SCAN must be off, relaxed_order or strict_order"
            )
        return cls(
            ef_search=at_most("RECALLMESH_VECTOR_EF_SEARCH",  # pgvector allows 1..1000
                               env_int("RECALLMESH_VECTOR_EF_SEARCH", DEFAULT_EF_SEARCH,
                                       minimum=1), 1000),
            iterative_scan=scan,
            exact_max=env_int("RECALLMESH_VECTOR_EXACT_MAX", DEFAULT_EXACT_MAX, minimum=0),
        )


