"""The vector leg's plan by namespace size and share of the table (services/vector/core.py)."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest
from psycopg_pool import AsyncConnectionPool

from recallmesh.services.vector.core import (
    COUNT_TTL_S,
    MAX_SCAN_TUPLES,
    VectorRetriever,
    plan_settings,
)
from recallmesh.shared.db import Conn as DbConn


class Rows:
    def __init__(self, value: int) -> None:
        self.value = value

    async def fetchone(self) -> tuple[int]:
        return (self.value,)


class Conn:
    """Answers the two counts the plan reads; counts how often each was asked."""

    passing: int  # the vectors that pass a filter, set by the test that plans with one
    def __init__(self, namespace_vectors: int, table_rows: int) -> None:
        self.namespace_vectors, self.table_rows = namespace_vectors, table_rows
        self.asked: list[str] = []

    async def execute(self, sql: str, params: Any = None) -> Rows:
        kind = ("table" if "pg_class" in sql else "passing" if "LIMIT %(cap)s" in sql
                else "namespace")
        self.asked.append(kind)
        if kind == "passing":
            self.cap = params["cap"]
            return Rows(min(self.passing, params["cap"]))
        return Rows(self.table_rows if kind == "table" else self.namespace_vectors)


# The plan tests never connect: the retriever is built over no pool.
NO_DATABASE = cast(AsyncConnectionPool, None)


def as_conn(fake: Conn) -> DbConn:
    """The fake as the connection type the plan takes (it answers the two counts only)."""
    return cast(DbConn, fake)


def plan(namespace_vectors: int, table_rows: int, exact_max: int = 1000, k: int = 10) -> str:
    retriever = VectorRetriever(NO_DATABASE, 4, ef_search=200, exact_max=exact_max)
    return asyncio.run(retriever.plan(as_conn(Conn(namespace_vectors, table_rows)), "n", "m", k))


@pytest.mark.parametrize(("vectors", "rows", "expected"), [
    (10, 10, "exact"),            # small: exact whatever its share
    (1000, 1000, "exact"),        # at the threshold
    (1001, 1001, "hnsw"),         # above it, the whole table
    (5000, 1_000_000, "exact"),   # a 0.5% share: HNSW's filtered scan would come back short
    (20_000, 1_000_000, "hnsw"),  # 2%: 200 / 0.02 = 10,000 tuples, half of max_scan_tuples
    (5000, 0, "hnsw"),            # a table never analysed: its size unknown
])
def test_plan_by_size_and_share(vectors: int, rows: int, expected: str) -> None:
    assert plan(vectors, rows) == expected


def test_min_share_follows_ef_search_and_k() -> None:
    r = VectorRetriever(NO_DATABASE, 4, ef_search=200)
    assert r.min_share(10) == 2 * 200 / MAX_SCAN_TUPLES
    assert r.min_share(500) == 2 * 500 / MAX_SCAN_TUPLES


def test_counts_are_read_once_per_ttl() -> None:
    now = [0.0]
    retriever = VectorRetriever(NO_DATABASE, 4, exact_max=10, clock=lambda: now[0])
    conn = Conn(50, 100)
    for _ in range(3):
        asyncio.run(retriever.plan(as_conn(conn), "n", "m", 10))
    assert conn.asked == ["namespace", "table"]
    now[0] = COUNT_TTL_S + 1
    asyncio.run(retriever.plan(as_conn(conn), "n", "m", 10))
    assert conn.asked == ["namespace", "table", "namespace", "table"]


def test_plan_settings() -> None:
    assert plan_settings("exact", 200, "relaxed_order", 10) == [("enable_indexscan", "off")]
    assert plan_settings("hnsw", 200, "relaxed_order", 500) == [
        ("enable_sort", "off"), ("hnsw.ef_search", "500"),
        ("hnsw.iterative_scan", "relaxed_order")]


@pytest.mark.parametrize(("passing", "expected"), [
    (100, "exact"),        # one user of a thousand: its few rows, exactly
    (5000, "exact"),       # 0.5 % of the table: HNSW's filtered scan would come back short
    (50_000, "hnsw"),      # 5 %: as a namespace of that share
])
def test_a_filtered_search_plans_on_the_vectors_that_pass(passing: int, expected: str) -> None:
    from recallmesh.wire.filters import Filters

    retriever = VectorRetriever(NO_DATABASE, 4, ef_search=200, exact_max=1000)
    conn = Conn(1_000_000, 1_000_000)
    conn.passing = passing
    chosen = asyncio.run(retriever.plan(as_conn(conn), "n", "m", 10, Filters(tags=("a",))))
    assert chosen == expected and "namespace" not in conn.asked
    assert conn.cap == 2 * 200 * 1_000_000 // MAX_SCAN_TUPLES + 1  # counting stops there
