"""python -m recallmesh.legs.vector: serve the vector leg."""

from recallmesh.legs.vector.servicer import VectorApp
from recallmesh.platform.server import run

if __name__ == "__main__":
    run("vector", VectorApp())
