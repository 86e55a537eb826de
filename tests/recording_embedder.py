"""A recording EmbedderService for the test suite, between the indexer and the real model.

It forwards every Embed call to the real embedding service and records the
texts. Before forwarding, it looks each document text up in the database: if
it is the content of a sensitive memory, the call fails (FAILED_PRECONDITION)
and the violation is recorded, so any test that makes the system send a
sensitive text to the embedder fails (see test_sensitive_memories_never_reach_the_embedder).
"""

from __future__ import annotations

import threading
from concurrent import futures

import grpc
import psycopg

from recallmesh.shared.transport import grpc_options
from recallmesh.v1 import embedder_pb2, embedder_pb2_grpc


class RecordingEmbedder(embedder_pb2_grpc.EmbedderServiceServicer):
    def __init__(self, upstream: str, dsn: str) -> None:
        # The services' client options: reconnect fast after the model restarts.
        self.channel = grpc.insecure_channel(upstream, options=grpc_options())
        self.stub = embedder_pb2_grpc.EmbedderServiceStub(self.channel)
        self.dsn = dsn
        self.lock = threading.Lock()
        self.documents: list[str] = []
        self.violations: list[str] = []

    def _sensitive(self, texts: list[str]) -> list[str]:
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            rows = conn.execute(
                "SELECT content FROM memories WHERE is_sensitive AND content = ANY(%s)", (texts,)
            ).fetchall()
        return [r[0] for r in rows]

    def Embed(self, request: embedder_pb2.EmbedRequest,
              context: grpc.ServicerContext) -> embedder_pb2.EmbedResponse:
        texts = list(request.texts)
        leaked = self._sensitive(texts)
        with self.lock:
            if request.kind == embedder_pb2.EMBED_KIND_DOCUMENT:
                self.documents.extend(texts)
            self.violations.extend(leaked)
        if leaked:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, "sensitive text sent to embedder")
        try:
            response: embedder_pb2.EmbedResponse = self.stub.Embed(
                request, timeout=context.time_remaining(), metadata=_credential(context))
            return response
        except grpc.RpcError as exc:  # pass the real service's failure through
            context.abort(exc.code(), exc.details())
            raise  # not reached: abort raises

    def ModelInfo(self, request: embedder_pb2.ModelInfoRequest,
                  context: grpc.ServicerContext) -> embedder_pb2.ModelInfoResponse:
        info: embedder_pb2.ModelInfoResponse = self.stub.ModelInfo(
            request, timeout=context.time_remaining(), metadata=_credential(context))
        return info


def _credential(context: grpc.ServicerContext) -> list[tuple[str, str]]:
    """The caller's internal credential, passed on (a transparent proxy)."""
    return [(k, v) for k, v in context.invocation_metadata() if k == "authorization"]


def start_recording_embedder(upstream: str, dsn: str) -> tuple[RecordingEmbedder, grpc.Server, str]:
    servicer = RecordingEmbedder(upstream, dsn)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    embedder_pb2_grpc.add_EmbedderServiceServicer_to_server(servicer, server)
    port = server.add_insecure_port("localhost:0")
    server.start()
    return servicer, server, f"localhost:{port}"
