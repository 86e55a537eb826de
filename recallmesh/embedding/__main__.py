"""python -m recallmesh.embedding: serve the text-embedding model."""

from recallmesh.embedding.servicer import EmbeddingApp
from recallmesh.platform.server import run

if __name__ == "__main__":
    run("embedding", EmbeddingApp())
