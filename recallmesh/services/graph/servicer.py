"""gRPC adapter of the graph leg: RetrieverService.Search over GraphRetriever."""

from __future__ import annotations

import logging

import grpc
from psycopg_pool import AsyncConnectionPool

from recallmesh.services.graph.core import GraphRetriever
from recallmesh.services.graph.settings import GraphLegSettings
from recallmesh.services.retriever_app import RetrieverApp
from recallmesh.shared.replicas import Reads
from recallmesh.v1 import retriever_pb2, retriever_pb2_grpc
from recallmesh.wire.retriever import leg_query_from_proto

log = logging.getLogger(__name__)


class GraphServicer(retriever_pb2_grpc.RetrieverServiceServicer):
    def __init__(self, retriever: GraphRetriever) -> None:
        self.retriever = retriever

    async def Search(
        self, request: retriever_pb2.SearchRequest, context: grpc.aio.ServicerContext,
    ) -> retriever_pb2.SearchResponse:
        # The query vector is optional here: without it, seeds come from names only.
        q = leg_query_from_proto(request)
        hits = await self.retriever.search(q.namespace, q.query, q.vector, q.vector_model, q.k,
                                           q.filters, q.seed_memory_ids)
        return retriever_pb2.SearchResponse(candidates=[
            retriever_pb2.Candidate(memory_id=h.memory_id, score=h.score,
                                    importance=h.importance, reason=h.path)
            for h in hits
        ])


class GraphApp(RetrieverApp):
    name = "graph"

    async def build(self, pool: AsyncConnectionPool, reads: Reads) -> GraphServicer:
        settings = GraphLegSettings.from_env()
        log.info("graph leg ready", extra={"mode": settings.graph.mode,
                                           "damping": settings.graph.damping,
                                           "node_cap": settings.graph.node_cap})
        return GraphServicer(GraphRetriever(reads, settings.graph))
