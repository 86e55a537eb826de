"""gRPC adapter of the graph leg: RetrieverService.Search over GraphRetriever."""

from __future__ import annotations

import logging
from typing import Any

import grpc

from recallmesh.services.graph.core import GraphRetriever
from recallmesh.services.graph.settings import GraphLegSettings
from recallmesh.services.retriever_app import RetrieverApp
from recallmesh.shared.replicas import Reads
from recallmesh.v1 import retriever_pb2, retriever_pb2_grpc
from recallmesh.wire.retriever import search_request, seed_memory_ids

log = logging.getLogger(__name__)


class GraphServicer(retriever_pb2_grpc.RetrieverServiceServicer):
    def __init__(self, retriever: GraphRetriever) -> None:
        self.retriever = retriever

    async def Search(
        self, request: retriever_pb2.SearchRequest, context: grpc.aio.ServicerContext,
    ) -> retriever_pb2.SearchResponse:
        # The query vector is optional here: without it, seeds come from names only.
        ns, query, k, filters, _sort_by = search_request(request)
        hits = await self.retriever.search(
            ns, query, request.query_vector, request.vector_model, k, filters,
            seed_memory_ids(request))
        return retriever_pb2.SearchResponse(candidates=[
            retriever_pb2.Candidate(memory_id=h.memory_id, score=h.score,
                                    importance=h.importance, reason=h.path)
            for h in hits
        ])


class GraphApp(RetrieverApp):
    name = "graph"

    async def build(self, pool: Any, reads: Reads) -> GraphServicer:
        settings = GraphLegSettings.from_env()
        log.info("graph leg ready", extra={"mode": settings.graph.mode,
                                           "damping": settings.graph.damping,
                                           "node_cap": settings.graph.node_cap})
        return GraphServicer(GraphRetriever(reads, settings.graph))
