"""python -m recallmesh.fusion: serve the fusion service."""

from recallmesh.fusion.servicer import FusionApp
from recallmesh.platform.server import run

if __name__ == "__main__":
    run("fusion", FusionApp())
