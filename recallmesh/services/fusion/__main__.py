"""python -m recallmesh.services.fusion: serve the fusion service."""

from recallmesh.auth.interceptors import internal_guard
from recallmesh.services.fusion.servicer import FusionApp
from recallmesh.shared.server import run

if __name__ == "__main__":
    run("fusion", FusionApp(), internal_guard)
