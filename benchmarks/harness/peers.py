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
  peer_pgvector_hybrid  the single-SQL hybrid of pgvector-python's example, in the stack's
                        own Postgres: ts_rank_cd over plainto_tsquery('english') (GIN) and
                        cosine distance (HNSW, m=16, ef_construction=64, ef_search left at
                        its default 40), 20 per side, fused by RRF (k=60) in the same
                        statement; one table per scope in schema peer_pgvector_hybrid,
                        dropped and made anew each run and dropped after it

The Python libraries are the lab's dependencies (benchmarks/pyproject.toml: `make install`);
peer_pgvector_hybrid needs only psycopg and pgvector (dependencies of recallmesh itself) and
the database's DSN.
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

import numpy as np
from psycopg import sql

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
        """An in-process peer's index of one scope (the Postgres peer: `builder`)."""
        if self.library == "bm25s":
            return _Bm25Index(docs, **self.settings_)
        if self.library == "lancedb":
            return _LanceIndex(docs, workdir, **self.settings_)
        raise ValueError(f"{self.name} is built through Peer.builder (it needs a database)")

    @contextlib.contextmanager
    def builder(self, workdir: str, dsn: str | None = None) -> Iterator[Builder]:
        """What builds this peer's index of each scope of one run: what the indexes hold (the
        Postgres peer's connection and tables) lasts until the block ends. `dsn` is the
        database the stack stored into, which the Postgres peer builds in."""
        if self.library != "pgvector":
            yield _InProcessBuilder(self, workdir)
            return
        if not dsn:
            raise ValueError(f"{self.name} needs the stack's Postgres (a DSN)")
        with _PgHybridBuilder(dsn, **self.settings_) as built:
            yield built


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


# The statement of peer_pgvector_hybrid; only these may be named in its settings.
TSQUERY_FUNCTIONS = ("plainto_tsquery", "websearch_to_tsquery")
TEXT_RANKINGS = ("ts_rank_cd", "ts_rank")


def hybrid_sql(table: sql.Composable, tsquery: str = "plainto_tsquery",
               text_rank: str = "ts_rank_cd") -> sql.Composed:
    """One statement ranking one scope's `table` for a query, as in pgvector-python's hybrid
    search example: the `depth` best full-text matches (`text_rank` over `tsquery`('english',
    query), the GIN index) and the `depth` nearest vectors (cosine distance, the HNSW index),
    each ranked 1.. (RANK: ties share a rank), fused by reciprocal rank, sum of 1 / (rrf_k +
    rank) over the sides that found a row, best `k` first (ties in storage order).
    Parameters: query, embedding, depth, rrf_k, k; they are only ever bound."""
    if tsquery not in TSQUERY_FUNCTIONS or text_rank not in TEXT_RANKINGS:
        raise ValueError(f"tsquery must be one of {TSQUERY_FUNCTIONS} and text_rank one of "
                         f"{TEXT_RANKINGS}, not {tsquery!r} / {text_rank!r}")
    return sql.SQL("""\
WITH keyword AS (
    SELECT id, corpus_id, RANK() OVER (ORDER BY score DESC) AS rank
    FROM (SELECT id, corpus_id, {text_rank}(tsv, q) AS score
          FROM {table}, {tsquery}('english', %(query)s) AS q
          WHERE tsv @@ q
          ORDER BY score DESC, id
          LIMIT %(depth)s) AS matched
),
semantic AS (
    SELECT id, corpus_id, RANK() OVER (ORDER BY distance) AS rank
    FROM (SELECT id, corpus_id, embedding <=> %(embedding)s AS distance
          FROM {table}
          WHERE embedding IS NOT NULL
          ORDER BY embedding <=> %(embedding)s
          LIMIT %(depth)s) AS nearest
)
SELECT COALESCE(s.corpus_id, w.corpus_id) AS corpus_id,
       COALESCE(1.0 / (%(rrf_k)s + s.rank), 0.0)
         + COALESCE(1.0 / (%(rrf_k)s + w.rank), 0.0) AS score
FROM semantic AS s
FULL OUTER JOIN keyword AS w ON s.id = w.id
ORDER BY score DESC, COALESCE(s.id, w.id)
LIMIT %(k)s""").format(table=table, tsquery=sql.SQL(tsquery),
                       text_rank=sql.SQL(text_rank))


