"""Lexical retrieval: Postgres full-text search, the "current system" baseline.

Faithful to the system recallmesh is measured against:
  1. AND-match: `search_vector @@ plainto_tsquery('english', query)`;
  2. if that yields fewer than k rows, broaden to OR-matching of the same
     lexemes, admitting only rows whose OR ts_rank reaches `or_min_rank`;
  3. AND hits always rank before OR-only hits; within each tier the order is
       relevance:  ts_rank * 0.7 + importance * 0.3
       importance: ts_rank * 0.4 + importance * 0.6
       recency:    created_at descending
     with the memory id as the final, deterministic tie-break.
Scoped to one namespace, soft-deleted rows excluded, optional filters applied.

A second ranking, `bm25`, is Okapi BM25 computed in SQL over the same
tsvectors: every memory matching any query lexeme (OR) is scored by
  sum over query lexemes t of idf(t) * tf (k1 + 1) / (tf + k1 (1 - b + b dl / avgdl))
with idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5)), N, df and the average
length read from the per-namespace statistics the schema keeps current on
write (recallmesh/migrations/0004_bm25_stats.sql), tf the lexeme's position count and dl
the memory's token count. The terms' postings (memory, tf, dl per lexeme,
recallmesh/migrations/0006_bm25_postings.sql) are read instead of the memories' whole
vectors. Hits are ordered by that score (no AND tier), then importance, then
id (sort_by importance: the top k by score, most important first; recency: the
newest matches); `exact_match` still says whether every term matched. Each BM25
answer also gives the query's score scale, sum over its lexemes of idf(t): what a
memory holding every term once at average length scores (calibrated fusion).
A sensitive memory is returned, by either ranking, only when the question asks for what it
holds that the namespace's ordinary memories do not (`asks_for_secret`,
docs/decisions/0015-secrets-on-what-only-they-hold.md); it is then scored like any memory.
Each posting's share is rounded to a multiple of 2^-36 (CONTRIBUTION), so a score is the
same whatever order its shares are summed in. When the query's terms have many postings
(PRUNE_MIN_POSTINGS), relevance and importance run a pruned statement that returns the same
rows (_pruned_scores; docs/decisions/0003-bm25-maxscore.md): the commonest terms, which
cannot lift a memory into the k best on their own, are summed only for the memories the rarer
terms make candidates.
Chinese, Japanese and Korean runs are searched as character pairs (cjk.py).
Under BM25 a misspelt term (one no memory of the namespace holds and no supported language
knows as a word) is read as the namespace's most similar term by spelling, weighted by that
similarity (SPELLED; docs/decisions/0013, 0021).
The user's text only ever reaches Postgres as a bound parameter to
plainto_tsquery, which cannot fail on any input (operators, quotes,
backslashes, emoji, over-long tokens); the OR query is derived from the
parsed tsquery, never from the raw text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from prometheus_client import Counter

from recallmesh.migrations.bm25_index import INDEX_NAME, INDEXED_TEXT
from recallmesh.shared.cjk import query_terms
from recallmesh.shared.replicas import as_reads
from recallmesh.wire.filters import Filters, filter_sql, live

# (ts_rank weight, importance weight) of the blended score per sort mode.
BLEND = {"relevance": (0.7, 0.3), "importance": (0.4, 0.6), "recency": (0.7, 0.3)}
# The query as an AND tsquery (every term) and its OR broadening (any term), for ts_rank.
_QUERY_TIERS = """WITH q AS (
    SELECT plainto_tsquery('english', %(query)s) AS and_q
), qq AS (
    SELECT and_q, replace(and_q::text, ' & ', ' | ')::tsquery AS or_q FROM q
)"""


@dataclass(frozen=True)
class LexicalHit:
    memory_id: str
    score: float  # the blended score of the hit's tier
    ts_rank: float
    tier: int  # 0 = AND match (every query term), 1 = OR-broadened
    importance: float = 0.5
    sensitive: bool = False


@dataclass(frozen=True)
class LexicalResult:
    hits: list[LexicalHit]
    # BM25: the query terms' summed idf, the score of a memory holding every term once at
    # average length (what calibrated fusion divides by); None for ts_rank or no hits.
    score_scale: float | None = None
    # What found the candidates: "index" (the BM25 index, build_bm25_index_sql), "sql" (the
    # statements over the postings) or "ts_rank".
    engine: str = "sql"

    @property
    def and_hits(self) -> int:
        return sum(1 for h in self.hits if h.tier == 0)

    @property
    def or_hits(self) -> int:
        return sum(1 for h in self.hits if h.tier == 1)


def asks_for_secret(vector: str, terms: str) -> str:
    """The SQL condition under which a sensitive memory (its search vector `vector`) may be
    returned for a question (its content words' lexemes, the text[] `terms`: CONTENT_LEXEMES):
    the question asks for something only a secret holds. One of the question's words, or two
    of them together, are in the memory's own text (content and keywords: tsvector weights A
    and B, not the tags or category it was filed under) and in no live memory of the namespace
    that is not sensitive (their postings, tags included). "How much sertraline ...", "... VPN
    password" or "home alarm code" (no ordinary memory speaks of an alarm's code) ask for a
    secret; a name, a tag or an everyday word the secret shares with the namespace's ordinary
    memories, or a name and a word that one of them holds together ("Where is Jonas's home?"
    beside "Jonas works from home"), asks for nothing of the kind, however much of the question
    it makes up (docs/decisions/0015-secrets-on-what-only-they-hold.md). Needs %(ns)s."""
    return f"""EXISTS (
        SELECT 1
        FROM (SELECT array_agg(own) AS asked
              FROM unnest(tsvector_to_array(ts_filter({vector}, '{{a,b}}'))) AS own
              WHERE own = ANY({terms})) o
        CROSS JOIN LATERAL unnest(o.asked) AS x
        CROSS JOIN LATERAL unnest(o.asked) AS y
        WHERE x <= y AND NOT EXISTS (
            SELECT 1 FROM memory_lexemes px
            JOIN memory_lexemes py
              ON py.namespace = px.namespace AND py.lexeme = y AND py.memory_id = px.memory_id
            JOIN memories m2 ON m2.id = px.memory_id
            WHERE px.namespace = %(ns)s AND px.lexeme = x AND NOT m2.is_sensitive
              AND {live('m2')}))"""


# The question's words for `asks_for_secret`: its lexemes less the function words of every
# language Postgres ships a stop list for (a snowball dictionary maps a stop word to no lexeme):
# the English configuration keeps "die", "del" or "als" as words, and no secret is asked for by
# them.
CONTENT_LEXEMES = """tsvector_to_array(to_tsvector('english', coalesce((
    SELECT string_agg(w, ' ')
    FROM unnest(tsvector_to_array(to_tsvector('simple', %(query)s))) AS w
    WHERE NOT EXISTS (SELECT 1 FROM pg_ts_dict d
                      WHERE d.dictname ~ '_stem$' AND ts_lexize(d.oid::regdictionary, w) = '{}')
), '')))"""


def build_search_sql(filters: Filters, sort_by: str) -> tuple[str, dict[str, Any]]:
    """The one statement behind a lexical search, and its filter parameters.

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


