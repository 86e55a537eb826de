"""Query vectors already computed, kept by text: agents ask the same thing often (the same
prompt recalled before every turn, a retried call, several agents with one question).

One process serves one model, so the text alone is the key (the model is the process's);
the prefix is the model's and applied after the lookup. Only queries: documents are embedded
once each by the indexer, and a document cache would only hold what is already stored.

Bounded by bytes (each entry: the vector and its text), least recently used out first
(cachetools.LRUCache with getsizeof). The vector handed out is the cached array itself,
read-only, so no caller can change what the next one gets. Served from the event loop: no
lock needed.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from typing import cast

import numpy as np
from cachetools import LRUCache
from prometheus_client import Counter, Gauge

from recallmesh.services.embedding.core import Embedded

CACHE_BYTES = Gauge(
    "recallmesh_embedding_query_cache_bytes",
    "Bytes held by the query-vector cache (vectors and their texts; bounded by "
    "RECALLMESH_EMBEDDING_QUERY_CACHE_MB).",
)
LOOKUPS = Counter(
    "recallmesh_embedding_query_cache_total",
    "Query texts looked up in the query-vector cache, by result (hit, miss).",
    ["result"],
)

ENTRY_OVERHEAD = 200  # bytes of the cache's own bookkeeping per entry, about


def entry_bytes(text: str, vector: np.ndarray) -> int:
    return vector.nbytes + sys.getsizeof(text) + ENTRY_OVERHEAD


class QueryVectorCache:
    """text -> (vector, truncated), at most `max_bytes` of them; 0 bytes: off."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._lru: LRUCache[str, tuple[np.ndarray, bool, int]] | None = (
            LRUCache(maxsize=max_bytes, getsizeof=lambda entry: entry[2])
            if max_bytes > 0 else None)

    @property
    def enabled(self) -> bool:
        return self._lru is not None

    @property
    def bytes(self) -> int:
        return int(self._lru.currsize) if self._lru is not None else 0

    def __len__(self) -> int:
        return len(self._lru) if self._lru is not None else 0

    def get(self, text: str) -> tuple[np.ndarray, bool] | None:
        if self._lru is None:
            return None
        entry = self._lru.get(text)
        LOOKUPS.labels("miss" if entry is None else "hit").inc()
        return None if entry is None else (entry[0], entry[1])

    def put(self, text: str, vector: np.ndarray, truncated: bool) -> None:
        if self._lru is None:
            return
        kept = np.array(vector, dtype=np.float32, copy=True)
        kept.setflags(write=False)
        size = entry_bytes(text, kept)
        if size <= self.max_bytes:  # one entry larger than the whole cache is not kept
            self._lru[text] = (kept, truncated, size)
            CACHE_BYTES.set(self._lru.currsize)

    async def embed(self, texts: list[str],
                    compute: Callable[[list[str]], Awaitable[Embedded]]) -> Embedded:
        """The texts' vectors: cached ones from the cache, the others (each distinct text
        once) from `compute`, then kept."""
        found = [self.get(t) for t in texts]
        missing = list(dict.fromkeys(t for t, f in zip(texts, found, strict=True) if f is None))
        if missing:
            computed = await compute(missing)
            fresh = {t: (computed.vectors[i], computed.truncated[i])
                     for i, t in enumerate(missing)}
            for t, (vector, truncated) in fresh.items():
                self.put(t, vector, truncated)
            found = [f if f is not None else fresh[t] for t, f in zip(texts, found, strict=True)]
        complete = cast(list[tuple[np.ndarray, bool]], found)  # every text has its vector now
        vectors = (np.stack([f[0] for f in complete]) if complete
                   else np.zeros((0, 0), np.float32))
        return Embedded(vectors, [f[1] for f in complete])
