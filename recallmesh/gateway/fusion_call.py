"""Where a recall's fusions run, decided here and nowhere else
(docs/decisions/0016-where-fusion-runs.md): every fusion of a recall (the graph second stage's
seeds, the final ranking) goes to the fusion service when one is configured, and runs here with
the same code (recallmesh.services.fusion.core.fuse) and the same ranking when none is, or when
it fails or is late. After a failure the gateway fuses in-process for FUSION_RETRY_AFTER_S
instead of paying the timeout on every fusion, then tries the service again. The recency order
ranks nothing: its candidate pool is built here, in-process (`pool`)."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Protocol

import grpc
from opentelemetry import trace

from recallmesh.gateway.fanout import LegError, LegTimeout
from recallmesh.gateway.legs import leg_failure
from recallmesh.gateway.metrics import FALLBACKS
from recallmesh.policy import FusionSettings
from recallmesh.services.fusion.core import fuse
from recallmesh.shared.telemetry import tracing_interceptors
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
    """The one place that decides where a fusion runs, and says so (RecallOutcome.fusion)."""

    def __init__(self, fuser: Fuser | None, timeout_ms: int) -> None:
        self.fuser = fuser
        self.timeout_ms = timeout_ms
        self._retry_at = 0.0  # monotonic time before which fusion stays in-process
        self._failure = ""

    async def __call__(
        self, lists: list[LegList], settings: FusionSettings, remaining_s: float,
        ranking: bool = True,
    ) -> tuple[list[FusedCandidate], str]:
        """The fused list and where fusion ran ("cc (service)", "cc (local)" without a
        service, "cc (local: why)" after a failure). `ranking`: the recall's final fusion;
        only it counts a fallback (recallmesh_recall_fallbacks_total counts recalls), and
        after a failed earlier fusion it runs in-process by the breaker, so it is counted."""
        if self.fuser is None:
            return fuse(lists, settings), f"{settings.method} (local)"
        if time.monotonic() < self._retry_at:  # failed recently: do not wait on it again
            if ranking:
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
        if ranking:
            FALLBACKS.labels("local_fusion").inc()
        self._retry_at = time.monotonic() + FUSION_RETRY_AFTER_S
        self._failure = f"{why}; retrying the service in {FUSION_RETRY_AFTER_S:.0f} s"
        return fuse(lists, settings), f"{settings.method} (local: {why})"

    def pool(self, lists: list[LegList], settings: FusionSettings) -> list[FusedCandidate]:
        """Every leg's candidates with their contributions, for an order that ranks nothing
        by relevance (recency): in-process, its order unused, so no service call."""
        return fuse(lists, settings)


class FusionClient:
    """The fusion service (recallmesh/services/fusion); the gateway falls back to in-process
    fusion."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.channel = dial_internal(target, "recallmesh.v1.FusionService",
                                     tracing_interceptors("client"))
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