# A posting's share of its memory's score: idf(t) * tf (k1 + 1) / (tf + k1 (1 - b + b dl /
# avgdl)) (i: the term's idf row, p: the posting, s: the namespace's statistics), rounded to a
# multiple of 2^-36 (1.5e-11). Multiples of 2^-36 below 2^17 add up exactly in float8, so a
# memory's score does not depend on the order its postings are summed in (a hash or a sorted
# aggregate, the pruned statement's two steps): the pruned statement returns the full one's
# scores to the last bit, and memories whose scores are equal but for float rounding tie
# (importance, then id, decide) instead of being ordered by rounding noise.
CONTRIBUTION = """round(i.idf * p.tf * (%(k1)s + 1)
                 / (p.tf + %(k1)s * (1 - %(b)s + %(b)s * p.dl / s.avgdl)) * 68719476736)
           / 68719476736"""

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
    one by one by key cost 16 to 50 us each at a million memories, more than reading them).

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

# Misspellings (docs/decisions/0013-misspellings-by-trigram.md). A query term that no live memory
# of the namespace holds (df 0) and that is no word of a supported language (language_lexemes,
# docs/decisions/0021-words-of-the-language.md) is read as the namespace's nearest live term by
# spelling: one edit away (a letter added, dropped or changed; two in a term of
# SPELLING_TWO_EDITS_CHARS characters or more, where a swapped pair is two), among those whose
# pg_trgm trigram similarity reaches the leg's threshold (%(spelling)s; pg_trgm's own default 0.3:
# the trigram index finds them, migrations/0016); the fewest edits, then the most similar, then
# the one more memories hold, then the first in order. It is scored as that term with its idf
# times the similarity, below 1: an exact match of a term as rare outranks it; and the query's
# scale (the summed idf) counts it at that weight, what a memory holding the corrected term once
# at average length scores. Neither the term nor its correction is shorter than SPELLING_MIN_CHARS
# or holds a digit: a letter more or less makes another word of those (cat, cut; user, use; 2023,
# 2024). Chinese, Japanese and Korean terms are character pairs (cjk.py), never that long.
SPELLING_MIN_CHARS = 4
SPELLING_TWO_EDITS_CHARS = 8
SPELLING_SIMILARITY = 0.3  # pg_trgm's default similarity_threshold; 1 turns corrections off
# levenshtein's limit: a longer term is never corrected, nor a correction (no word is as long)
SPELLING_MAX_CHARS = 255
_CORRECTABLE = ("char_length({term}) BETWEEN " + str(SPELLING_MIN_CHARS) + " AND "
                + str(SPELLING_MAX_CHARS) + " AND {term} !~ '[0-9]'")
