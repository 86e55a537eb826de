"""gRPC adapter of the lexical leg: RetrieverService.Search over LexicalRetriever."""

from __future__ import annotations

import logging

import grpc
from prometheus_client import Gauge
from psycopg_pool import AsyncConnectionPool

from recallmesh.migrations.bm25_index import STATE_PARAMS, STATE_SQL, engine_of
from recallmesh.services.lexical.core import LexicalRetriever
from recallmesh.services.lexical.settings import LexicalSettings
from recallmesh.services.retriever_app import RetrieverApp
from recallmesh.shared.db import Conn, one_row
from recallmesh.shared.replicas import Reads
from recallmesh.v1 import retriever_pb2, retriever_pb2_grpc
from recallmesh.wire.retriever import leg_query_from_proto

log = logging.getLogger(__name__)

BM25_ENGINE = Gauge(
    "recallmesh_lexical_bm25_engine_info",
    "1 for what serves the lexical leg's BM25 queries with common terms: pg_textsearch <version> "
    "(the BM25 index) or sql (the statements over the postings), chosen at start.",
    ["engine"],
)


class LexicalServicer(retriever_pb2_grpc.RetrieverServiceServicer):
    def __init__(self, retriever: LexicalRetriever) -> None:
        self.retriever = retriever

    async def Search(
        self, request: retriever_pb2.SearchRequest, context: grpc.aio.ServicerContext,
    ) -> retriever_pb2.SearchResponse:
        q = leg_query_from_proto(request)
        result = await self.retriever.search(q.namespace, q.query, q.k, q.filters, q.sort_by,
                                             ranking=q.lexical_ranking, k1=q.bm25_k1,
                                             b=q.bm25_b)
        return retriever_pb2.SearchResponse(
            candidates=[
                retriever_pb2.Candidate(memory_id=h.memory_id, score=h.score,
                                        importance=h.importance, exact_match=h.tier == 0,
                                        sensitive=h.sensitive)
                for h in result.hits
            ],
            diagnostics={"and_hits": str(result.and_hits), "or_hits": str(result.or_hits),
                         "engine": result.engine},
            score_scale=result.score_scale,
        )


class LexicalApp(RetrieverApp):
    name = "lexical"

    async def build(self, pool: AsyncConnectionPool, reads: Reads) -> LexicalServicer:
        settings = LexicalSettings.from_env()
        engine = await bm25_engine(reads) if settings.bm25_index == "auto" else ""
        BM25_ENGINE.labels(engine or "sql").set(1)
        log.info("lexical BM25", extra={"engine": engine or "sql", "setting": settings.bm25_index})
        return LexicalServicer(LexicalRetriever(reads, settings.or_min_rank, settings.ranking,
                                                settings.bm25_k1, settings.bm25_b,
                                                settings.spelling_similarity,
                                                bm25_index=bool(engine),
                                                index_min_postings=settings.
                                                bm25_index_min_postings,
                                                language_prior=settings.language_prior))


async def bm25_engine(reads: Reads) -> str:
    """"pg_textsearch <version>" when the database the searches read has the BM25 index (made by
    recallmesh.migrations.bm25_index at the stack's start or the migrate job), else ""."""
    async def read(conn: Conn) -> str:
        cur = await conn.execute(STATE_SQL, STATE_PARAMS)
        row = await one_row(cur)
        return engine_of(tuple(row))

    return await reads.run(read)
