"""The answer row of every lexical statement, by name.

build_search_sql (ts_rank.py), build_bm25_sql (bm25.py) and build_bm25_index_sql
(bm25_index.py) each end in one SELECT whose columns are LexicalRow's fields, in their order
and by their names (tests/unit/test_lexical_rows.py checks every variant of each statement);
the leg reads their rows by column name into LexicalRow (`fetch`), never by position.
"""

from __future__ import annotations

from typing import Any, NamedTuple, TypeVar

from psycopg.rows import class_row

from recallmesh.shared.db import Conn

Row = TypeVar("Row")


class LexicalRow(NamedTuple):
    id: str  # the memory's id, as text
    score: float  # the ranking's score: the ts_rank tier's blend, or BM25
    rank: float  # ts_rank, or the BM25 score again
    tier: int  # 0: every query term matched (as written), 1: some
    importance: float
    scale: float | None  # BM25: the query terms' summed idf; NULL for ts_rank
    is_sensitive: bool
    # The BM25 index statement's only: how many candidates its scan found, and the planner's
    # estimate of the table's rows (bm25_index.complete).
    candidates: int | None = None
    table_rows: float | None = None


# The columns every lexical statement selects (the index statement adds the rest).
HIT_COLUMNS = tuple(f for f in LexicalRow._fields if f not in LexicalRow._field_defaults)


async def fetch(conn: Conn, row: type[Row], sql: str, params: dict[str, Any]) -> list[Row]:
    """The rows of one statement on `conn` (a psycopg async connection), each a `row` (LexicalRow,
    or spelling.Prepared) read by column name: a column the row type lacks is an error, never a
    value read into another field."""
    async with conn.cursor(row_factory=class_row(row)) as cur:
        await cur.execute(sql, params)
        rows: list[Row] = await cur.fetchall()
        return rows
