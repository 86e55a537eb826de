"""The indexer's own settings."""

from __future__ import annotations

from dataclasses import dataclass

from recallmesh.shared.legs import GRAPH_LEG, leg_names
from recallmesh.shared.settings import (
    ConfigError,
    default_target,
    env_float,
    env_int,
    env_optional,
    env_str,
)

# The name-embedding cosine at which a new surface form joins an existing concept. It depends on
# the model's cosine scale; this is nomic-embed-text-v1.5's, the default model
# (docs/decisions/0017-smaller-settings-and-limits.md); RECALLMESH_CONCEPT_MERGE_THRESHOLD
# overrides.
DEFAULT_CONCEPT_MERGE_THRESHOLD = 0.84
# RECALLMESH_CONCEPT_EXTRACTOR's default: extract concepts only when the graph leg, the one
# reader of them, is among RECALLMESH_LEGS (docs/decisions/0025).
AUTO_EXTRACTOR = "auto"


def concept_extractor(raw: str, legs: list[str]) -> str:
    """The extractor the indexer runs: `raw` as set, `auto` read as spaCy when the graph leg is
    among `legs` and none otherwise."""
    if raw != AUTO_EXTRACTOR:
        return raw
    return "spacy" if GRAPH_LEG in legs else "none"



@dataclass(frozen=True)
class IndexerSettings:
    embedding_target: str
    batch_size: int  # memories claimed and embedded per transaction
    poll_s: float  # fallback poll interval (new jobs also wake it via NOTIFY)
    max_backoff_s: float  # retry delay cap while the embedding service fails
    embed_timeout_s: float
    concept_extractor: str = "spacy"  # "none" switches concept extraction off (from_env: auto)
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
        target = env_optional("RECALLMESH_INDEXER_EMBEDDING_TARGET") or default_target("embedding")
        batch = env_int("RECALLMESH_INDEXER_BATCH", 64, minimum=1)
        if batch > 1000:
            raise ConfigError("RECALLMESH_INDEXER_BATCH must be at most 1000")
        return cls(
            embedding_target=target,
            batch_size=batch,
            poll_s=env_float("RECALLMESH_INDEXER_POLL_S", 1.0, minimum=0.01),
            max_backoff_s=env_float("RECALLMESH_INDEXER_MAX_BACKOFF_S", 30.0, minimum=0.1),
            embed_timeout_s=env_float("RECALLMESH_INDEXER_EMBED_TIMEOUT_S", 30.0, minimum=0.1),
            concept_extractor=concept_extractor(
                env_str("RECALLMESH_CONCEPT_EXTRACTOR", AUTO_EXTRACTOR), leg_names()),
            concept_merge_threshold=env_float("RECALLMESH_CONCEPT_MERGE_THRESHOLD",
                                              DEFAULT_CONCEPT_MERGE_THRESHOLD,
                                              minimum=0.0),
            expiry_sweep_s=env_float("RECALLMESH_EXPIRY_SWEEP_S", 60.0, minimum=0.0),
            max_attempts=env_int("RECALLMESH_INDEXER_MAX_ATTEMPTS", 5, minimum=1),
            base_backoff_s=env_float("RECALLMESH_INDEXER_BASE_BACKOFF_S", 0.5, minimum=0.01),
            concept_cache_mb=env_int("RECALLMESH_INDEXER_CONCEPT_CACHE_MB", 256, minimum=1),
        )