SPELLED = """, spelled AS MATERIALIZED (
    SELECT h.lexeme AS term, c.lexeme, c.df, c.similarity
    FROM (SELECT lexeme FROM held h
          WHERE h.df = 0 AND %(spelling)s < 1 AND {correctable_h}
            -- a word of a language is no misspelling, whatever the namespace holds ("plan"
            -- beside "plays"): only a term no supported language uses is looked up by spelling
            -- (migration 0019; OFFSET 0 keeps this filter before the lookups)
            AND NOT EXISTS (SELECT 1 FROM language_lexemes w WHERE w.lexeme = h.lexeme)
          OFFSET 0) h
    CROSS JOIN LATERAL (
        SELECT ls.lexeme, ls.df, similarity(ls.lexeme, h.lexeme)::float8 AS similarity, e.edits
        FROM lexeme_stats ls
        CROSS JOIN LATERAL (  -- CASE: the length is checked before levenshtein sees the term
            SELECT CASE WHEN {correctable_ls} AND {correctable_h}
                        THEN levenshtein_less_equal(ls.lexeme, h.lexeme, 2) END AS edits
        ) e
        WHERE ls.lexeme %% h.lexeme  -- the trigram index (at pg_trgm.similarity_threshold)
          AND ls.namespace = %(ns)s AND ls.df > 0
          AND e.edits <= CASE WHEN char_length(h.lexeme) >= {two_edits} THEN 2 ELSE 1 END
        ORDER BY e.edits, similarity DESC, ls.df DESC, ls.lexeme
        LIMIT 1
    ) c
    WHERE c.similarity >= %(spelling)s
)""".format(correctable_ls=_CORRECTABLE.format(term="ls.lexeme"),
            correctable_h=_CORRECTABLE.format(term="h.lexeme"),
            two_edits=SPELLING_TWO_EDITS_CHARS)


