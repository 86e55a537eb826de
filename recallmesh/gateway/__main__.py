"""python -m recallmesh.gateway: serve the public MemoryService."""

from recallmesh.auth.interceptors import internal_guard
from recallmesh.gateway.servicer import GatewayApp
from recallmesh.shared.server import run

if __name__ == "__main__":
    run("gateway", GatewayApp(), internal_guard)
