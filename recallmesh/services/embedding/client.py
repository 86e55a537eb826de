"""Client of the embedding service (EmbedderService), used by the gateway and the indexer."""

from __future__ import annotations

from dataclasses import dataclass

from recallmesh.shared.telemetry import tracing_interceptors
from recallmesh.v1 import embedder_pb2, embedder_pb2_grpc
from recallmesh.wire.channel import dial_internal

KINDS = {"query": embedder_pb2.EMBED_KIND_QUERY, "document": embedder_pb2.EMBED_KIND_DOCUMENT}


@dataclass(frozen=True)
class Embeddings:
    model_id: str
    dimension: int
    vectors: list[list[float]]


class EmbedderClient:
    def __init__(self, target: str) -> None:
        self.target = target
        self.channel = dial_internal(target, "recallmesh.v1.EmbedderService",
                                     tracing_interceptors("client"))
        self.stub = embedder_pb2_grpc.EmbedderServiceStub(self.channel)

    async def embed(self, texts: list[str], kind: str, timeout_s: float) -> Embeddings:
        """Raises grpc.aio.AioRpcError when the service fails or misses the deadline."""
        response = await self.stub.Embed(
            embedder_pb2.EmbedRequest(texts=texts, kind=KINDS[kind]), timeout=timeout_s
        )
        vectors = [list(e.values) for e in response.embeddings]
        if len(vectors) != len(texts):
            raise ValueError(f"embedding service returned {len(vectors)} vectors for {len(texts)}")
        return Embeddings(response.model_id, response.dimension, vectors)

    async def model_info(self, timeout_s: float = 5.0) -> embedder_pb2.ModelInfoResponse:
        # the generated stub is untyped: its call answers Any
        info: embedder_pb2.ModelInfoResponse = await self.stub.ModelInfo(
            embedder_pb2.ModelInfoRequest(), timeout=timeout_s)
        return info

    async def close(self) -> None:
        await self.channel.close()