# The query's terms with their df and idf, once per term, not per posting (plain: every term as
# written; spelled: a term no memory holds read as its correction, SPELLED).
# A term's df in the namespace (`t` or `w`: the row naming the term, `l`: the answer) and its
# idf beside the namespace's statistics `s`: the one lookup and formula of every term table below.
#
# The language's evidence beside the namespace's (%(language_prior)s, LANGUAGE_PRIOR;
# docs/decisions/0021-words-of-the-language.md): the namespace's memories are counted as if
# `language_prior` memories of the language stood beside them, each holding the term with the
# chance a memory of the namespace's average length (s.avgdl terms) has of holding a word the
# language uses that often (1 - exp(-avgdl * frequency); `lf`: language_lexemes, a term no
# language lists counting 0). So a word common in the language weighs little in any namespace
# however few of its memories hold it, and a name or a rare word keeps its weight. 0: the
# namespace's own counts alone, BM25 as it was.
_LANGUAGE_DF = "%(language_prior)s * (1 - exp(-s.avgdl * coalesce(lf.frequency, 0)))"
_LEXEME_DF = {
    "df_of_t": """    LEFT JOIN LATERAL (
        SELECT df FROM lexeme_stats
        WHERE namespace = %(ns)s AND lexeme = t.lexeme
        LIMIT 1
    ) l ON true""",
    "language_of_t": "    LEFT JOIN language_lexemes lf ON lf.lexeme = t.lexeme",
    "idf": (f"ln(1 + (s.docs + %(language_prior)s - (coalesce(l.df, 0) + {_LANGUAGE_DF}) + 0.5)"
            f" / (coalesce(l.df, 0) + {_LANGUAGE_DF} + 0.5))"),
}
_LEXEME_DF["df_of_w"] = _LEXEME_DF["df_of_t"].replace("t.lexeme", "w.lexeme")
_LEXEME_DF["language_of_w"] = _LEXEME_DF["language_of_t"].replace("t.lexeme", "w.lexeme")
# the default: the namespace's own counts alone (the decision rule has not chosen another yet)
LANGUAGE_PRIOR = 0.0
_IDF = """, idf AS MATERIALIZED (  -- once per term, not per posting
    SELECT t.lexeme, coalesce(l.df, 0) AS df, {idf} AS idf
    FROM terms t
    CROSS JOIN stats s
{df_of_t}
{language_of_t}
    ORDER BY t.lexeme  -- the query's scale sums the terms' idf in this order, the same bits
                       -- in the pruned and the full statement
)""".format(**_LEXEME_DF)
_HELD = """, held AS MATERIALIZED (  -- each term and how many live memories hold it
    SELECT t.lexeme, coalesce(l.df, 0) AS df
    FROM terms t
{df_of_t}
)""".format(**_LEXEME_DF)
# The same with the corrections BM25_PREPARE found (parameters spelled_terms, spelled_lexemes,
# spelled_similarity): each corrected term replaced by its correction, weighted by the similarity.
_CORRECTED_IDF = """, spelled AS MATERIALIZED (
    SELECT * FROM unnest(%(spelled_terms)s::text[], %(spelled_lexemes)s::text[],
                         %(spelled_similarity)s::float8[]) AS s(term, lexeme, similarity)
), idf AS MATERIALIZED (  -- once per term, not per posting
    SELECT DISTINCT ON (w.lexeme) w.lexeme, coalesce(l.df, 0) AS df,
           w.weight * {idf} AS idf
    FROM (SELECT lexeme, 1.0::float8 AS weight FROM terms
          WHERE lexeme NOT IN (SELECT term FROM spelled)
          UNION ALL
          SELECT lexeme, similarity FROM spelled) w
    CROSS JOIN stats s
{df_of_w}
{language_of_w}
    ORDER BY w.lexeme,  -- the query's scale sums the terms' idf in this order, the same bits
                        -- in the pruned and the full statement
             w.weight DESC  -- a correction that is also a term of the query counts once, exact
)""".format(**_LEXEME_DF)


# The query's distinct lexemes and the namespace's statistics: how both BM25 statements begin.
_TERMS_STATS = """WITH terms AS (
    SELECT DISTINCT unnest(tsvector_to_array(to_tsvector('english', %(query)s))) AS lexeme
), stats AS (
    -- float8 throughout: an integer count minus 0.5 is numeric, and numeric ln() per posting
    -- cost 65 of 110 ms for one query at 100,000 memories
    SELECT greatest(docs, 1)::float8 AS docs,
           greatest(total_len::float8 / greatest(docs, 1), 1) AS avgdl
    FROM namespace_stats WHERE namespace = %(ns)s
)"""