class _PgHybridBuilder:
    """One connection for the run; each scope's docs in a table of its own (so each scope has
    its own HNSW graph, as every other peer has its own index per scope, and no scope filter
    meets the HNSW scan) in `schema`, dropped first and dropped again on close."""

    def __init__(self, dsn: str, schema: str, depth: int, rrf_k: int, tsquery: str,
                 text_rank: str, m: int, ef_construction: int) -> None:
        import psycopg
        from pgvector.psycopg import register_vector

        hybrid_sql(sql.Identifier("t"), tsquery, text_rank)  # bad settings fail before building
        self.schema, self.depth, self.rrf_k = schema, depth, rrf_k
        self.tsquery, self.text_rank = tsquery, text_rank
        self.m, self.ef_construction = m, ef_construction
        self.tables = 0
        self.conn = psycopg.connect(dsn, autocommit=True)
        try:
            self.conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            register_vector(self.conn)
            self._drop()
            self.conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
            versions = self.conn.execute(
                "SELECT current_setting('server_version'), "
                "(SELECT extversion FROM pg_extension WHERE extname = 'vector')").fetchone()
        except BaseException:
            self.conn.close()
            raise
        self.info: dict[str, Any] = {"postgres": versions[0], "pgvector": versions[1]}

    def _drop(self) -> None:
        self.conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(
            sql.Identifier(self.schema)))

    def __enter__(self) -> _PgHybridBuilder:
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self._drop()
        finally:
            self.conn.close()

    def build(self, docs: Sequence[Doc]) -> Index:
        table = sql.Identifier(self.schema, f"scope_{self.tables}")
        self.tables += 1
        dimension = next((len(d.vector) for d in docs if d.vector is not None), None)
        vector_type = sql.SQL(f"vector({int(dimension)})") if dimension \
            else sql.SQL("vector")
        self.conn.execute(sql.SQL(
            "CREATE TABLE {table} (id integer PRIMARY KEY, corpus_id text NOT NULL, "
            "text text NOT NULL, tsv tsvector GENERATED ALWAYS AS "
            "(to_tsvector('english', text)) STORED, embedding {vector_type})").format(
                table=table, vector_type=vector_type))
        with self.conn.cursor() as cur:
            cur.executemany(
                sql.SQL("INSERT INTO {} (id, corpus_id, text, embedding) "
                        "VALUES (%s, %s, %s, %s)").format(table),
                [(i, d.corpus_id, d.text, d.vector) for i, d in enumerate(docs)])
        self.conn.execute(sql.SQL("CREATE INDEX ON {} USING gin (tsv)").format(table))
        if dimension:  # an HNSW index needs a dimension: no vector at all, no index
            self.conn.execute(sql.SQL(
                "CREATE INDEX ON {} USING hnsw (embedding vector_cosine_ops) "
                f"WITH (m = {int(self.m)}, ef_construction = {int(self.ef_construction)})")
                .format(table))
        # VACUUM as well as ANALYZE: no autovacuum of the fresh rows while queries are timed
        # (as the harness's settle() does for recallmesh's own tables).
        self.conn.execute(sql.SQL("VACUUM (ANALYZE) {}").format(table))
        if "hnsw.ef_search" not in self.info:  # the server's setting, not set here
            self.info["hnsw.ef_search"] = self.conn.execute(
                "SELECT current_setting('hnsw.ef_search', true)").fetchone()[0]
        return _PgHybridIndex(self.conn, hybrid_sql(table, self.tsquery, self.text_rank),
                              self.depth, self.rrf_k)


class _PgHybridIndex:
    def __init__(self, conn, statement: sql.Composed, depth: int, rrf_k: int) -> None:
        self.conn, self.statement, self.depth, self.rrf_k = conn, statement, depth, rrf_k

    def search(self, query: str, vector: np.ndarray | None, k: int) -> list[str]:
        rows = self.conn.execute(self.statement, {
            "query": query, "embedding": vector, "depth": self.depth, "rrf_k": self.rrf_k,
            "k": k}).fetchall()
        return [corpus_id for corpus_id, _ in rows]


PEERS: dict[str, Peer] = {p.name: p for p in (
    Peer("peer_bm25", "bm25s over the same texts: Lucene BM25 (k1=1.5, b=0.75), English "
         "stopwords, Snowball stemmer", "bm25s", False,
         {"k1": 1.5, "b": 0.75, "method": "lucene", "stopwords": "en", "stemmer": "english"}),
    Peer("peer_lancedb_fts", "LanceDB native full-text index alone", "lancedb", False,
         {"mode": "fts"}),
    Peer("peer_lancedb_vector", "LanceDB exact cosine search over the same stored vectors "
         "(the served model's)", "lancedb", True, {"mode": "vector"}),
    Peer("peer_lancedb_hybrid", "LanceDB hybrid: native FTS + the same stored vectors (the "
         "served model's), its RRFReranker (k=60), 20 per side, top 10 scored", "lancedb", True,
         {"mode": "hybrid", "depth": 20}),
    Peer("peer_pgvector_hybrid", "pgvector-python's single-SQL hybrid in the stack's Postgres: "
         "ts_rank_cd over plainto_tsquery('english') (GIN) + the same stored vectors by cosine "
         "distance (HNSW m=16, ef_construction=64, ef_search 40), 20 per side, RRF (k=60) in "
         "the same statement, top 10 scored", "pgvector", True,
         {"schema": "peer_pgvector_hybrid", "depth": 20, "rrf_k": 60,
          "tsquery": "plainto_tsquery", "text_rank": "ts_rank_cd", "m": 16,
          "ef_construction": 64}),
)}


def timed_search(index: Index, query: str, embed, k: int = K) -> tuple[list[str], float]:
    """One peer query; the latency includes embedding the query when the peer needs it."""
    start = time.perf_counter()
    vector = embed(query) if embed is not None else None
    ranked = index.search(query, vector, k)
    return ranked, (time.perf_counter() - start) * 1000
