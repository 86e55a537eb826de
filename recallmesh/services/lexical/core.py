"""Lexical retrieval: the leg's searches, by either ranking, on read connections.

Two rankings over the memories' Postgres tsvectors, scoped to one namespace, soft-deleted rows
excluded, optional filters applied:
  - ts_rank (ts_rank.py): the two-tier Postgres full-text search of the system recallmesh is
    measured against;
  - bm25 (the default): Okapi BM25 computed in SQL (scoring.py), by one of two statements: over
    the terms' postings (bm25.py), or, for queries whose terms are common, over the
    pg_textsearch index where the database has it (bm25_index.py;
    docs/decisions/0018-bm25-index.md). A misspelt term is read as the namespace's most similar
    one (spelling.py; docs/decisions/0013, 0021).
A sensitive memory is returned, by either ranking, only when the question asks for what it
holds that the namespace's ordinary memories do not (sensitive.py,
docs/decisions/0015-secrets-on-what-only-they-hold.md); it is then scored like any memory.
Chinese, Japanese and Korean runs are searched as character pairs (recallmesh/shared/cjk.py).
The user's text only ever reaches Postgres as a bound parameter to plainto_tsquery or
to_tsvector, which cannot fail on any input (operators, quotes, backslashes, emoji, over-long
tokens); ts_rank's OR query is derived from the parsed tsquery, never from the raw text.
Every statement's rows are read by column name (rows.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from prometheus_client import Counter

from recallmesh.policy import LexicalRanking, SortBy
from recallmesh.services.lexical.bm25 import PRUNE_MIN_POSTINGS, build_bm25_sql
from recallmesh.services.lexical.bm25_index import (
    INDEX_DEPTH_FACTOR,
    build_bm25_index_sql,
    complete,
    index_query,
)
from recallmesh.services.lexical.rows import LexicalRow, fetch
from recallmesh.services.lexical.scoring import LANGUAGE_PRIOR
from recallmesh.services.lexical.spelling import (
    BM25_PREPARE,
    BM25_WORK_MEM,
    SPELLING_SIMILARITY,
    Prepared,
    spelling_params,
)
from recallmesh.services.lexical.ts_rank import build_search_sql
from recallmesh.shared.cjk import query_terms
from recallmesh.shared.db import Conn
from recallmesh.shared.replicas import ReadSource, as_reads
from recallmesh.wire.filters import Filters


@dataclass(frozen=True)
class LexicalHit:
    memory_id: str
    score: float  # the blended score of the hit's tier
    ts_rank: float
    tier: int  # 0 = AND match (every query term), 1 = OR-broadened
    importance: float = 0.5
    sensitive: bool = False


@dataclass(frozen=True)
class LexicalResult:
    hits: list[LexicalHit]
    # BM25: the query terms' summed idf, the score of a memory holding every term once at
    # average length (what calibrated fusion divides by); None for ts_rank or no hits.
    score_scale: float | None = None
    # What found the candidates: "index" (the BM25 index, build_bm25_index_sql), "sql" (the
    # statements over the postings) or "ts_rank".
    engine: str = "sql"

    @property
    def and_hits(self) -> int:
        return sum(1 for h in self.hits if h.tier == 0)

    @property
    def or_hits(self) -> int:
        return sum(1 for h in self.hits if h.tier == 1)



BM25_STATEMENTS = Counter(
    "recallmesh_lexical_bm25_statements_total",
    "BM25 statements the lexical leg ran, by kind: index (the pg_textsearch index's candidates), "
    "index_too_few (it found fewer candidates than its depth: the SQL statement answered "
    "instead; a steady rate on large namespaces means the index's statistics are stale, "
    "docs/operations/lexical.md), sql (the statements over the postings).",
    ["statement"],
)


class LexicalRetriever:
    """Runs lexical searches on read connections (a replica's when one is set, else the
    primary pool's: recallmesh.shared.replicas)."""

    def __init__(self, reads: ReadSource, or_min_rank: float = 0.01,
                 ranking: LexicalRanking = "ts_rank",
                 k1: float = 1.2, b: float = 0.75,
                 spelling: float = SPELLING_SIMILARITY, bm25_index: bool = False,
                 index_min_postings: int = PRUNE_MIN_POSTINGS,
                 language_prior: float = LANGUAGE_PRIOR) -> None:
        """`bm25_index`: the database has the BM25 index (bm25_engine()), searched when the
        query's terms bring at least `index_min_postings` postings in the namespace, where the
        SQL statement would need pruning (docs/decisions/0018-bm25-index.md)."""
        self.reads = as_reads(reads)
        self.spelling = spelling
        self.language_prior = language_prior
        self.bm25_index = bm25_index
        self.index_min_postings = index_min_postings
        self.or_min_rank = or_min_rank
        self.ranking = ranking
        self.k1 = k1
        self.b = b

    async def search(
        self,
        namespace: str,
        query: str,
        k: int,
        filters: Filters | None = None,
        sort_by: SortBy = "relevance",
        ranking: LexicalRanking | Literal[""] = "",
        k1: float | None = None,
        b: float | None = None,
    ) -> LexicalResult:
        """`ranking`, `k1`, `b` override the leg's settings for this search."""
        ranking = ranking or self.ranking
        terms = query_terms(query)

        async def bm25(conn: Conn) -> tuple[list[LexicalRow], str]:
            async with conn.transaction():
                # one round trip: the statement's memory, how many postings its terms have, and
                # the corrections of misspelt ones
                prepared = next(iter(await fetch(conn, Prepared, BM25_PREPARE, {
                    "ns": namespace, "query": terms, "work_mem": BM25_WORK_MEM,
                    "spelling": self.spelling})), None)
                postings = int(prepared.postings) if prepared else 0
                corrections = spelling_params(prepared)
                k1_b = {"k1": self.k1 if k1 is None else k1, "b": self.b if b is None else b,
                        "language_prior": self.language_prior}
                if (self.bm25_index and postings >= self.index_min_postings
                        and sort_by != "recency"):
                    sql, params = build_bm25_index_sql(filters or Filters(), sort_by,
                                                       corrected=bool(corrections))
                    depth = k * INDEX_DEPTH_FACTOR
                    params.update(k1_b, ns=namespace, query=terms, k=k, depth=depth,
                                  index_query=index_query(terms, corrections), **corrections)
                    found = await fetch(conn, LexicalRow, sql, params)
                    if found and complete(found[0], depth):
                        BM25_STATEMENTS.labels("index").inc()
                        return found, "index"
                    BM25_STATEMENTS.labels("index_too_few").inc()
                sql, params = build_bm25_sql(filters or Filters(), sort_by,
                                             prune=postings >= PRUNE_MIN_POSTINGS,
                                             corrected=bool(corrections))
                params.update(k1_b, ns=namespace, query=terms, k=k, **corrections)
                rows = await fetch(conn, LexicalRow, sql, params)
                BM25_STATEMENTS.labels("sql").inc()
                return rows, "sql"

        async def ts_rank(conn: Conn) -> tuple[list[LexicalRow], str]:
            sql, params = build_search_sql(filters or Filters(), sort_by)
            params.update(ns=namespace, query=terms, k=k, or_min_rank=self.or_min_rank)
            return await fetch(conn, LexicalRow, sql, params), "ts_rank"

        rows, engine = await self.reads.run(bm25 if ranking == "bm25" else ts_rank)
        scale = float(rows[0].scale) if rows and rows[0].scale else None  # BM25 only
        return LexicalResult(
            hits=[
                LexicalHit(str(r.id), float(r.score), float(r.rank), int(r.tier),
                           float(r.importance), bool(r.is_sensitive))
                for r in rows
            ],
            score_scale=scale,
            engine=engine,
        )
