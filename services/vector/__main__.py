"""python -m services.vector: serve the vector leg."""

from services.vector.servicer import VectorApp
from shared.server import run

if __name__ == "__main__":
    run("vector", VectorApp())
