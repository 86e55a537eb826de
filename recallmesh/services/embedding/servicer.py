"""gRPC adapter of the embedding service: EmbedderService over OnnxEmbedder + MicroBatcher."""

from __future__ import annotations

import logging
from pathlib import Path

import grpc
from prometheus_client import Gauge

from recallmesh.embedding_models.manifest import ModelManifest
from recallmesh.services.embedding.batching import MicroBatcher
from recallmesh.services.embedding.core import (
    Embedded,
    OnnxEmbedder,
    check_probe,
    onnxruntime_distributions,
)
from recallmesh.services.embedding.query_cache import QueryVectorCache
from recallmesh.services.embedding.settings import MAX_TEXT_CHARS, EmbeddingSettings
from recallmesh.services.embedding.vector_store import VectorStore
from recallmesh.shared.errors import InvalidArgument
from recallmesh.shared.settings import ConfigError
from recallmesh.v1 import embedder_pb2, embedder_pb2_grpc

log = logging.getLogger(__name__)

PROVIDER_IN_USE = Gauge(
    "recallmesh_embedding_provider_info",
    "1 for the onnxruntime execution provider the embedding session runs on.",
    ["provider", "model_id"],
)

PROBE_COSINE = Gauge(
    "recallmesh_embedding_probe_cosine",
    "Lowest cosine of the model's probe texts embedded here to its reference build's vectors "
    "(checked at start; absent when the manifest has no probe).",
    ["model_id"],
)

KINDS = {
    embedder_pb2.EMBED_KIND_UNSPECIFIED: "query",
    embedder_pb2.EMBED_KIND_QUERY: "query",
    embedder_pb2.EMBED_KIND_DOCUMENT: "document",
}


class EmbedderServicer(embedder_pb2_grpc.EmbedderServiceServicer):
    def __init__(
        self, embedder: OnnxEmbedder, batcher: MicroBatcher, max_texts_per_call: int,
        query_cache: QueryVectorCache | None = None, vector_store: VectorStore | None = None,
        vector_store_kinds: tuple[str, ...] = ("document", "query"),
    ) -> None:
        self.embedder = embedder
        self.batcher = batcher
        self.max_texts = max_texts_per_call
        self.query_cache = query_cache if query_cache is not None else QueryVectorCache(0)
        self.vector_store = vector_store
        self.vector_store_kinds = vector_store_kinds

    async def Embed(
        self, request: embedder_pb2.EmbedRequest, context: grpc.aio.ServicerContext,
    ) -> embedder_pb2.EmbedResponse:
        n = len(request.texts)
        if n == 0:
            raise InvalidArgument("texts must not be empty")
        if n > self.max_texts:
            raise InvalidArgument(f"at most {self.max_texts} texts per call, got {n}")
        if request.kind not in KINDS:
            raise InvalidArgument(f"unknown kind {request.kind}")
        texts = [t[:MAX_TEXT_CHARS] for t in request.texts]
        kind = KINDS[request.kind]
        remaining = context.time_remaining()

        async def run_model(some: list[str]) -> Embedded:
            return await self.batcher.embed(some, kind, remaining)

        compute = run_model
        if self.vector_store is not None and kind in self.vector_store_kinds:
            store = self.vector_store

            async def from_store(some: list[str]) -> Embedded:
                return await store.embed(some, kind, run_model)

            compute = from_store
        if kind == "query" and self.query_cache.enabled:
            result = await self.query_cache.embed(texts, compute)
        else:
            result = await compute(texts)
        cut = [
            len(original) > MAX_TEXT_CHARS or by_tokens
            for original, by_tokens in zip(request.texts, result.truncated, strict=True)
        ]
        manifest = self.embedder.manifest
        response = embedder_pb2.EmbedResponse(
            model_id=manifest.model_id,
            dimension=manifest.dimension,
            truncated=sum(cut),
        )
        for vector in result.vectors:
            response.embeddings.add().values.extend(vector.tolist())
        return response

    async def ModelInfo(
        self, request: embedder_pb2.ModelInfoRequest, context: grpc.aio.ServicerContext,
    ) -> embedder_pb2.ModelInfoResponse:
        m = self.embedder.manifest
        return embedder_pb2.ModelInfoResponse(
            model_id=m.model_id,
            dimension=m.dimension,
            max_tokens=m.max_length,
            provider=self.embedder.provider,
            precision=m.precision,
            pooling=m.pooling,
            max_texts_per_call=self.max_texts,
            provider_note=self.embedder.provider_note,
        )


class EmbeddingApp:
    service_names: tuple[str, ...] = (
        embedder_pb2.DESCRIPTOR.services_by_name["EmbedderService"].full_name,)

    def __init__(self) -> None:
        self.batcher: MicroBatcher | None = None
        self.servicer: EmbedderServicer | None = None

    async def start(self) -> None:
        installed = onnxruntime_distributions()
        if len(installed) > 1:
            raise ConfigError(
                f"both {' and '.join(installed)} are installed in this environment; "
                "they overwrite each other's files. Keep exactly one (see docs/configuration.md)"
            )
        settings = EmbeddingSettings.from_env()
        manifest = ModelManifest.load()
        manifest.verify()
        embedder = OnnxEmbedder(
            manifest,
            provider=settings.provider,
            intra_op_threads=settings.intra_op_threads,
            max_batch=settings.max_batch,
            max_batch_tokens=settings.max_batch_tokens,
        )
        embedder.warm_up()
        probe_cosine = check_probe(manifest, embedder.embed)  # ConfigError: wrong vectors here
        if probe_cosine is not None:
            PROBE_COSINE.labels(manifest.model_id).set(probe_cosine)
        self.batcher = MicroBatcher(embedder.embed, settings.max_batch, settings.max_wait_ms / 1000,
                                    settings.max_queue_texts)
        self.batcher.start()
        store = None
        if settings.vector_store:
            store = VectorStore(Path(settings.vector_store).expanduser(), manifest,
                                producer=embedder.producer)
            log.info("vector store", extra={"path": str(store.path), "vectors": len(store),
                                            "kinds": ",".join(settings.vector_store_kinds)})
        self.servicer = EmbedderServicer(embedder, self.batcher, settings.max_texts_per_call,
                                         QueryVectorCache(settings.query_cache_mb * 2**20), store,
                                         settings.vector_store_kinds)
        PROVIDER_IN_USE.labels(embedder.provider, manifest.model_id).set(1)
        log.info(
            "model loaded",
            extra={
                "model_id": manifest.model_id,
                "dimension": manifest.dimension,
                "provider": embedder.provider,
                "provider_note": embedder.provider_note,
                "probe_cosine": None if probe_cosine is None else round(probe_cosine, 4),
            },
        )

    def register(self, server: grpc.aio.Server) -> None:
        assert self.servicer is not None
        embedder_pb2_grpc.add_EmbedderServiceServicer_to_server(self.servicer, server)

    async def stop(self) -> None:
        if self.batcher is not None:
            await self.batcher.close()
        if self.servicer is not None and self.servicer.vector_store is not None:
            self.servicer.vector_store.close()
