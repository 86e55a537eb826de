"""python -m services.graph: serve the graph leg."""

from services.graph.servicer import GraphApp
from shared.server import run

if __name__ == "__main__":
    run("graph", GraphApp())
