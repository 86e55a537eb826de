"""gRPC clients of the retrieval legs (RetrieverService); the fusion service's is in
fusion_call.py.

Channels are long-lived (one per target), with keepalive and a retry policy
for UNAVAILABLE on these idempotent calls (recallmesh.wire.channel.internal_options);
a retry never outlives the call's deadline, so recall never retries past its
budget.
"""

from __future__ import annotations

import logging
import math
import uuid

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from opentelemetry.instrumentation.grpc import aio_client_interceptors

from recallmesh.gateway.fanout import LegAnswer, LegError, LegQuery, LegTimeout
from recallmesh.v1 import retriever_pb2, retriever_pb2_grpc
from recallmesh.wire.channel import dial_internal
from recallmesh.wire.enums import SORT_BY_VALUES
from recallmesh.wire.filters import filters_to_proto
from recallmesh.wire.fusion import (
    LegCandidate,
)

log = logging.getLogger(__name__)

SERVING = health_pb2.HealthCheckResponse.SERVING


def leg_failure(
    exc: grpc.aio.AioRpcError, source: str, *, named: bool = True
) -> LegTimeout | LegError:
    """What a failed call to a leg (or to the embedding or fusion service) means for the
    recall. The error's message says what failed: the status code name, after `source` when
    `named` (a leg's own failure is not: its LegStatus names it). Never the peer's text
    (addresses, connection errors, its own messages): that goes to the log only."""
    code = exc.code()
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        log.debug("%s call failed: %s: %s", source, code.name, exc.details())
        return LegTimeout()
    log.warning("%s call failed: %s: %s", source, code.name, exc.details())
    return LegError(f"{source}: {code.name}" if named else code.name)


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
        self.channel = dial_internal(target, "recallmesh.v1.RetrieverService",
                                     aio_client_interceptors())
        self.stub = retriever_pb2_grpc.RetrieverServiceStub(self.channel)
        self.health = health_pb2_grpc.HealthStub(self.channel)

    async def serving(self, timeout_s: float) -> bool:
        """The leg's own readiness (grpc.health.v1, overall service): SERVING in time."""
        try:
            response = await self.health.Check(health_pb2.HealthCheckRequest(),
                                               timeout=timeout_s)
        except grpc.aio.AioRpcError:
            return False
        serving: bool = response.status == SERVING
        return serving

    async def search(self, query: LegQuery, timeout_s: float) -> LegAnswer:
        request = retriever_pb2.SearchRequest(
            namespace=query.namespace,
            query=query.query,
            k=query.k,
            sort_by=SORT_BY_VALUES[query.sort_by],
            query_vector=query.vector,
            vector_model=query.vector_model,
            ranking=query.lexical_ranking,
            seed_memory_ids=query.seed_memory_ids,
        )
        if query.bm25_k1 is not None:
            request.bm25_k1 = query.bm25_k1
        if query.bm25_b is not None:
            request.bm25_b = query.bm25_b
        filters_to_proto(query.filters, request.filters)
        try:
            response = await self.stub.Search(request, timeout=timeout_s)
        except grpc.aio.AioRpcError as exc:
            raise leg_failure(exc, f"{self.name} leg", named=False) from None
        # A leg is a separate process: never let a malformed id reach the hydration query.
        candidates = [
            LegCandidate(c.memory_id, c.score, min(max(c.importance, 0.0), 1.0), c.exact_match,
                         c.sensitive)
            for c in response.candidates
            if _is_uuid(c.memory_id)
        ]
        bounds = None
        if response.HasField("score_min") and response.HasField("score_max"):
            bounds = (response.score_min, response.score_max)
        scale = response.score_scale if response.HasField("score_scale") else None
        if scale is not None and not (math.isfinite(scale) and scale > 0):
            scale = None  # a leg's malformed scale: fused as if it gave none
        floor = response.score_floor if response.HasField("score_floor") else None
        if floor is not None and not math.isfinite(floor):
            floor = None  # a leg's malformed floor: measured from the list's median
        reasons = {c.memory_id: c.reason for c in response.candidates if c.reason}
        return LegAnswer(candidates, bounds, scale, floor, reasons)

    async def close(self) -> None:
        await self.channel.close()
