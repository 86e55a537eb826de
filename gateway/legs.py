"""gRPC clients of the retrieval legs (RetrieverService), one channel per leg."""

from __future__ import annotations

import uuid

import grpc
from opentelemetry.instrumentation.grpc import aio_client_interceptors

from gateway.recall import LegError, LegQuery, LegTimeout
from recallmesh.v1 import retriever_pb2, retriever_pb2_grpc
from shared.filters import filters_to_proto
from shared.server import grpc_options
from shared.validation import SORT_BY_VALUES


def leg_failure(exc: grpc.aio.AioRpcError, source: str = "") -> LegTimeout | LegError:
    """What a failed call to a leg (or to the embedding service) means for the recall."""
    if exc.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
        return LegTimeout()
    prefix = f"{source}: " if source else ""
    return LegError(f"{prefix}{exc.code().name}: {exc.details()}")


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


class GrpcLeg:
    def __init__(self, name: str, target: str, needs_vector: bool = False) -> None:
        self.name = name
        self.target = target
        self.needs_vector = needs_vector
        self.channel = grpc.aio.insecure_channel(
            target, options=grpc_options(), interceptors=aio_client_interceptors()
        )
        self.stub = retriever_pb2_grpc.RetrieverServiceStub(self.channel)

    async def search(self, query: LegQuery, timeout_s: float) -> list[tuple[str, float]]:
        request = retriever_pb2.SearchRequest(
            namespace=query.namespace,
            query=query.query,
            k=query.k,
            sort_by=SORT_BY_VALUES[query.sort_by],
            query_vector=query.vector,
            vector_model=query.vector_model,
        )
        filters_to_proto(query.filters, request.filters)
        try:
            response = await self.stub.Search(request, timeout=timeout_s)
        except grpc.aio.AioRpcError as exc:
            raise leg_failure(exc) from None
        # A leg is a separate process: never let a malformed id reach the hydration query.
        return [(c.memory_id, c.score) for c in response.candidates if _is_uuid(c.memory_id)]

    async def close(self) -> None:
        await self.channel.close()
