"""The ts_rank ranking: Postgres full-text search, the "current system" baseline.

Faithful to the system recallmesh is measured against:
  1. AND-match: `search_vector @@ plainto_tsquery('english', query)`;
  2. if that yields fewer than k rows, broaden to OR-matching of the same
     lexemes, admitting only rows whose OR ts_rank reaches `or_min_rank`;
  3. AND hits always rank before OR-only hits; within each tier the order is
       relevance:  ts_rank * 0.7 + importance * 0.3
       importance: ts_rank * 0.4 + importance * 0.6
       recency:    created_at descending
     with the memory id as the final, deterministic tie-break.
Scoped to one namespace, soft-deleted rows excluded, optional filters applied; a sensitive
memory only when the question asks for what it holds (sensitive.py). One statement
(build_search_sql); its rows are rows.LexicalRow.
"""

from __future__ import annotations

from typing import Any

from recallmesh.policy import SortBy
from recallmesh.services.lexical.sensitive import CONTENT_LEXEMES, asks_for_secret
from recallmesh.wire.filters import Filters, filter_sql, live

# (ts_rank weight, importance weight) of the blended score per sort mode.
BLEND = {"relevance": (0.7, 0.3), "importance": (0.4, 0.6), "recency": (0.7, 0.3)}
# The query as an AND tsquery (every term) and its OR broadening (any term), for ts_rank.
_QUERY_TIERS = """WITH q AS (
    SELECT plainto_tsquery('english', %(query)s) AS and_q
), qq AS (
    SELECT and_q, replace(and_q::text, ' & ', ' | ')::tsquery AS or_q FROM q
)"""


def build_search_sql(filters: Filters, sort_by: SortBy) -> tuple[str, dict[str, Any]]:
    """The one statement behind a ts_rank search, and its filter parameters.

    Callers add: ns, query, k, or_min_rank.
    """
    if sort_by not in BLEND:
        raise ValueError(f"unknown sort_by {sort_by!r}")
    w_rank, w_importance = BLEND[sort_by]
    score = f"(rank * {w_rank} + importance * {w_importance})"
    order = "created_at DESC, id" if sort_by == "recency" else f"{score} DESC, id"
    where_filters, params = filter_sql(filters, alias="m")
    secret = asks_for_secret("m.search_vector", CONTENT_LEXEMES)
    where_filters += f" AND (NOT m.is_sensitive OR {secret})"
    sql = f"""
{_QUERY_TIERS}, and_hits AS (
    SELECT m.id, ts_rank(m.search_vector, qq.and_q) AS rank, m.importance, m.created_at,
           0 AS tier, m.is_sensitive
    FROM memories m, qq
    WHERE m.namespace = %(ns)s AND {live('m')}
      AND m.search_vector @@ qq.and_q {where_filters}
), and_top AS (
    SELECT * FROM and_hits ORDER BY {order} LIMIT %(k)s
), or_top AS (
    SELECT * FROM (
        SELECT m.id, ts_rank(m.search_vector, qq.or_q) AS rank, m.importance, m.created_at,
               1 AS tier, m.is_sensitive
        FROM memories m, qq
        WHERE (SELECT count(*) FROM and_top) < %(k)s
          AND m.namespace = %(ns)s AND {live('m')}
          AND m.search_vector @@ qq.or_q
          AND NOT (m.search_vector @@ qq.and_q) {where_filters}
    ) broadened
    WHERE rank >= %(or_min_rank)s
    ORDER BY {order} LIMIT %(k)s
)
SELECT id::text, {score} AS score, rank, tier, importance, NULL::float8 AS scale, is_sensitive
FROM (SELECT * FROM and_top UNION ALL SELECT * FROM or_top) hits
ORDER BY tier, {order}
LIMIT %(k)s
"""
    return sql, params
