"""python -m recallmesh.legs.graph: serve the graph leg."""

from recallmesh.legs.graph.servicer import GraphApp
from recallmesh.platform.server import run

if __name__ == "__main__":
    run("graph", GraphApp())
