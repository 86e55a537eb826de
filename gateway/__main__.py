"""python -m gateway: serve the public MemoryService."""

from gateway.servicer import GatewayApp
from shared.server import run

if __name__ == "__main__":
    run("gateway", GatewayApp())
