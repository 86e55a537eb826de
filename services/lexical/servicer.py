"""gRPC adapter of the lexical leg: RetrieverService.Search over LexicalRetriever."""

from __future__ import annotations

from typing import Any

import grpc

from recallmesh.v1 import retriever_pb2, retriever_pb2_grpc
from services.lexical.core import LexicalRetriever
from shared.config import LexicalSettings
from shared.db import open_pool, resolve_dsn
from shared.validation import search_request


class LexicalServicer(retriever_pb2_grpc.RetrieverServiceServicer):
    def __init__(self, retriever: LexicalRetriever) -> None:
        self.retriever = retriever

    async def Search(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        ns, query, k, filters, sort_by = search_request(request)
        result = await self.retriever.search(ns, query, k, filters, sort_by)
        return retriever_pb2.SearchResponse(
            candidates=[
                retriever_pb2.Candidate(memory_id=h.memory_id, score=h.score,
                                        importance=h.importance, exact_match=h.tier == 0)
                for h in result.hits
            ],
            diagnostics={"and_hits": str(result.and_hits), "or_hits": str(result.or_hits)},
        )


class LexicalApp:
    service_names = (retriever_pb2.DESCRIPTOR.services_by_name["RetrieverService"].full_name,)

    def __init__(self) -> None:
        self.pool: Any = None
        self.servicer: LexicalServicer | None = None

    async def start(self) -> None:
        settings = LexicalSettings.from_env()
        self.pool = await open_pool(resolve_dsn(), name="lexical")
        self.servicer = LexicalServicer(LexicalRetriever(self.pool, settings.or_min_rank))

    def register(self, server: grpc.aio.Server) -> None:
        assert self.servicer is not None
        retriever_pb2_grpc.add_RetrieverServiceServicer_to_server(self.servicer, server)

    async def stop(self) -> None:
        if self.pool is not None:
            await self.pool.close()
