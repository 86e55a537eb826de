"""The BM25 statement over the postings (build_bm25_sql): every memory matching any query lexeme
(OR), scored from the postings of the query's own terms (memory, tf, dl per lexeme,
recallmesh/migrations/0006_bm25_postings.sql) instead of the memories' whole vectors, by the
formula and term weights of scoring.py.

Hits are ordered by that score (no AND tier), then importance, then id (sort_by importance: the
top k by score, most important first; recency: the newest matches); the tier says whether every
term matched. Each answer also gives the query's score scale, sum over its lexemes of idf(t):
what a memory holding every term once at average length scores (calibrated fusion). A sensitive
memory is returned only when the question asks for what it holds (sensitive.py). When the
query's terms have many postings (PRUNE_MIN_POSTINGS), relevance and importance run a pruned
statement that returns the same rows (_pruned_scores; docs/decisions/0003-bm25-maxscore.md): the
commonest terms, which cannot lift a memory into the k best on their own, are summed only for
the memories the rarer terms make candidates. Its rows are rows.LexicalRow.
"""

from __future__ import annotations

from typing import Any

from recallmesh.policy import SortBy
from recallmesh.services.lexical.scoring import (
    CONTRIBUTION,
    CORRECTED_IDF,
    IDF,
    LANGUAGE_PRIOR,
    TERMS_STATS,
)
from recallmesh.services.lexical.sensitive import CONTENT_LEXEMES, asks_for_secret
from recallmesh.services.lexical.ts_rank import BLEND
from recallmesh.wire.filters import Filters, filter_sql, live

# The pruned statement costs more than the full one where there is little to prune (a small
# namespace; docs/decisions/0003-bm25-maxscore.md has the measurement); it is run when the
# query's terms have at least this many postings (a common-word question at 100,000 memories
# and up), the full one otherwise. Both return the same rows.
PRUNE_MIN_POSTINGS = 50000
_NO_CUTOFF = "'-Infinity'::float8"  # a cut-off every score passes
# A filter passing at most this many memories of the namespace is applied before the lookups
# (build_bm25_sql).
PASSING_CAP = 5000
# The best scores are looked up first among this many times k of them (a bounded top-N sort);
# only when fewer than k of those may be returned are all scores sorted.
_FIRST_LOOKUPS = 4


def _kth_passing(source: str, lookup: str) -> str:
    """The k-th best score in `source` (memory_id, score) among memories that may be returned,
    looking them up best first only until k pass; -Infinity when fewer than k do."""
    def kth(limit: str, fewer: str) -> str:
        return f"""(
        SELECT CASE WHEN count(*) < %(k)s THEN {fewer} ELSE min(score) END
        FROM (SELECT sc.score FROM (SELECT * FROM {source} ORDER BY score DESC {limit}) sc
              {lookup}
              LIMIT %(k)s) AS passing)"""
    # coalesce runs the second, full sort only when the first finds fewer than k passing.
    first = kth(f"LIMIT %(k)s * {_FIRST_LOOKUPS}", "NULL")
    return f"coalesce({first}, {kth('', _NO_CUTOFF)})"



# The postings of term `i` (a row of idf or ranked) beside the namespace's stats `s`.
_POSTINGS = """CROSS JOIN stats s
    CROSS JOIN LATERAL (
        SELECT memory_id, tf, dl FROM memory_lexemes
        WHERE namespace = %(ns)s AND lexeme = i.lexeme
        OFFSET 0  -- keeps the lookup from being flattened into a join the planner reorders
    ) p"""

# Every posting of every query term, summed per memory: the memories matching any term, their
# BM25 scores and how many terms each matched.
_FULL_SCORES = f""", scored AS MATERIALIZED (
    -- Postings are read term by term through the (namespace, lexeme) key, whatever the
    -- planner's statistics say: a namespace it has no statistics for yet (a bulk load before
    -- ANALYZE) was otherwise planned as one scan of the whole namespace's postings joined to
    -- the terms afterwards: seconds instead of milliseconds
    -- (docs/decisions/0017-smaller-settings-and-limits.md).
    SELECT p.memory_id, sum({CONTRIBUTION}) AS score, count(*) AS matched
    FROM idf i
    {_POSTINGS}
    GROUP BY p.memory_id
)"""

# A term's BM25 contribution idf * tf (k1 + 1) / (tf + k1 (1 - b + b dl / avgdl)) is at most
# idf (k1 + 1) for every tf, dl, k1 >= 0 and 0 <= b <= 1 (reached only where k1 (1 - b + b dl /
# avgdl) is 0); the bound is raised by more than CONTRIBUTION's rounding (2^-37) and a millionth
# of a millionth, so that no sum of contributions exceeds the sum of their bounds.
_BOUND = "(%(k1)s + 1) * (1 + 1e-12) + 1e-9"
# The rarest terms, read first: the rarest always, then rarer ones while their postings stay
# under _SEED_POSTINGS.
_SEED_POSTINGS = 20000