def build_bm25_sql(filters: Filters, sort_by: str, prune: bool = True, corrected: bool = False
                   ) -> tuple[str, dict[str, Any]]:
    """The BM25 statement and its parameters (filters). Callers add: ns,
    query, k, k1, b.

    Scores come from the postings of the query's own lexemes (migrations/0006), so the
    cost grows with how many memories contain a query term, not with their length.
    `prune` (relevance and importance; recency needs every match) skips reading the postings
    of the commonest terms in full when they cannot change the k best (_pruned_scores): the
    same hits and scores as `prune=False`, which reads every posting of every term.
    `corrected`: the query's terms are read with the corrections BM25_PREPARE found (its
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
    # The memory row behind a scored posting, and whether it may be returned: one primary-key
    # lookup per scored memory, whatever the planner's statistics say (right after a bulk load,
    # before autoanalyze, a plain join was planned as a nested loop rescanning the postings for
    # every memory of the namespace: seconds per query).
    lookup = f"""CROSS JOIN LATERAL (
        SELECT * FROM memories m WHERE m.id = sc.memory_id
        LIMIT 1  -- keeps the subquery from being flattened into a join the planner reorders
    ) m
    WHERE m.namespace = %(ns)s AND {live('m')} {where_filters}"""
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
    source = "scored"
    passing = ""
    if where_filters:
        source = "candidates"
        passing = f""", passing AS MATERIALIZED (
    SELECT m.id FROM memories m
    WHERE m.namespace = %(ns)s AND {live('m')} {where_filters}
    LIMIT {PASSING_CAP + 1}
), candidates AS MATERIALIZED (
    SELECT * FROM scored
    WHERE (SELECT count(*) FROM passing) > {PASSING_CAP}
       OR memory_id IN (SELECT id FROM passing)
)"""
    cutoff = _NO_CUTOFF if sort_by == "recency" else _kth_passing(source, lookup)
    scores = _pruned_scores(lookup) if prune and sort_by != "recency" else _FULL_SCORES
    if scores is not _FULL_SCORES:
        params["seed_postings"] = _SEED_POSTINGS
    # a memory matching a corrected term matched no term as written: never an exact match
    exact = " AND NOT EXISTS (SELECT FROM spelled)" if corrected else ""
    terms_idf = _CORRECTED_IDF if corrected else _IDF
    head = _TERMS_STATS + terms_idf
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



BM25_STATEMENTS = Counter(
    "recallmesh_lexical_bm25_statements_total",
    "BM25 statements the lexical leg ran, by kind: index (the pg_textsearch index's candidates), "
    "index_too_few (it found fewer candidates than its depth: the SQL statement answered "
    "instead; a steady rate on large namespaces means the index's statistics are stale, "
    "docs/operations/lexical.md), sql (the statements over the postings).",
    ["statement"],
)

# Candidates the index statement rescores, as a multiple of k (docs/decisions/0018-bm25-index.md).
INDEX_DEPTH_FACTOR = 2


def build_bm25_index_sql(filters: Filters, sort_by: str, corrected: bool = False
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
    terms_idf = _CORRECTED_IDF if corrected else _IDF
    secret = asks_for_secret("m.search_vector", "(SELECT lexemes FROM asked)::text[]")
    sql = f"""
{_TERMS_STATS}{terms_idf}, asked AS MATERIALIZED (
    SELECT {CONTENT_LEXEMES} AS lexemes
), candidates AS MATERIALIZED (
    SELECT m.id, m.importance, m.is_sensitive, m.search_vector,
           recallmesh_tsvector_length(m.search_vector) AS dl
    FROM memories m
    WHERE m.namespace = %(ns)s AND m.deleted_at IS NULL AND {live('m')} {where_filters}
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


def complete(row: Any, depth: int) -> bool:
    """Whether an answer row of build_bm25_index_sql comes from enough candidates: `depth` of
    them, or fewer from a scan that ran to its end (the table holds fewer rows than the index's
    cap; an estimate of -1, a table never analysed, is not taken for it)."""
    candidates, table_rows = int(row[7]), float(row[8])
    return candidates >= depth or 0 <= table_rows < INDEX_SCAN_CAP


def index_query(terms: str, corrections: dict[str, Any]) -> str:
    """The text the index is asked with: the query's terms, and the corrections of misspelt ones
    (SPELLED) as words of their own, so that the scan finds the memories holding them."""
    return " ".join([terms, *corrections.get("spelled_lexemes", [])])


# The BM25 statement's work_mem (for this transaction only): enough that the per-memory sums of
# a million memories' postings for a question with common words stay in memory, where the
# server's default spilled them to disk (docs/decisions/0017-smaller-settings-and-limits.md).
BM25_WORK_MEM = "32MB"
# The pruned statement costs more than the full one where there is little to prune (a small
# namespace; docs/decisions/0003-bm25-maxscore.md has the measurement); it is run when the
# query's terms have at least this many postings (a common-word question at 100,000 memories
# and up), the full one otherwise. Both return the same rows.
PRUNE_MIN_POSTINGS = 50000
# Also the query's corrections (SPELLED): the terms, their corrections and similarities, NULL
# where none; the statement reads them only then (the pg_trgm threshold is set before the lookup:
# the FROM row comes first).
BM25_PREPARE = """WITH terms AS (
    SELECT DISTINCT unnest(tsvector_to_array(to_tsvector('english', %(query)s))) AS lexeme
)""" + _HELD + SPELLED + """
SELECT c.work_mem, (SELECT coalesce(sum(df), 0) FROM held),
       (SELECT array_agg(term ORDER BY term) FROM spelled),
       (SELECT array_agg(lexeme ORDER BY term) FROM spelled),
       (SELECT array_agg(similarity ORDER BY term) FROM spelled)
FROM (SELECT set_config('work_mem', %(work_mem)s, true) AS work_mem,
             set_config('pg_trgm.similarity_threshold', least(%(spelling)s, 1)::text, true)
     ) c"""


def spelling_params(prepared: Any) -> dict[str, Any]:
    """The corrections of a BM25_PREPARE row as the corrected statement's parameters ({} for
    none)."""
    if not prepared or not prepared[2]:
        return {}
    return {"spelled_terms": list(prepared[2]), "spelled_lexemes": list(prepared[3]),
            "spelled_similarity": [float(v) for v in prepared[4]]}


class LexicalRetriever:
    """Runs lexical searches on read connections (a replica's when one is set, else the
    primary pool's: recallmesh.shared.replicas)."""

    def __init__(self, reads: Any, or_min_rank: float = 0.01, ranking: str = "ts_rank",
                 k1: float = 1.2, b: float = 0.75,
                 spelling: float = SPELLING_SIMILARITY, bm25_index: bool = False,
                 index_min_postings: int = PRUNE_MIN_POSTINGS,
                 language_prior: float = LANGUAGE_PRIOR) -> None:
        """`bm25_index`: the database has the BM25 index (bm25_engine()), searched when the
        query's terms bring at least `index_min_postings` postings in the namespace, where the
        SQL statement would need pruning (docs/decisions/0018-bm25-index.md)."""
        self.reads = as_reads(reads)
        self.spelling = spelling
        self.language_prior = language_prior
        self.bm25_index = bm25_index
        self.index_min_postings = index_min_postings
        self.or_min_rank = or_min_rank
        self.ranking = ranking
        self.k1 = k1
        self.b = b

    async def search(
        self,
        namespace: str,
        query: str,
        k: int,
        filters: Filters | None = None,
        sort_by: str = "relevance",
        ranking: str = "",
        k1: float | None = None,
        b: float | None = None,
    ) -> LexicalResult:
        """`ranking`, `k1`, `b` override the leg's settings for this search."""
        ranking = ranking or self.ranking
        terms = query_terms(query)

        async def bm25(conn: Any) -> tuple[list[Any], str]:
            async with conn.transaction():
                # one round trip: the statement's memory, and how many postings its terms have
                cur = await conn.execute(BM25_PREPARE, {"ns": namespace, "query": terms,
                                                         "work_mem": BM25_WORK_MEM,
                                                         "spelling": self.spelling})
                row = await cur.fetchone()
                postings = int(row[1]) if row else 0
                corrections = spelling_params(row)
                k1_b = {"k1": self.k1 if k1 is None else k1, "b": self.b if b is None else b,
                        "language_prior": self.language_prior}
                if (self.bm25_index and postings >= self.index_min_postings
                        and sort_by != "recency"):
                    sql, params = build_bm25_index_sql(filters or Filters(), sort_by,
                                                       corrected=bool(corrections))
                    depth = k * INDEX_DEPTH_FACTOR
                    params.update(k1_b, ns=namespace, query=terms, k=k, depth=depth,
                                  index_query=index_query(terms, corrections), **corrections)
                    cur = await conn.execute(sql, params)
                    found: list[Any] = await cur.fetchall()
                    if found and complete(found[0], depth):
                        BM25_STATEMENTS.labels("index").inc()
                        return found, "index"
                    BM25_STATEMENTS.labels("index_too_few").inc()
                sql, params = build_bm25_sql(filters or Filters(), sort_by,
                                             prune=postings >= PRUNE_MIN_POSTINGS,
                                             corrected=bool(corrections))
                params.update(k1_b, ns=namespace, query=terms, k=k, **corrections)
                cur = await conn.execute(sql, params)
                rows: list[Any] = await cur.fetchall()
                BM25_STATEMENTS.labels("sql").inc()
                return rows, "sql"

        async def ts_rank(conn: Any) -> tuple[list[Any], str]:
            sql, params = build_search_sql(filters or Filters(), sort_by)
            params.update(ns=namespace, query=terms, k=k, or_min_rank=self.or_min_rank)
            cur = await conn.execute(sql, params)
            rows: list[Any] = await cur.fetchall()
            return rows, "ts_rank"

        rows, engine = await self.reads.run(bm25 if ranking == "bm25" else ts_rank)
        scale = float(rows[0][5]) if rows and rows[0][5] else None  # BM25 only
        return LexicalResult(
            hits=[
                LexicalHit(str(r[0]), float(r[1]), float(r[2]), int(r[3]), float(r[4]),
                           bool(r[6]))
                for r in rows
            ],
            score_scale=scale,
            engine=engine,
        )
