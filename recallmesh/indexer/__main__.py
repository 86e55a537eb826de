"""python -m recallmesh.indexer: run the embedding indexer."""

from recallmesh.indexer.servicer import IndexerApp
from recallmesh.platform.server import run

if __name__ == "__main__":
    run("indexer", IndexerApp())
