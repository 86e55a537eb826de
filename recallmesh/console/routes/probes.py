"""The probes: /healthz (the process answers) and /readyz (the gateway answers), by the
console's GatewayHealth."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from recallmesh.console.state import console_of


async def healthz(request: Request) -> Response:
    return await console_of(request).health.healthz(request)


async def readyz(request: Request) -> Response:
    return await console_of(request).health.readyz(request)
