"""The BM25 index's pure rules: where the embedded server finds pg_textsearch, when the index
statement's candidates suffice, what the index is asked (docs/decisions/0018-bm25-index.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from recallmesh.services.lexical.bm25_index import INDEX_SCAN_CAP, complete, index_query
from recallmesh.services.lexical.rows import LexicalRow
from recallmesh.shared import textsearch


def row(candidates: int, table_rows: float) -> LexicalRow:
    return LexicalRow(id="id", score=1.0, rank=1.0, tier=0, importance=0.5, scale=2.0,
                      is_sensitive=False, candidates=candidates, table_rows=table_rows)


@pytest.mark.parametrize(("candidates", "table_rows", "enough"), [
    (100, 5e6, True),  # depth reached: whatever the table
    (99, 5e6, False),  # the cap may have ended the scan
    (3, 1000, True),  # a scan that ran to its end in a small table: every match
    (0, INDEX_SCAN_CAP - 1, True),
    (3, INDEX_SCAN_CAP, False),
    (3, -1, False),  # never analysed: the size is unknown
])
def test_complete(candidates: int, table_rows: float, enough: bool) -> None:
    assert complete(row(candidates, table_rows), 100) is enough


def test_complete_reads_only_the_index_statements_rows() -> None:
    """A row without the index statement's counts (the other statements') is refused, not
    taken for a complete answer."""
    with pytest.raises(ValueError):
        complete(row(3, 1000)._replace(candidates=None, table_rows=None), 100)


def test_index_query_adds_the_corrections() -> None:
    assert index_query("violnist lessons", {}) == "violnist lessons"
    assert index_query("violnist lessons", {"spelled_lexemes": ["violinist"]}) == (
        "violnist lessons violinist")


def test_bundled_finds_the_wheel_or_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                            ) -> None:
    root = textsearch.bundled()
    if root is not None:  # the embedded extra is installed: its files are there
        assert (root / "lib" / "postgresql" / "pg_textsearch.so").is_file()
    monkeypatch.setattr(textsearch, "_PACKAGE", "no_such_package_here")
    assert textsearch.bundled() is None


def test_embedded_settings_name_the_servers_own_folders_first() -> None:
    settings = textsearch.embedded_settings(Path("/x/pginstall"))
    assert settings == {
        "shared_preload_libraries": "/x/pginstall/lib/postgresql/pg_textsearch",
        "extension_control_path": "$system:/x/pginstall/share/postgresql",
        "dynamic_library_path": "$libdir:/x/pginstall/lib/postgresql",
    }


def test_the_start_says_where_bm25_comes_from(monkeypatch: pytest.MonkeyPatch) -> None:
    from recallmesh.cli.stack import bm25_source

    monkeypatch.delenv("RECALLMESH_LEXICAL_BM25_INDEX", raising=False)
    assert bm25_source("pg_textsearch 1.0.0").startswith("the pg_textsearch 1.0.0 index")
    assert bm25_source("sql (pg_textsearch is not installed on this server)") == (
        "the SQL statements over the postings (pg_textsearch is not installed on this server)")
    monkeypatch.setenv("RECALLMESH_LEXICAL_BM25_INDEX", "off")
    assert "not used" in bm25_source("pg_textsearch 1.0.0")
