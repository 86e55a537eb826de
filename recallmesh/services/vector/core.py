"""Vector retrieval: pgvector HNSW (halfvec, cosine) over memory embeddings.

One statement per search, inside its own transaction so the HNSW settings can
be set with `SET LOCAL` semantics (set_config(..., is_local => true)): they
end with the transaction and never leak to another client of a pooled
connection (this also holds behind PgBouncer in transaction mode).
  * hnsw.ef_search = max(configured ef_search, k): the candidate list must
    be at least as long as the answer;
  * hnsw.iterative_scan = relaxed_order: when filters (namespace, category,
    tags, time) discard index hits, the scan continues instead of returning
    fewer than k rows. Relaxed order can return rows slightly out of order,
    so the nearest rows are materialised and re-sorted by (distance, id),
    which also makes ties deterministic.
The plan by namespace size. Left to itself, Postgres's planner searches a namespace of a few
thousand memories without the HNSW index (the namespace index, every distance, a sort): exact,
but linear, several times slower than HNSW at 5,000 memories
(docs/decisions/0008-ef-search-200.md, "The plan by namespace size"). So the leg picks the
plan itself, per search:
  * HNSW, with sorting priced out for the transaction (enable_sort off, so the planner takes
    the index that returns rows in distance order rather than sorting the namespace), when
    the namespace holds more than `exact_max` vectors of the query's model AND they are at
    least MIN_SHARE of the table's rows: the index is shared by every namespace and the
    namespace is a filter on it, so a namespace that is a small share of the table would
    make the iterative scan read about ef_search / share index tuples, past pgvector's
    hnsw.max_scan_tuples (20,000), and come back short;
  * otherwise exact, with index scans off for the transaction (the namespace index still
    finds the rows, as a bitmap scan; HNSW has no bitmap scan and cannot be taken).
Both counts are looked up at most once per COUNT_TTL_S (the namespace's by count(*), kept per
namespace, bounded; the table's from pg_class.reltuples): a namespace that grows past the
threshold moves to HNSW within that time.
A filtered search (Filters) is the same question about fewer vectors: the vectors that pass
the filters are what the iterative scan must find among the table's rows, so they are counted
instead of the namespace's (every search, never kept: filters vary), up to the count that
decides (`_passing_cap`), so the count stops early when the filter passes many. A selective
filter (one user of a thousand) is then searched exactly over the few rows its index finds,
instead of an HNSW scan that reads max_scan_tuples and comes back short
(docs/decisions/0017-smaller-settings-and-limits.md).
Only memories embedded by the query vector's model are compared (vectors of
two models are not comparable, e.g. during a model switch). Sensitive and
deleted memories have no vector (the schema clears it), and the statement
also excludes deleted rows explicitly.
"""

from __future__ import annotations

import math
import time
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from pgvector import HalfVector
from pgvector.psycopg.halfvec import register_halfvec_info
from prometheus_client import Counter
from psycopg.types import TypeInfo

from recallmesh.services.vector.settings import DEFAULT_EF_SEARCH, DEFAULT_EXACT_MAX
from recallmesh.shared.db import Conn
from recallmesh.shared.errors import InvalidArgument
from recallmesh.shared.replicas import ReadSource, as_reads
from recallmesh.wire.filters import Filters, filter_sql, live, not_deleted

EXACT_SEARCHES = Counter(
    "recallmesh_vector_searches_total",
    "Vector searches by plan: exact (a namespace of at most RECALLMESH_VECTOR_EXACT_MAX "
    "vectors) or hnsw.",
    ["plan"],
)


@dataclass(frozen=True)
class VectorHit:
    memory_id: str
    similarity: float  # cosine similarity, 1 - cosine distance
    importance: float = 0.5


COUNT_TTL_S = 30.0  # how long a namespace's vector count is trusted
MAX_SCAN_TUPLES = 20_000  # pgvector's hnsw.max_scan_tuples default (the leg does not set it)
COUNTS_KEPT = 10_000  # namespaces whose count is kept (least recently counted dropped first)
_TABLE_ROWS = "SELECT greatest(reltuples, 0)::bigint FROM pg_class WHERE oid = 'memories'::regclass"

