"""gRPC adapter of the fusion service: FusionService.Fuse over
recallmesh.services.fusion.core.fuse."""

from __future__ import annotations

import grpc

from recallmesh.services.fusion.core import fuse
from recallmesh.shared.errors import InvalidArgument
from recallmesh.v1 import fusion_pb2, fusion_pb2_grpc
from recallmesh.wire.fusion import hits_to_proto, lists_from_proto, settings_from_proto


class FusionServicer(fusion_pb2_grpc.FusionServiceServicer):
    async def Fuse(
        self, request: fusion_pb2.FuseRequest, context: grpc.aio.ServicerContext,
    ) -> fusion_pb2.FuseResponse:
        if request.limit < 0:
            raise InvalidArgument(f"limit must be >= 0, got {request.limit}")
        lists = lists_from_proto(request.lists)
        settings = settings_from_proto(request.settings)
        hits = fuse(lists, settings)
        if request.limit:
            hits = hits[: request.limit]
        response = fusion_pb2.FuseResponse()
        hits_to_proto(hits, response)
        return response


class FusionApp:
    service_names: tuple[str, ...] = (
        fusion_pb2.DESCRIPTOR.services_by_name["FusionService"].full_name,)

    def __init__(self) -> None:
        self.servicer = FusionServicer()

    async def start(self) -> None:
        pass

    def register(self, server: grpc.aio.Server) -> None:
        fusion_pb2_grpc.add_FusionServiceServicer_to_server(self.servicer, server)

    async def stop(self) -> None:
        pass
