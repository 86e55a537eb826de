"""Named configurations the harness can run: each is a set of per-request fusion overrides
on the same running stack, so every configuration sees identical stored memories.

Add a configuration (a new leg, query expansion, ...) by adding an entry here; the harness
core does not change.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from recallmesh.v1 import memory_pb2


@dataclass(frozen=True)
class Config:
    name: str
    description: str
    method: str = ""
    weights: dict[str, float] = field(default_factory=dict)
    importance_strength: float | None = None
    exact_bonus: float | None = None
    skip_legs: tuple[str, ...] = ()

    def overrides(self) -> memory_pb2.FusionOverrides:
        msg = memory_pb2.FusionOverrides(method=self.method, weights=self.weights,
                                         skip_legs=list(self.skip_legs))
        if self.importance_strength is not None:
            msg.importance_strength = self.importance_strength
        if self.exact_bonus is not None:
            msg.exact_bonus = self.exact_bonus
        return msg

    def settings(self) -> dict:
        return asdict(self)


CONFIGS: dict[str, Config] = {c.name: c for c in (
    Config("lexical", "the faithful current system: Postgres full text (ts_rank, AND then "
           "OR-broaden), the lexical leg alone", skip_legs=("vector",)),
    Config("vector", "dense only: MiniLM embeddings, pgvector HNSW", skip_legs=("lexical",)),
    Config("hybrid_rrf", "lexical + vector, weighted RRF k=60, no bonus, no prior",
           method="rrf", importance_strength=0.0, exact_bonus=0.0),
    Config("hybrid_rrf_exact", "hybrid_rrf plus the exact-match bonus (0.05)",
           method="rrf", importance_strength=0.0, exact_bonus=0.05),
    Config("hybrid_rrf_prior", "hybrid_rrf plus the importance prior (0.3); the shipped "
           "datasets carry no importance, so this equals hybrid_rrf there",
           method="rrf", importance_strength=0.3, exact_bonus=0.0),
    Config("hybrid_cc", "lexical + vector, convex combination of min-max normalised scores",
           method="cc", importance_strength=0.0, exact_bonus=0.0),
    Config("hybrid_cc_bounded", "convex combination; cosine normalised by its -1..1 range",
           method="cc_bounded", importance_strength=0.0, exact_bonus=0.0),
)}
DEFAULT_CONFIGS = ("lexical", "vector", "hybrid_rrf", "hybrid_rrf_exact", "hybrid_rrf_prior",
                   "hybrid_cc", "hybrid_cc_bounded", "peer_bm25", "peer_lancedb_fts",
                   "peer_lancedb_vector", "peer_lancedb_hybrid")
