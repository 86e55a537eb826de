"""python -m recallmesh.services.embedding: serve the text-embedding model."""

from recallmesh.auth.interceptors import internal_guard
from recallmesh.services.embedding.servicer import EmbeddingApp
from recallmesh.shared.server import run

if __name__ == "__main__":
    run("embedding", EmbeddingApp(), internal_guard)
