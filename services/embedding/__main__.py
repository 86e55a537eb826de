"""python -m services.embedding: serve the text-embedding model."""

from services.embedding.servicer import EmbeddingApp
from shared.server import run

if __name__ == "__main__":
    run("embedding", EmbeddingApp())
