"""The lexical leg's BM25 index: made after the migrations when the server has pg_textsearch.

`ensure_bm25_index()` runs with every `prepare_database()` (the stack's start, the migrate
job): when pg_textsearch is installed and loaded by the server (recallmesh.shared.textsearch),
it creates the extension and the index `memories_bm25_idx` over the live memories' searchable
text (migration 0017's column lexical_text), once; otherwise it drops an index left by a server
that loaded it, says why, and the lexical leg keeps its SQL BM25 over the postings tables. The
lexical leg reads what was made at its own start (`bm25_engine()`). Why an index and how it is used:
docs/decisions/0018-bm25-index.md.
"""

from __future__ import annotations

import logging
import re
from typing import Any

import psycopg

from recallmesh.migrations import MigrationError
from recallmesh.shared.textsearch import EXTENSION

log = logging.getLogger(__name__)

INDEX_NAME = "memories_bm25_idx"
# The indexed column (migration 0017: the searchable fields in one text), as a query names it.
INDEXED_TEXT = "{m}.lexical_text"
# Soft-deleted memories are left out of the index (a delete sets deleted_at: the new row
# version is not indexed); expiry depends on the time of the query and is a filter.
# The lexical leg's BM25 parameters by default (docs/decisions/0007-bm25-parameters.md; a
# request or RECALLMESH_LEXICAL_BM25_K1 / _B may change them for the leg's own scoring). The index
# orders its candidates with them, so that in a namespace whose statistics are the index's its
# order is the leg's.
BM25_K1 = 0.9
BM25_B = 0.4
_CREATE = f"""CREATE INDEX IF NOT EXISTS {INDEX_NAME} ON memories
    USING bm25 (lexical_text) WITH (text_config = 'english', k1 = {BM25_K1}, b = {BM25_B})
    WHERE deleted_at IS NULL"""
STATE_PARAMS = (EXTENSION, EXTENSION)
_LOCK_KEY = 0x7265_6362  # "recb": one starter builds the index, the others wait for it

# The extension's installed and available versions, whether the server loads it, and whether the
# index is there and valid (None: not there). Parameters: the extension's name, twice. Loaded:
# the library's own setting exists in this session (a preloaded library defines it in every
# session); readable by any role, where shared_preload_libraries needs pg_read_all_settings.
STATE_SQL = f"""SELECT (SELECT installed_version FROM pg_available_extensions WHERE name = %s),
    (SELECT default_version FROM pg_available_extensions WHERE name = %s),
    current_setting('{EXTENSION}.default_limit', true) IS NOT NULL,
    (SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass('{INDEX_NAME}'))"""


def ensure_bm25_index(conn: psycopg.Connection) -> str:
    """Create pg_textsearch and the BM25 index when the server can have them (autocommit
    connection). Returns the engine the lexical leg will find: "pg_textsearch <version>", or
    "sql (<why not>)"."""
    conn.execute("SELECT pg_advisory_lock(%s)", (_LOCK_KEY,))
    try:
        installed, available, loaded, valid = _state(conn)
        if available is None or not loaded:
            if valid is not None:  # left by a server that loaded it: no query could plan
                _drop_unloadable(conn)
            if available is None:
                return f"sql ({EXTENSION} is not installed on this server)"
            return f"sql ({EXTENSION} is installed but not in shared_preload_libraries)"
        if installed is None:
            try:
                conn.execute(f"CREATE EXTENSION IF NOT EXISTS {EXTENSION}")
            except psycopg.errors.InsufficientPrivilege as exc:
                return (f"sql (CREATE EXTENSION {EXTENSION} needs a superuser or the "
                        f"extension declared on the database: {exc.diag.message_primary})")
        if valid is False:  # left invalid by an interrupted build: made again
            conn.execute(f"DROP INDEX IF EXISTS {INDEX_NAME}")
        if not valid:
            log.info("building the lexical leg's BM25 index", extra={"index": INDEX_NAME})
            conn.execute(_CREATE)
        elif stale(conn):
            log.warning("the BM25 index's statistics cover fewer memories than it holds: "
                        "rebuilding it", extra={"index": INDEX_NAME})
            conn.execute(f"REINDEX INDEX {INDEX_NAME}")
        return bm25_engine(conn) or "sql (the index was not made)"
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s)", (_LOCK_KEY,))


def _drop_unloadable(conn: psycopg.Connection) -> None:
    """Drop the index a server that loaded pg_textsearch left, on one that does not load it
    (no query of the table could plan with it). Dropping it needs the library: where even that
    fails, say what to do (the embedded server drops the extension before it stops loading it,
    recallmesh.shared.db)."""
    log.warning("the server does not load pg_textsearch: dropping the BM25 index",
                extra={"index": INDEX_NAME})
    try:
        conn.execute(f"DROP INDEX IF EXISTS {INDEX_NAME}")
    except psycopg.errors.UndefinedFile as exc:
        raise MigrationError(
            f"the BM25 index {INDEX_NAME} was made by a server that loaded {EXTENSION}, which "
            f"this server cannot load ({exc.diag.message_primary}): load {EXTENSION} again, or "
            f"run DROP EXTENSION {EXTENSION} CASCADE on a server that loads it") from None


# The share of the indexed rows the index's corpus statistics may leave uncounted before a start
# rebuilds it (stale()).
STALE_SHARE = 0.1


def stale(conn: psycopg.Connection) -> bool:
    """Whether the index's corpus statistics count fewer than (1 - STALE_SHARE) of the rows it
    indexes. pg_textsearch 1.0 keeps the statistics of what was written since its build in shared
    memory only: after a restart (or a restore) they count what the build counted, none at all
    for an index built over an empty table, whose scores then mean little (or which then finds
    nothing). Rebuilding it counts every row again (docs/decisions/0018-bm25-index.md). The lexical
    leg is right either way: it scores candidates with its own statistics and asks the SQL
    statement when the index finds too few."""
    summary = conn.execute("SELECT bm25_summarize_index(%s)", (INDEX_NAME,)).fetchone()
    found = re.search(r"total_docs:\s*(\d+)", str(summary[0] if summary else ""))
    rows = conn.execute("SELECT count(*) FROM memories WHERE deleted_at IS NULL").fetchone()
    counted, indexed = (int(found.group(1)) if found else 0), int(rows[0] if rows else 0)
    return counted < (1 - STALE_SHARE) * indexed


def bm25_engine(conn: psycopg.Connection) -> str:
    """"pg_textsearch <version>" when the BM25 index is there and valid, else ""."""
    return engine_of(_state(conn))


def engine_of(state: tuple[Any, ...]) -> str:
    """The engine a STATE_SQL row describes: "pg_textsearch <version>" when the extension is
    loaded and the index valid, else ""."""
    installed, _, loaded, valid = state
    return f"{EXTENSION} {installed}" if installed and loaded and valid else ""


def _state(conn: psycopg.Connection) -> tuple[str | None, str | None, bool, bool | None]:
    row = conn.execute(STATE_SQL, STATE_PARAMS).fetchone()
    assert row is not None  # scalar subqueries: always one row
    return row[0], row[1], bool(row[2]), row[3]
