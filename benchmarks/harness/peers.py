"""Peer systems run side by side with recallmesh in the same harness run.

Each peer indexes exactly the texts recallmesh stored (the same `content_of`
strings, per namespace) and, where it needs vectors, the very embeddings the
indexer wrote for those memories (read back from Postgres) plus query vectors
from the same embedding service. So a peer differs from recallmesh only in its
ranking, not in its inputs.

  peer_bm25             bm25s (Lucene BM25, k1=1.5, b=0.75), English stopwords,
                        Snowball English stemmer (PyStemmer)
  peer_lancedb_fts      LanceDB native full-text index (English stemming, stop words)
  peer_lancedb_vector   LanceDB exact cosine search over the stored MiniLM vectors
  peer_lancedb_hybrid   LanceDB hybrid: FTS + vector, fused by its RRFReranker (k=60);
                        each side is asked for `depth` (20) hits, the top 10 are scored

The libraries come with the optional `bench` extra (`pip install -e '.[bench]'`).
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

import numpy as np

K = 10


@dataclass(frozen=True)
class Doc:
    corpus_id: str
    text: str
    vector: np.ndarray | None  # unit-length embedding, None when the memory has none


class Index(Protocol):
    def search(self, query: str, vector: np.ndarray | None, k: int) -> list[str]: ...


class Builder(Protocol):
    """Builds a peer's index of one scope; `info` is recorded with the run's results."""

    info: dict[str, Any]

    def build(self, docs: Sequence[Doc]) -> Index: ...


@dataclass(frozen=True)
class Peer:
    name: str
    description: str
    library: str
    needs_vectors: bool
    settings_: dict[str, Any] = field(default_factory=dict)

    def settings(self) -> dict:
        return asdict(self) | {"peer": True}

    def build(self, docs: Sequence[Doc], workdir: str) -> Index:
        """An in-process peer's index of one scope."""
        if self.library == "bm25s":
            return _Bm25Index(docs, **self.settings_)
        return _LanceIndex(docs, workdir, **self.settings_)

    @contextlib.contextmanager
    def builder(self, workdir: str, dsn: str | None = None) -> Iterator[Builder]:
        """What builds this peer's index of each scope of one run: what the indexes hold (a
        connection, say) lasts until the block ends. `dsn` is the database the stack stored
        into, for a peer that builds its index there."""
        yield _InProcessBuilder(self, workdir)


@dataclass
class _InProcessBuilder:
    peer: Peer
    workdir: str
    info: dict[str, Any] = field(default_factory=dict)

    def build(self, docs: Sequence[Doc]) -> Index:
        return self.peer.build(docs, self.workdir)


class _Bm25Index:
    def __init__(self, docs: Sequence[Doc], k1: float, b: float, method: str,
                 stopwords: str, stemmer: str) -> None:
        import bm25s
        import Stemmer

        self.ids = [d.corpus_id for d in docs]
        self.stopwords = stopwords
        self.stemmer = Stemmer.Stemmer(stemmer)
        self.retriever = bm25s.BM25(k1=k1, b=b, method=method)
        tokens = bm25s.tokenize([d.text for d in docs], stopwords=stopwords,
                                stemmer=self.stemmer, show_progress=False)
        self.retriever.index(tokens, show_progress=False)

    def search(self, query: str, vector: np.ndarray | None, k: int) -> list[str]:
        import bm25s

        tokens = bm25s.tokenize([query], stopwords=self.stopwords, stemmer=self.stemmer,
                                show_progress=False)
        if not tokens.ids[0]:
            return []
        found, scores = self.retriever.retrieve(tokens, k=min(k, len(self.ids)),
                                                show_progress=False, n_threads=1)
        # bm25s pads with score-0 documents when fewer match; a zero score is no match.
        return [self.ids[i] for i, s in zip(found[0], scores[0], strict=True) if s > 0]


class _LanceIndex:
    def __init__(self, docs: Sequence[Doc], workdir: str, mode: str, depth: int = K) -> None:
        import lancedb
        from lancedb.index import FTS
        from lancedb.rerankers import RRFReranker

        self.mode, self.depth = mode, depth
        self.reranker = RRFReranker(K=60)
        dimension = next((len(d.vector) for d in docs if d.vector is not None), 0)
        rows = [{"id": d.corpus_id, "text": d.text,
                 "vector": (d.vector if d.vector is not None
                            else np.zeros(dimension, dtype=np.float32)).tolist()}
                for d in docs]
        db = lancedb.connect(tempfile.mkdtemp(dir=workdir))
        self.table = db.create_table("memories", data=rows)
        self.table.create_index("text", config=FTS(language="English", stem=True,
                                                  remove_stop_words=True))

    def search(self, query: str, vector: np.ndarray | None, k: int) -> list[str]:
        if self.mode == "fts":
            q = self.table.search(query, query_type="fts").limit(k)
        elif self.mode == "vector":
            q = self.table.search(vector, query_type="vector").metric("cosine").limit(k)
        else:
            q = (self.table.search(query_type="hybrid").vector(vector).text(query)
                 .rerank(self.reranker).limit(max(k, self.depth)))
        return [r["id"] for r in q.to_list()][:k]


PEERS: dict[str, Peer] = {p.name: p for p in (
    Peer("peer_bm25", "bm25s over the same texts: Lucene BM25 (k1=1.5, b=0.75), English "
         "stopwords, Snowball stemmer", "bm25s", False,
         {"k1": 1.5, "b": 0.75, "method": "lucene", "stopwords": "en", "stemmer": "english"}),
    Peer("peer_lancedb_fts", "LanceDB native full-text index alone", "lancedb", False,
         {"mode": "fts"}),
    Peer("peer_lancedb_vector", "LanceDB exact cosine search over the same MiniLM vectors",
         "lancedb", True, {"mode": "vector"}),
    Peer("peer_lancedb_hybrid", "LanceDB hybrid: native FTS + the same MiniLM vectors, its "
         "RRFReranker (k=60), 20 per side, top 10 scored", "lancedb", True,
         {"mode": "hybrid", "depth": 20}),
)}


def timed_search(index: Index, query: str, embed, k: int = K) -> tuple[list[str], float]:
    """One peer query; the latency includes embedding the query when the peer needs it."""
    start = time.perf_counter()
    vector = embed(query) if embed is not None else None
    ranked = index.search(query, vector, k)
    return ranked, (time.perf_counter() - start) * 1000