_COUNT = f"""
SELECT count(*) FROM memories
WHERE namespace = %(ns)s AND embedding IS NOT NULL AND embedding_model = %(model)s
  AND {not_deleted()}
"""


def plan_settings(plan: str, ef_search: int, iterative_scan: str,
                  k: int) -> list[tuple[str, str]]:
    """The transaction-local planner settings of a search plan: "exact" or "hnsw"."""
    if plan == "exact":
        return [("enable_indexscan", "off")]
    return [("enable_sort", "off"), ("hnsw.ef_search", str(max(ef_search, k))),
            ("hnsw.iterative_scan", iterative_scan)]


async def apply_settings(conn: Conn, settings: list[tuple[str, str]]) -> None:
    await conn.execute("SELECT " + ", ".join("set_config(%s, %s, true)" for _ in settings),
                       [x for pair in settings for x in pair])


def build_search_sql(filters: Filters) -> tuple[str, dict[str, Any]]:
    """The nearest-neighbour statement and its filter parameters (the plan comes from
    plan_settings).

    Callers add: ns, vector, model, k.
    """
    where_filters, params = filter_sql(filters, alias="m")
    order = "m.embedding <=> %(vector)s::halfvec"
    sql = f"""
WITH nearest AS MATERIALIZED (
    SELECT m.id, m.importance, m.embedding <=> %(vector)s::halfvec AS distance
    FROM memories m
    WHERE m.namespace = %(ns)s AND {live('m')}
      AND m.embedding IS NOT NULL AND m.embedding_model = %(model)s {where_filters}
    ORDER BY {order}
    LIMIT %(k)s
)
SELECT id::text, 1 - distance AS similarity, importance FROM nearest ORDER BY distance, id
"""
    return sql, params


def check_vector(values: Sequence[float], dimension: int) -> np.ndarray:
    """The query vector as float32, or INVALID_ARGUMENT (never a database error)."""
    if len(values) != dimension:
        raise InvalidArgument(
            f"query_vector has {len(values)} dimensions, the stored embeddings have {dimension}"
        )
    vector = np.asarray(values, dtype=np.float64)
    if not np.all(np.isfinite(vector)):
        raise InvalidArgument("query_vector must hold finite numbers")
    norm = float(np.linalg.norm(vector))
    if norm == 0.0 or not math.isfinite(norm):
        raise InvalidArgument("query_vector must not be the zero vector")
    # Cosine ignores scale: normalise, so any finite direction fits halfvec's
    # range (|x| < 65520) and tiny values do not round to a zero vector.
    unit = (vector / norm).astype(np.float16)
    if not np.any(unit):
        raise InvalidArgument("query_vector must not be the zero vector")
    return unit.astype(np.float32)


