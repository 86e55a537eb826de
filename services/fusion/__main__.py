"""python -m services.fusion: serve the fusion service."""

from services.fusion.servicer import FusionApp
from shared.server import run

if __name__ == "__main__":
    run("fusion", FusionApp())