def _pruned_scores(lookup: str) -> str:
    """The scored CTE of `_FULL_SCORES` for the memories that can be among the k best, exactly
    (MaxScore, Turtle and Flood 1995): the commonest terms' postings are summed only for the
    memories that the other terms make candidates, never aggregated for every memory holding
    them (the aggregation, not the reading, is most of a common term's cost; looking postings up
    one by one by key costs more than reading them: docs/decisions/0003-bm25-maxscore.md).

    1. theta: a score the k-th best reaches. The rarest terms' postings (_SEED_POSTINGS) are
       summed per memory; those sums are lower bounds of the memories' scores (no share is
       negative), so the k-th best of them among memories that may be returned (`lookup`; not
       sensitive: their score is cut afterwards) is at most the k-th best score of the answer.
       -Infinity when fewer than k pass, or when a term's idf is negative (statistics out of
       step): nothing is then skipped.
    2. The commonest terms whose bounds sum below theta are skipped: a memory holding only them
       scores below theta and cannot be among the k best, whatever the ties. The other terms'
       postings are summed per memory (partial scores).
    3. A memory whose partial score plus the skipped terms' bounds is below theta cannot be
       among the k best either. The rest are candidates: the skipped terms' postings are read
       and only those of candidates summed (a hash semi-join, no aggregate over every memory),
       and added to the partial scores: the scores and matched-term counts of `_FULL_SCORES`,
       to the last bit (CONTRIBUTION).
    """
    seed_cut = _kth_passing("seed", lookup + " AND NOT m.is_sensitive")
    return f""", ranked AS MATERIALIZED (
    -- the terms with postings: each one's bound, the bounds of it and every commoner term
    -- summed, and the postings of the rarer terms
    SELECT lexeme, df, idf, idf * {_BOUND} AS bound,
           sum(idf * {_BOUND}) OVER (ORDER BY idf, lexeme ROWS UNBOUNDED PRECEDING) AS bound_upto,
           coalesce(sum(df) OVER (ORDER BY idf DESC, lexeme DESC
                                  ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS df_rarer
    FROM idf WHERE df > 0
), seed AS MATERIALIZED (
    SELECT p.memory_id, sum({CONTRIBUTION}) AS score
    FROM ranked i
    {_POSTINGS}
    WHERE i.df_rarer = 0 OR i.df_rarer + i.df <= %(seed_postings)s
    GROUP BY p.memory_id
), theta AS MATERIALIZED (
    SELECT t.cut,
           coalesce((SELECT max(bound_upto) FROM ranked WHERE bound_upto < t.cut), 0) AS rest
    FROM (SELECT CASE WHEN (SELECT min(idf) FROM ranked) < 0 THEN '-Infinity'::float8
                      ELSE {seed_cut} * (1 - 1e-12) END AS cut) t
), partial AS MATERIALIZED (
    SELECT p.memory_id, sum({CONTRIBUTION}) AS score, count(*) AS matched
    FROM ranked i
    {_POSTINGS}
    WHERE i.bound_upto >= (SELECT cut FROM theta)
    GROUP BY p.memory_id
), candidates_of_partial AS MATERIALIZED (
    SELECT * FROM partial
    WHERE score + (SELECT rest FROM theta) >= (SELECT cut FROM theta)
), skipped AS (
    SELECT p.memory_id, sum({CONTRIBUTION}) AS score, count(*) AS matched
    FROM ranked i
    {_POSTINGS}
    WHERE i.bound_upto < (SELECT cut FROM theta)
      AND p.memory_id IN (SELECT memory_id FROM candidates_of_partial)
    GROUP BY p.memory_id
), scored AS MATERIALIZED (
    SELECT memory_id, score, matched FROM partial WHERE (SELECT rest FROM theta) = 0
    UNION ALL
    SELECT c.memory_id, c.score + coalesce(x.score, 0), c.matched + coalesce(x.matched, 0)
    FROM candidates_of_partial c
    LEFT JOIN skipped x ON x.memory_id = c.memory_id
    WHERE (SELECT rest FROM theta) > 0
)"""




def _lookup(where_filters: str) -> str:
    """The memory row behind a scored posting, and whether it may be returned: one
    primary-key lookup per scored memory, whatever the planner's statistics say (right after
    a bulk load, before autoanalyze, a plain join was planned as a nested loop rescanning the
    postings for every memory of the namespace)."""
    return f"""CROSS JOIN LATERAL (
        SELECT * FROM memories m WHERE m.id = sc.memory_id
        LIMIT 1  -- keeps the subquery from being flattened into a join the planner reorders
    ) m
    WHERE m.namespace = %(ns)s AND {live('m')} {where_filters}"""