class VectorRetriever:
    """Runs nearest-neighbour searches over a psycopg AsyncConnectionPool."""

    def __init__(self, reads: ReadSource, dimension: int,
                 ef_search: int = DEFAULT_EF_SEARCH,
                 iterative_scan: str = "relaxed_order", exact_max: int = DEFAULT_EXACT_MAX,
                 clock: Any = time.monotonic) -> None:
        self.reads = as_reads(reads)  # a replica's connections when one is set
        self.dimension = dimension
        self.ef_search = ef_search
        self.iterative_scan = iterative_scan
        self.exact_max = exact_max
        self._clock = clock
        self._counts: OrderedDict[tuple[str, str], tuple[float, int]] = OrderedDict()
        self._table: tuple[float, int] | None = None
        self._halfvec: TypeInfo | None = None  # the halfvec type, looked up once
        self._binary: weakref.WeakSet[Any] = weakref.WeakSet()  # connections that send it

    async def send_binary(self, conn: Conn) -> None:
        """The query vector goes to Postgres as halfvec's binary form (pgvector-python's
        dumper), not as the text '[x,y,...]', which is slow to format on every search
        (decision 0026): registered once per connection, the type looked up once per
        process."""
        if conn in self._binary:
            return
        if self._halfvec is None:
            self._halfvec = await TypeInfo.fetch(conn, "halfvec")
            if self._halfvec is None:
                raise RuntimeError("the halfvec type is missing: is pgvector >= 0.7 installed?")
        register_halfvec_info(conn, self._halfvec)
        self._binary.add(conn)

    def min_share(self, k: int) -> float:
        """The smallest share of the table a namespace searched through HNSW may be: its
        iterative scan reads about ef_search / share tuples, kept under half of
        max_scan_tuples."""
        return 2 * max(self.ef_search, k) / MAX_SCAN_TUPLES

    async def plan(self, conn: Conn, namespace: str, model: str, k: int,
                   filters: Filters | None = None) -> str:
        """"exact" or "hnsw" for a search of `namespace` (the module docstring says why)."""
        if filters is not None and not filters.empty:
            rows = await self.table_rows(conn)
            vectors = await self.vectors_passing(conn, namespace, model, filters,
                                                 self._passing_cap(rows, k))
        else:
            vectors = await self.vectors_in(conn, namespace, model)
        if vectors <= self.exact_max:
            return "exact"
        rows = await self.table_rows(conn)
        return "hnsw" if rows <= 0 or vectors / rows >= self.min_share(k) else "exact"

    def _passing_cap(self, rows: int, k: int) -> int:
        """Past this many passing vectors the plan is HNSW whatever the exact count."""
        return max(self.exact_max, math.ceil(self.min_share(k) * rows)) + 1

    async def vectors_passing(self, conn: Conn, namespace: str, model: str, filters: Filters,
                              cap: int) -> int:
        """The namespace's vectors of `model` that pass `filters`, counted up to `cap`."""
        where_filters, params = filter_sql(filters, alias="m")
        cur = await conn.execute(
            "SELECT count(*) FROM (SELECT 1 FROM memories m WHERE m.namespace = %(ns)s "
            "AND m.embedding IS NOT NULL AND m.embedding_model = %(model)s "
            f"AND {live('m')} "
            f"{where_filters} LIMIT %(cap)s) passing",
            params | {"ns": namespace, "model": model, "cap": cap})
        row = await cur.fetchone()
        return int(row[0]) if row else 0

    async def table_rows(self, conn: Conn) -> int:
        """memories' row count as Postgres estimates it, read at most once per COUNT_TTL_S."""
        now = self._clock()
        if self._table is not None and now - self._table[0] < COUNT_TTL_S:
            return self._table[1]
        cur = await conn.execute(_TABLE_ROWS)
        row = await cur.fetchone()
        self._table = (now, int(row[0]) if row else 0)
        return self._table[1]

    async def vectors_in(self, conn: Conn, namespace: str, model: str) -> int:
        """The namespace's vectors of `model`, counted at most once per COUNT_TTL_S."""
        key = (namespace, model)
        now = self._clock()
        kept = self._counts.get(key)
        if kept is not None and now - kept[0] < COUNT_TTL_S:
            return kept[1]
        cur = await conn.execute(_COUNT, {"ns": namespace, "model": model})
        row = await cur.fetchone()
        count = int(row[0]) if row else 0
        self._counts[key] = (now, count)
        self._counts.move_to_end(key)
        while len(self._counts) > COUNTS_KEPT:
            self._counts.popitem(last=False)
        return count

    async def search(
        self,
        namespace: str,
        vector: Sequence[float],
        model: str,
        k: int,
        filters: Filters | None = None,
    ) -> list[VectorHit]:
        query_vector = check_vector(vector, self.dimension)

        async def search_on(conn: Conn) -> list[Any]:
            await self.send_binary(conn)
            async with conn.transaction():
                plan = await self.plan(conn, namespace, model, k, filters)
                EXACT_SEARCHES.labels(plan).inc()
                await apply_settings(conn, plan_settings(plan, self.ef_search,
                                                         self.iterative_scan, k))
                sql, params = build_search_sql(filters or Filters())
                params.update(ns=namespace, vector=HalfVector(query_vector), model=model,
                              k=k)
                cur = await conn.execute(sql, params)
                rows: list[Any] = await cur.fetchall()
                return rows

        rows = await self.reads.run(search_on)
        return [VectorHit(str(r[0]), float(r[1]), float(r[2])) for r in rows]
