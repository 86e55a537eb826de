"""The BM25 statement over the pg_textsearch index (build_bm25_index_sql;
docs/decisions/0018-bm25-index.md): the index's scan finds the candidates, which are scored
exactly as bm25.py scores them (scoring.py); when its answer may be short (`complete`), the leg
asks bm25.build_bm25_sql instead. `index_query`: the text the index is asked with. Its rows are
rows.LexicalRow, with the candidates and table_rows columns.
"""

from __future__ import annotations

from typing import Any

from recallmesh.migrations.bm25_index import INDEX_NAME, INDEXED_TEXT
from recallmesh.policy import SortBy
from recallmesh.services.lexical.rows import LexicalRow
from recallmesh.services.lexical.scoring import (
    CONTRIBUTION,
    CORRECTED_IDF,
    IDF,
    LANGUAGE_PRIOR,
    TERMS_STATS,
)
from recallmesh.services.lexical.sensitive import CONTENT_LEXEMES, asks_for_secret
from recallmesh.wire.filters import Filters, filter_sql, live

# Candidates the index statement rescores, as a multiple of k (docs/decisions/0018-bm25-index.md).
INDEX_DEPTH_FACTOR = 2


def build_bm25_index_sql(filters: Filters, sort_by: SortBy, corrected: bool = False
                         ) -> tuple[str, dict[str, Any]]:
    """The BM25 statement over the pg_textsearch index (docs/decisions/0018-bm25-index.md), for
    relevance and importance; its parameters (filters). Callers add: ns, query, index_query, k,
    depth, k1, b.

    The index's scan hands memories out best index-wide BM25 score first; every condition a
    memory must meet (the namespace, live, the filters, a sensitive memory only when asked for)
    is checked on each memory the scan hands out, and the scan goes on (pg_textsearch doubles
    its internal limit) until `depth` memories have passed or none is left. Those candidates
    are then scored exactly as `build_bm25_sql` scores them, from their own search vectors with
    the namespace's statistics: the same score for the same memory, to the last bit, whichever
    statement found it. The answer's last columns count the candidates and the table's rows (the
    planner's estimate): fewer candidates than `depth` means the scan ran to its end, having
    found every memory that may be returned (the answer is then the SQL statement's), or that
    pg_textsearch's cap on the memories one scan scores (INDEX_SCAN_CAP) ended it, which a table
    of fewer rows cannot reach (`complete`); when it may have, the caller asks `build_bm25_sql`.
    """
    if sort_by not in ("relevance", "importance"):
        raise ValueError(f"the index statement orders by score: not {sort_by!r}")
    final_order = ("importance DESC, score DESC, id" if sort_by == "importance"
                   else "score DESC, importance DESC, id")
    where_filters, params = filter_sql(filters, alias="m")
    params["language_prior"] = LANGUAGE_PRIOR
    exact = " AND NOT EXISTS (SELECT FROM spelled)" if corrected else ""
    terms_idf = CORRECTED_IDF if corrected else IDF
    secret = asks_for_secret("m.search_vector", "(SELECT lexemes FROM asked)::text[]")
    sql = f"""
{TERMS_STATS}{terms_idf}, asked AS MATERIALIZED (
    SELECT {CONTENT_LEXEMES} AS lexemes
), candidates AS MATERIALIZED (
    SELECT m.id, m.importance, m.is_sensitive, m.search_vector,
           recallmesh_tsvector_length(m.search_vector) AS dl
    FROM memories m
    WHERE m.namespace = %(ns)s AND {live('m')} {where_filters}
      AND (NOT m.is_sensitive OR {secret})
    ORDER BY {INDEXED_TEXT.format(m="m")} <@> to_bm25query(%(index_query)s, '{INDEX_NAME}')
    LIMIT %(depth)s
), scored AS (
    SELECT c.id, c.importance, c.is_sensitive, sum({CONTRIBUTION}) AS score,
           count(*) AS matched
    FROM candidates c
    CROSS JOIN stats s
    CROSS JOIN LATERAL (  -- the postings' tf and dl, read from the memory's own vector
        SELECT u.lexeme, coalesce(array_length(u.positions, 1), 1) AS tf, c.dl
        FROM unnest(c.search_vector) u
    ) p
    JOIN idf i ON i.lexeme = p.lexeme
    GROUP BY c.id, c.importance, c.is_sensitive
), hits AS (
    SELECT id, importance, is_sensitive, score,
           matched = (SELECT count(*) FROM terms){exact} AS all_terms
    FROM scored
)
SELECT id::text, score, score AS rank, CASE WHEN all_terms THEN 0 ELSE 1 END AS tier,
       importance, (SELECT sum(idf) FROM idf) AS scale, is_sensitive,
       (SELECT count(*) FROM candidates) AS candidates,
       (SELECT reltuples FROM pg_class WHERE oid = 'memories'::regclass) AS table_rows
FROM (SELECT * FROM hits ORDER BY score DESC, importance DESC, id LIMIT %(k)s) top
ORDER BY {final_order}
"""
    return sql, params


# pg_textsearch 1.0 scores at most this many memories in one scan (TP_MAX_QUERY_LIMIT).
INDEX_SCAN_CAP = 100_000


def complete(row: LexicalRow, depth: int) -> bool:
    """Whether an answer row of build_bm25_index_sql comes from enough candidates: `depth` of
    them, or fewer from a scan that ran to its end (the table holds fewer rows than the index's
    cap; an estimate of -1, a table never analysed, is not taken for it)."""
    if row.candidates is None or row.table_rows is None:
        raise ValueError("not an answer row of build_bm25_index_sql")
    candidates, table_rows = int(row.candidates), float(row.table_rows)
    return candidates >= depth or 0 <= table_rows < INDEX_SCAN_CAP


def index_query(terms: str, corrections: dict[str, Any]) -> str:
    """The text the index is asked with: the query's terms, and the corrections of misspelt ones
    (spelling.SPELLED) as words of their own, so that the scan finds the memories holding them."""
    return " ".join([terms, *corrections.get("spelled_lexemes", [])])
