"""gRPC adapter of the graph leg: RetrieverService.Search over GraphRetriever."""

from __future__ import annotations

import logging
from typing import Any

import grpc

from recallmesh.v1 import retriever_pb2, retriever_pb2_grpc
from services.graph.core import GraphRetriever
from shared.config import GraphLegSettings
from shared.db import open_pool, resolve_dsn
from shared.validation import search_request

log = logging.getLogger(__name__)


class GraphServicer(retriever_pb2_grpc.RetrieverServiceServicer):
    def __init__(self, retriever: GraphRetriever) -> None:
        self.retriever = retriever

    async def Search(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        # The query vector is optional here: without it, seeds come from names only.
        ns, query, k, filters, _sort_by = search_request(request)
        hits = await self.retriever.search(
            ns, query, request.query_vector, request.vector_model, k, filters)
        return retriever_pb2.SearchResponse(candidates=[
            retriever_pb2.Candidate(memory_id=h.memory_id, score=h.score,
                                    importance=h.importance, reason=h.path)
            for h in hits
        ])


class GraphApp:
    service_names = (retriever_pb2.DESCRIPTOR.services_by_name["RetrieverService"].full_name,)

    def __init__(self) -> None:
        self.pool: Any = None
        self.servicer: GraphServicer | None = None

    async def start(self) -> None:
        settings = GraphLegSettings.from_env()
        self.pool = await open_pool(resolve_dsn(), name="graph")
        self.servicer = GraphServicer(GraphRetriever(self.pool, settings.graph))
        log.info("graph leg ready", extra={"mode": settings.graph.mode,
                                           "damping": settings.graph.damping,
                                           "node_cap": settings.graph.node_cap})

    def register(self, server: grpc.aio.Server) -> None:
        assert self.servicer is not None
        retriever_pb2_grpc.add_RetrieverServiceServicer_to_server(self.servicer, server)

    async def stop(self) -> None:
        if self.pool is not None:
            await self.pool.close()
