"""The fusion service's client and its call, with the in-process fallback and its circuit
breaker: fusion runs in the fusion service when it answers in time, else here with the same code
(recallmesh.services.fusion.core.fuse) and the same ranking. After a failure the gateway fuses
in-process for FUSION_RETRY_AFTER_S instead of paying the timeout on every recall, then tries
the service again."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Protocol

import grpc
from opentelemetry import trace
from opentelemetry.instrumentation.grpc import aio_client_interceptors

from recallmesh.gateway.fanout import LegError, LegTimeout
from recallmesh.gateway.legs import leg_failure
from recallmesh.gateway.metrics import FALLBACKS
from recallmesh.policy import FusionSettings
from recallmesh.services.fusion.core import fuse
from recallmesh.v1 import fusion_pb2, fusion_pb2_grpc
from recallmesh.wire.channel import dial_internal
from recallmesh.wire.fusion import (
    FusedCandidate,
    LegList,
    hits_from_proto,
    lists_to_proto,
    settings_to_proto,
)

log = logging.getLogger(__name__)
tracer = trace.get_tracer("recallmesh.gateway")

FUSION_RETRY_AFTER_S = 5.0  # after a failed fusion call, fuse in-process this long


class Fuser(Protocol):
    """The fusion service's client: fuse remotely or raise (the caller falls back)."""

    async def fuse(
        self, lists: list[LegList], settings: FusionSettings, timeout_s: float
    ) -> list[FusedCandidate]: ...


class FusionCall:
    def __init__(self, fuser: Fuser | None, timeout_ms: int) -> None:
        self.fuser = fuser
        self.timeout_ms = timeout_ms
        self._retry_at = 0.0  # monotonic time before which fusion stays in-process
        self._failure = ""

    async def __call__(
        self, lists: list[LegList], settings: FusionSettings, remaining_s: float
    ) -> tuple[list[FusedCandidate], str]:
        """The fused list and where fusion ran ("cc (service)", "cc (local: why)")."""
        if self.fuser is None:
            return fuse(lists, settings), f"{settings.method} (local)"
        if time.monotonic() < self._retry_at:  # failed recently: do not wait on it again
            FALLBACKS.labels("local_fusion").inc()
            return fuse(lists, settings), f"{settings.method} (local: {self._failure})"
        timeout_s = max(min(self.timeout_ms / 1000, remaining_s / 2), 0.002)
        with tracer.start_as_current_span("fusion"):
            try:
                return (
                    await asyncio.wait_for(self.fuser.fuse(lists, settings, timeout_s), timeout_s),
                    f"{settings.method} (service)",
                )
            except (TimeoutError, LegTimeout):
                why = f"fusion service: no answer within {timeout_s * 1000:.0f} ms"
            except LegError as exc:
                why = str(exc)
            except Exception as exc:  # a client bug must not fail the recall
                log.exception("fusion call failed unexpectedly")
                why = f"fusion service: {type(exc).__name__}"
        FALLBACKS.labels("local_fusion").inc()
        self._retry_at = time.monotonic() + FUSION_RETRY_AFTER_S
        self._failure = f"{why}; retrying the service in {FUSION_RETRY_AFTER_S:.0f} s"
        return fuse(lists, settings), f"{settings.method} (local: {why})"


class FusionClient:
    """The fusion service (recallmesh/services/fusion); the gateway falls back to in-process
    fusion."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.channel = dial_internal(target, "recallmesh.v1.FusionService",
                                     aio_client_interceptors())
        self.stub = fusion_pb2_grpc.FusionServiceStub(self.channel)

    async def fuse(
        self, lists: list[LegList], settings: FusionSettings, timeout_s: float
    ) -> list[FusedCandidate]:
        request = fusion_pb2.FuseRequest(settings=settings_to_proto(settings))
        lists_to_proto(lists, request)
        try:
            response = await self.stub.Fuse(request, timeout=timeout_s)
        except grpc.aio.AioRpcError as exc:
            raise leg_failure(exc, "fusion service") from None
        return hits_from_proto(response.hits)

    async def close(self) -> None:
        await self.channel.close()
