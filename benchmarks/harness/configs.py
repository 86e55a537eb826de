"""Named configurations the harness can run: each is a set of per-request fusion overrides
on the same running stack, so every configuration sees identical stored memories.

A configuration names the legs it uses; the harness's own stack runs a gateway with every
leg (recallmesh.gateway.settings.ALL_LEGS) and each request skips the others. `default` is
exactly what a deployment serves with no settings: the default legs and the default fusion settings.

Add a configuration (a new leg, query expansion, ...) by adding an entry here; the harness
core does not change.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from google.protobuf import json_format

from recallmesh.policy import Overrides
from recallmesh.shared.legs import DEFAULT_LEGS
from recallmesh.v1 import memory_pb2


@dataclass(frozen=True)
class Config:
    """A named preset: the legs it asks and the recall settings it sets per request
    (recallmesh.policy.Overrides; whatever it leaves unset is the deployment's)."""

    name: str
    description: str
    legs: tuple[str, ...]
    fusion: Overrides

    @property
    def weights(self) -> dict[str, float]:
        return dict(self.fusion.weights)

    def overrides(self, gateway_legs: Iterable[str]) -> memory_pb2.FusionOverrides:
        """The request's overrides on a gateway with `gateway_legs`; SystemExit if it lacks
        one of the configuration's legs."""
        available = list(gateway_legs)
        missing = sorted(set(self.legs) - set(available))
        if missing:
            raise SystemExit(f"config {self.name} needs leg(s) {', '.join(missing)}, which the "
                             f"gateway does not run (its legs: {', '.join(available)}; set "
                             "RECALLMESH_LEGS)")
        skip = [leg for leg in available if leg not in self.legs]
        return Overrides(self.fusion.values, self.fusion.weights, tuple(skip)).to_proto()

    def client_fusion(self, gateway_legs: Iterable[str]) -> dict[str, Any]:
        """The same overrides as the typed client's `fusion=` option (JSON names)."""
        return json_format.MessageToDict(self.overrides(gateway_legs))

    def settings(self) -> dict[str, Any]:
        """What the result file records: the legs and every setting the preset pins."""
        return {"name": self.name, "description": self.description, "legs": list(self.legs),
                "weights": self.weights, **dict(self.fusion.values)}


def preset(name: str, description: str, legs: tuple[str, ...] = ("lexical", "vector"),
           weights: dict[str, float] | None = None, **settings: Any) -> Config:
    """A configuration from recall settings named as in recallmesh.policy.RecallPolicy
    (checked like a request's)."""
    return Config(name, description, tuple(legs), Overrides.of(weights=weights, **settings))


# The default's refinements after fusion, off: every configuration but the default pins them,
# so a baseline stays what it was whatever the deployment defaults become.
# The plain baselines' settings: no refinement after fusion (context, time window, intent
# routing, restatements) and no relevance floor (issue 39): they measure ranking alone.
NO_REFINEMENTS = {"context_hits": 0, "time_boost": 0.0, "intent_routing": False,
                  "restated_similarity": 0.0, "min_score": 0.0}


def _plain(name: str, description: str, legs: tuple[str, ...], **fusion) -> Config:
    """RRF without bonus or prior, lexical leg on ts_rank, lexical and vector weighted 1, no
    context, no time-window boost, unless given: the hybrid configurations' common base,
    fixed whatever the deployment defaults become."""
    weights = {"lexical": 1.0, "vector": 1.0} | fusion.pop("weights", {})
    return preset(name, description, legs, **({"method": "rrf", "importance_strength": 0.0,
                                                "exact_bonus": 0.0, "lexical_ranking": "ts_rank",
                                                **NO_REFINEMENTS, "weights": weights}
                                               | fusion))


def _cc_bm25t(name: str, description: str, **fusion) -> Config:
    """hybrid_cc_bm25t (lexical BM25 k1=0.9 b=0.4 + vector, convex combination) and variants."""
    return _plain(name, description, ("lexical", "vector"), **({
        "method": "cc", "lexical_ranking": "bm25", "bm25_k1": 0.9, "bm25_b": 0.4} | fusion))


# Context propagation as swept (benchmarks/reports/context.md): hits, next and prev shares.
CONTEXT = {"context_hits": 5, "context_next_weight": 0.3, "context_prev_weight": 0.2}

CONFIGS: dict[str, Config] = {c.name: c for c in (
    preset("default", "what a deployment serves with no settings: legs "
           f"{DEFAULT_LEGS}, default fusion (see docs/configuration.md)",
           tuple(DEFAULT_LEGS.split(","))),
    preset("default_previous", "the default before issue 27: convex combination of min-max "
           "normalised scores (cc), lexical weight 0.7, context from the best 5 hits (next 0.3, "
           "previous 0.2; now along threads only, as every configuration's), time-window boost "
           "1", tuple(DEFAULT_LEGS.split(",")), method="cc",
           weights={"lexical": 0.7, "vector": 1.0}, context_hits=5, context_next_weight=0.3,
           context_prev_weight=0.2, time_boost=1.0, min_score=0.0),
    preset("calibrated_lw0.3", "the default from issue 39 to 54: calibrated fusion (cosine "
           "from the model's cosine floor), lexical weight 0.3, context from the best 5 hits "
           "(next 0.3, previous 0.2), no time-window boost; no floor (its score map is gone)",
           tuple(DEFAULT_LEGS.split(",")), method="calibrated",
           weights={"lexical": 0.3, "vector": 1.0}, context_hits=5, context_next_weight=0.3,
           context_prev_weight=0.2, time_boost=0.0, min_score=0.0),
    # The other candidates (lexical 0.2, 0.3, 0.7): docs/decisions/0006-calibrated-fusion.md.
    preset("calibrated_lw0.5", "default with calibrated fusion at lexical weight 0.5 (vector "
           "1): one of the candidates issue 27's cross-validation and behaviour suite chose "
           "among", tuple(DEFAULT_LEGS.split(",")), method="calibrated",
           weights={"lexical": 0.5, "vector": 1.0}),
    preset("default_ctx3", "default with issue 39-41's context propagation (the best 3 hits, "
           "next 0.3, previous 0): issue 42's context change, its recall and latency",
           tuple(DEFAULT_LEGS.split(",")), context_hits=3, context_next_weight=0.3,
           context_prev_weight=0.0),
    preset("default_no_floor", "default without the relevance floor (min_score 0): every "
           "hit with its score, for the floor curve (benchmarks/quality/floor.py)",
           tuple(DEFAULT_LEGS.split(",")), min_score=0.0),
    preset("default_no_restated", "default without newest-first restatements "
           "(restated_similarity 0): what reordering near-duplicate hits does",
           tuple(DEFAULT_LEGS.split(",")), restated_similarity=0.0),
    preset("default_no_time", "default without the time-window boost (time_boost 0): what "
           "reading relative times in the query adds", tuple(DEFAULT_LEGS.split(",")),
           time_boost=0.0),
    preset("default_no_intent", "default without query-intent routing (intent_routing false): "
           "what routing advice requests to the vector leg adds", tuple(DEFAULT_LEGS.split(",")),
           intent_routing=False),
    *(preset(f"default_lw{w:g}", f"default with the lexical leg weighted {w:g} (the vector leg "
             "1): the lexical weight's ablation (1.7 is the weight MiniLM wanted)",
             tuple(DEFAULT_LEGS.split(",")), weights={"lexical": w, "vector": 1.0})
      for w in (0.7, 1.0, 1.7)),
    # BM25 (k1, b) inside the default: docs/decisions/0007-bm25-parameters.md.
    preset("lexical", "the faithful current system: Postgres full text (ts_rank, AND then "
           "OR-broaden), the lexical leg alone", ("lexical",), lexical_ranking="ts_rank",
           **NO_REFINEMENTS),
    preset("vector", "dense only: the served model's embeddings, pgvector HNSW", ("vector",),
           **NO_REFINEMENTS),
    _plain("hybrid_rrf", "lexical + vector, weighted RRF k=60, no bonus, no prior",
           ("lexical", "vector")),
    _plain("hybrid_rrf_exact", "hybrid_rrf plus the exact-match bonus (0.05)",
           ("lexical", "vector"), exact_bonus=0.05),
    _plain("hybrid_rrf_prior", "hybrid_rrf plus the importance prior (0.3); the shipped "
           "datasets carry no importance, so this equals hybrid_rrf there",
           ("lexical", "vector"), importance_strength=0.3),
    _plain("hybrid_cc", "lexical + vector, convex combination of min-max normalised scores",
           ("lexical", "vector"), method="cc"),
    _plain("hybrid_cc_bounded", "convex combination; cosine normalised by its -1..1 range",
           ("lexical", "vector"), method="cc_bounded"),
    preset("lexical_bm25", "the lexical leg alone, BM25 ranking (k1=1.2, b=0.75) over the same "
           "tsvectors", ("lexical",), lexical_ranking="bm25", bm25_k1=1.2, bm25_b=0.75,
           **NO_REFINEMENTS),
    preset("lexical_bm25_tuned", "the lexical leg alone, BM25 with k1=0.9, b=0.4",
           ("lexical",), lexical_ranking="bm25", bm25_k1=0.9, bm25_b=0.4,
           **NO_REFINEMENTS),
    _plain("hybrid_bm25", "lexical (BM25 k1=1.2, b=0.75) + vector, weighted RRF k=60",
           ("lexical", "vector"), lexical_ranking="bm25", bm25_k1=1.2, bm25_b=0.75),
    _plain("hybrid_bm25_d20", "hybrid_bm25 over each leg's top 20 instead of 50",
           ("lexical", "vector"), lexical_ranking="bm25", bm25_k1=1.2, bm25_b=0.75,
           leg_depth=20),
    _plain("hybrid_cc_bm25", "lexical (BM25 k1=1.2, b=0.75) + vector, convex combination "
           "(min-max)", ("lexical", "vector"), method="cc", lexical_ranking="bm25", bm25_k1=1.2,
           bm25_b=0.75),
    _plain("hybrid_bm25t_d20", "lexical (BM25 k1=0.9, b=0.4) + vector, weighted RRF over each "
           "leg's top 20", ("lexical", "vector"), lexical_ranking="bm25", bm25_k1=0.9,
           bm25_b=0.4, leg_depth=20),
    _cc_bm25t("hybrid_cc_bm25t", "lexical (BM25 k1=0.9, b=0.4) + vector, convex combination"),
    *(_cc_bm25t(f"hybrid_cc_bm25t_d{d}", f"hybrid_cc_bm25t over each leg's top {d}",
                leg_depth=d) for d in (20, 100)),
    *(_cc_bm25t(f"hybrid_cc_bm25t_{leg[0]}{w:g}", f"hybrid_cc_bm25t with the {leg} leg "
                f"weighted {w:g} (the other 1)", weights={leg: w})
      for leg, w in (("lexical", 0.7), ("lexical", 1.4), ("lexical", 1.7))),
    _cc_bm25t("hybrid_cc_bm25t_ctx", "hybrid_cc_bm25t plus context propagation: the memories "
              "stored right after / just before each of the best 5 hits gain 0.3 / 0.2 of its "
              "score", **CONTEXT),
    _cc_bm25t("hybrid_cc_bm25t_ctx_next", "hybrid_cc_bm25t_ctx without the previous memory "
              "(next only)", **(CONTEXT | {"context_prev_weight": 0.0})),
    _plain("hybrid_cc_d20", "hybrid_cc over each leg's top 20", ("lexical", "vector"),
           method="cc", leg_depth=20),
    # The graph leg's presets (graph, hybrid_graph*, hybrid_cc_graph*): docs/decisions/
    # 0004-graph-leg-off-by-default.md.
)}
PEER_CONFIGS = ("peer_bm25", "peer_lancedb_fts", "peer_lancedb_vector", "peer_lancedb_hybrid",
                "peer_pgvector_hybrid")
# What `run` does without --configs: every configuration above, then the peers.
DEFAULT_CONFIGS = (*CONFIGS, *PEER_CONFIGS)
