"""The probes of the gateway's HTTP front ends (the MCP server's HTTP mode, the console):
`/healthz` (the process serves) and `/readyz` (the gateway it calls reports SERVING on gRPC
health), for Kubernetes and load balancers. Neither needs a
credential: gRPC health is open on the gateway, and the probes reveal nothing else."""

from __future__ import annotations

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from recallmesh.wire.channel import dial

READY_TIMEOUT_S = 1.0


class GatewayHealth:
    def __init__(self, target: str) -> None:
        self.target = target
        self.channel = dial(target)  # TLS exactly as the tools' clients dial
        self.stub = health_pb2_grpc.HealthStub(self.channel)

    async def unready(self) -> str:
        """Why the gateway cannot take calls now; "" when it reports SERVING."""
        try:
            reply = await self.stub.Check(health_pb2.HealthCheckRequest(service=""),
                                          timeout=READY_TIMEOUT_S)
        except grpc.aio.AioRpcError as exc:
            return f"gateway {self.target}: {exc.code().name}"
        if reply.status != health_pb2.HealthCheckResponse.SERVING:
            status = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
            return f"gateway {self.target}: {status}"
        return ""

    async def healthz(self, request: Request) -> Response:
        return PlainTextResponse("ok\n")

    async def readyz(self, request: Request) -> Response:
        why = await self.unready()
        return PlainTextResponse(f"{why}\n", status_code=503) if why \
            else PlainTextResponse("ready\n")

    async def aclose(self) -> None:
        await self.channel.close()