def _passing(where_filters: str) -> str:
    """The CTEs of a filtered statement: the memories the filter passes, at most PASSING_CAP
    of them, and the scores of those (all scores when it passes more)."""
    return f""", passing AS MATERIALIZED (
    SELECT m.id FROM memories m
    WHERE m.namespace = %(ns)s AND {live('m')} {where_filters}
    LIMIT {PASSING_CAP + 1}
), candidates AS MATERIALIZED (
    SELECT * FROM scored
    WHERE (SELECT count(*) FROM passing) > {PASSING_CAP}
       OR memory_id IN (SELECT id FROM passing)
)"""


def build_bm25_sql(filters: Filters, sort_by: SortBy, prune: bool = True, corrected: bool = False
                   ) -> tuple[str, dict[str, Any]]:
    """The BM25 statement and its parameters (filters). Callers add: ns,
    query, k, k1, b.

    Scores come from the postings of the query's own lexemes (migrations/0006), so the
    cost grows with how many memories contain a query term, not with their length.
    `prune` (relevance and importance; recency needs every match) skips reading the postings
    of the commonest terms in full when they cannot change the k best (_pruned_scores): the
    same hits and scores as `prune=False`, which reads every posting of every term.
    `corrected`: the query's terms are read with the corrections spelling.BM25_PREPARE found (its
    `spelling_params`); without, every term as written.
    """
    if sort_by not in BLEND:
        raise ValueError(f"unknown sort_by {sort_by!r}")
    # Equal scores go to the more important memory. recency: the newest matches;
    # importance: the best-scoring matches, most important first.
    order = "created_at DESC, id" if sort_by == "recency" else "score DESC, importance DESC, id"
    final_order = "importance DESC, score DESC, id" if sort_by == "importance" else order
    where_filters, params = filter_sql(filters, alias="m")
    params["language_prior"] = LANGUAGE_PRIOR
    lookup = _lookup(where_filters)
    # relevance and importance keep the k best scores: only memories scoring at least the k-th
    # best score among those that pass the filters can be among them, and finding that score
    # looks up scored memories best first, only until k pass (a common term matches tens of
    # thousands of memories, and looking every one up was a large share of the statement's
    # time at 100,000 memories: docs/decisions/0003-bm25-maxscore.md).
    # recency keeps the newest matches, whatever their score: every match is looked up.
    # A filter that passes few memories (at most PASSING_CAP) is applied to the scores before any
    # lookup: the memories it passes are found once through their indexes (a metadata or tag
    # GIN), and only their scores are looked up; best first, a filter passing one memory in a
    # thousand would otherwise look up about a thousand scored memories per hit returned
    # (docs/decisions/0017-smaller-settings-and-limits.md). A filter passing more finds its k
    # hits among the first lookups anyway.
    source = "candidates" if where_filters else "scored"
    passing = _passing(where_filters) if where_filters else ""
    cutoff = _NO_CUTOFF if sort_by == "recency" else _kth_passing(source, lookup)
    scores = _pruned_scores(lookup) if prune and sort_by != "recency" else _FULL_SCORES
    if scores is not _FULL_SCORES:
        params["seed_postings"] = _SEED_POSTINGS
    # a memory matching a corrected term matched no term as written: never an exact match
    exact = " AND NOT EXISTS (SELECT FROM spelled)" if corrected else ""
    terms_idf = CORRECTED_IDF if corrected else IDF
    head = TERMS_STATS + terms_idf
    sql = f"""
{head}, asked AS MATERIALIZED (  -- read only when a sensitive memory is among the scored
    SELECT {CONTENT_LEXEMES} AS lexemes
){scores}{passing}, looked AS (
    SELECT m.id, m.importance, m.created_at, sc.score, m.is_sensitive, sc.matched,
           CASE WHEN m.is_sensitive THEN m.search_vector END AS search_vector
    FROM {source} sc
    {lookup}
      AND sc.score >= {cutoff}
), hits AS (
    SELECT id, importance, created_at, is_sensitive, score,
           matched = (SELECT count(*) FROM terms){exact} AS all_terms
    FROM looked
    -- only sensitive rows pay for the check
    WHERE NOT is_sensitive
       OR {asks_for_secret("search_vector", "(SELECT lexemes FROM asked)::text[]")}
)
SELECT id::text, score, score AS rank, CASE WHEN all_terms THEN 0 ELSE 1 END AS tier,
       importance, (SELECT sum(idf) FROM idf) AS scale, is_sensitive
FROM (SELECT * FROM hits ORDER BY {order} LIMIT %(k)s) top
ORDER BY {final_order}
"""
    return sql, params
