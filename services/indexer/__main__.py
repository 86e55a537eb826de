"""python -m services.indexer: run the embedding indexer."""

from services.indexer.servicer import IndexerApp
from shared.server import run

if __name__ == "__main__":
    run("indexer", IndexerApp())
