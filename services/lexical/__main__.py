"""python -m services.lexical: serve the lexical leg."""

from services.lexical.servicer import LexicalApp
from shared.server import run

if __name__ == "__main__":
    run("lexical", LexicalApp())
