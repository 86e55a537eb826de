"""python -m recallmesh.services.indexer: run the embedding indexer."""

from recallmesh.auth.interceptors import internal_guard
from recallmesh.services.indexer.servicer import IndexerApp
from recallmesh.shared.server import run

if __name__ == "__main__":
    run("indexer", IndexerApp(), internal_guard)
