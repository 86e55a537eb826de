"""python -m recallmesh.legs.lexical: serve the lexical leg."""

from recallmesh.legs.lexical.servicer import LexicalApp
from recallmesh.platform.server import run

if __name__ == "__main__":
    run("lexical", LexicalApp())
