"""python -m recallmesh.services.graph: serve the graph leg."""

from recallmesh.auth.interceptors import internal_guard
from recallmesh.services.graph.servicer import GraphApp
from recallmesh.shared.server import run

if __name__ == "__main__":
    run("graph", GraphApp(), internal_guard)
