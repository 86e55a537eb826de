"""The embedding service's own settings."""

from __future__ import annotations

from dataclasses import dataclass

from recallmesh.shared.settings import ConfigError, at_most, env_float, env_int, env_str

# Characters kept of one text of an Embed request before tokenising (docs/api.md, EmbedRequest).
# Far above what max_length tokens can use, so it only bounds tokenizer work on giant inputs;
# the text is then truncated to max_length tokens like any other long text.
MAX_TEXT_CHARS = 64 * 1024


def store_kinds(raw: str) -> tuple[str, ...]:
    """RECALLMESH_EMBEDDING_VECTOR_STORE_KINDS: document, query or both (comma-separated);
    a latency benchmark keeps queries off the store so each recall pays for its query."""
    kinds = tuple(dict.fromkeys(k.strip() for k in raw.split(",") if k.strip()))
    if not kinds or set(kinds) - {"document", "query"}:
        raise ConfigError("RECALLMESH_EMBEDDING_VECTOR_STORE_KINDS must name document, query "
                          f"or both, got {raw!r}")
    return kinds


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
    vector_store: str = ""  # folder of on-disk vectors by model and text (vector_store.py); "": off
    vector_store_kinds: tuple[str, ...] = ("document", "query")  # the kinds it serves

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
            max_texts_per_call=at_most(
                "RECALLMESH_EMBEDDING_MAX_TEXTS",
                env_int("RECALLMESH_EMBEDDING_MAX_TEXTS", 256, minimum=1), 10_000),
            max_queue_texts=env_int("RECALLMESH_EMBEDDING_MAX_QUEUE", 256, minimum=1),
            query_cache_mb=env_int("RECALLMESH_EMBEDDING_QUERY_CACHE_MB", 32, minimum=0),
            vector_store=env_str("RECALLMESH_EMBEDDING_VECTOR_STORE", ""),
            vector_store_kinds=store_kinds(
                env_str("RECALLMESH_EMBEDDING_VECTOR_STORE_KINDS", "document,query")),
        )


