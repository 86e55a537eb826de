"""python -m recallmesh.services.fusion: serve the fusion service."""

from recallmesh.services.fusion.servicer import FusionApp
from recallmesh.shared.server import run

if __name__ == "__main__":
    run("fusion", FusionApp())
