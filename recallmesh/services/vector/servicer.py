"""gRPC adapter of the vector leg: RetrieverService.Search over VectorRetriever."""

from __future__ import annotations

import logging

import grpc
from psycopg_pool import AsyncConnectionPool

from recallmesh.embedding_models.calibration import calibration_for
from recallmesh.migrations.vector_schema import COLUMN_DIMENSION_SQL
from recallmesh.services.retriever_app import RetrieverApp
from recallmesh.services.vector.core import VectorRetriever
from recallmesh.services.vector.settings import VectorSettings
from recallmesh.shared.errors import InvalidArgument
from recallmesh.shared.replicas import Reads
from recallmesh.v1 import retriever_pb2, retriever_pb2_grpc
from recallmesh.wire.retriever import leg_query_from_proto

log = logging.getLogger(__name__)


class NoEmbeddingColumn(RuntimeError):
    pass


class VectorServicer(retriever_pb2_grpc.RetrieverServiceServicer):
    def __init__(self, retriever: VectorRetriever) -> None:
        self.retriever = retriever

    async def Search(
        self, request: retriever_pb2.SearchRequest, context: grpc.aio.ServicerContext,
    ) -> retriever_pb2.SearchResponse:
        q = leg_query_from_proto(request)
        if not q.vector:
            raise InvalidArgument("the vector leg needs query_vector")
        if not q.vector_model.strip():
            raise InvalidArgument("the vector leg needs vector_model (the query vector's model)")
        calibration = calibration_for(q.vector_model)
        hits = await self.retriever.search(q.namespace, q.vector, q.vector_model, q.k, q.filters)
        response = retriever_pb2.SearchResponse(
            candidates=[
                retriever_pb2.Candidate(memory_id=h.memory_id, score=h.similarity,
                                        importance=h.importance)
                for h in hits
            ],
            score_min=-1.0,  # cosine similarity
            score_max=1.0,
        )
        if calibration is not None:  # the model's typical cosine of an unrelated memory
            response.score_floor = calibration.cosine_floor
        return response


class VectorApp(RetrieverApp):
    name = "vector"

    async def build(self, pool: AsyncConnectionPool, reads: Reads) -> VectorServicer:
        settings = VectorSettings.from_env()
        async with pool.connection() as conn:
            cur = await conn.execute(COLUMN_DIMENSION_SQL, ("embedding",))
            row = await cur.fetchone()
        if row is None:
            raise NoEmbeddingColumn(
                "memories.embedding does not exist: run `recallmesh migrate` (or `recallmesh up`)"
            )
        dimension = int(row[0])
        log.info("vector leg ready", extra={"dimension": dimension,
                                            "ef_search": settings.ef_search,
                                            "exact_max": settings.exact_max})
        return VectorServicer(
            VectorRetriever(reads, dimension, settings.ef_search, settings.iterative_scan,
                            settings.exact_max))
