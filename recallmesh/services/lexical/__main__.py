"""python -m recallmesh.services.lexical: serve the lexical leg."""

from recallmesh.auth.interceptors import internal_guard
from recallmesh.services.lexical.servicer import LexicalApp
from recallmesh.shared.server import run

if __name__ == "__main__":
    run("lexical", LexicalApp(), internal_guard)
