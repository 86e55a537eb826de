"""The process shell every retrieval leg shares: one RetrieverService servicer over a
Postgres pool (run by recallmesh.shared.server.run)."""

from __future__ import annotations

from typing import Any

import grpc
from psycopg_pool import AsyncConnectionPool

from recallmesh.shared.db import open_pool, resolve_dsn, unreachable
from recallmesh.shared.replicas import Reads
from recallmesh.v1 import retriever_pb2, retriever_pb2_grpc


class RetrieverApp:
    service_names: tuple[str, ...] = (
        retriever_pb2.DESCRIPTOR.services_by_name["RetrieverService"].full_name,)
    name = "retriever"  # the leg's name (pool name in logs)

    def __init__(self) -> None:
        self.pool: AsyncConnectionPool | None = None
        self.reads: Reads | None = None
        self.servicer: Any = None

    async def build(self, pool: AsyncConnectionPool,
                    reads: Reads) -> retriever_pb2_grpc.RetrieverServiceServicer:
        """The leg's servicer over the open primary pool and the searches' reads (a replica's
        when RECALLMESH_READ_DSN is set); raise to refuse to start."""
        raise NotImplementedError

    async def start(self) -> None:
        self.pool = await open_pool(resolve_dsn(), name=self.name)
        self.reads = await Reads.open(self.pool, self.name)
        self.servicer = await self.build(self.pool, self.reads)

    async def ready(self) -> str:
        return await unreachable(self.pool)

    def register(self, server: grpc.aio.Server) -> None:
        assert self.servicer is not None
        retriever_pb2_grpc.add_RetrieverServiceServicer_to_server(self.servicer, server)

    async def stop(self) -> None:
        if self.reads is not None:
            await self.reads.close()
        if self.pool is not None:
            await self.pool.close()
