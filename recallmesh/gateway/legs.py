"""gRPC clients of the retrieval legs (RetrieverService); the fusion service's is in
fusion_call.py.

Channels are long-lived (one per target), with keepalive and a retry policy
for UNAVAILABLE on these idempotent calls (recallmesh.wire.channel.internal_options);
a retry never outlives the call's deadline, so recall never retries past its
budget.
"""

from __future__ import annotations

import logging

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from recallmesh.gateway.fanout import LegError, LegTimeout
from recallmesh.shared.legs import LegName
from recallmesh.shared.telemetry import tracing_interceptors
from recallmesh.v1 import retriever_pb2_grpc
from recallmesh.wire.channel import dial_internal
from recallmesh.wire.retriever import LegAnswer, LegQuery, leg_answer, search_request_to_proto

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


class GrpcLeg:
    def __init__(self, name: LegName, target: str, needs_vector: bool = False) -> None:
        self.name = name
        self.target = target
        self.needs_vector = needs_vector
        self.channel = dial_internal(target, "recallmesh.v1.RetrieverService",
                                     tracing_interceptors("client"))
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
        try:
            response = await self.stub.Search(search_request_to_proto(query), timeout=timeout_s)
        except grpc.aio.AioRpcError as exc:
            raise leg_failure(exc, f"{self.name} leg", named=False) from None
        return leg_answer(response)

    async def close(self) -> None:
        await self.channel.close()
