"""python -m recallmesh.services.vector: serve the vector leg."""

from recallmesh.auth.interceptors import internal_guard
from recallmesh.services.vector.servicer import VectorApp
from recallmesh.shared.server import run

if __name__ == "__main__":
    run("vector", VectorApp(), internal_guard)
