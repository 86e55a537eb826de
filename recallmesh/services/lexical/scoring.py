"""What both BM25 statements (bm25.py over the postings, bm25_index.py over the pg_textsearch
index) compute alike, so that a memory scores the same, to the last bit, whichever found it:
the query's terms and the namespace's statistics (TERMS_STATS), each term's df and idf, with the
language's evidence beside the namespace's (IDF; CORRECTED_IDF with the spelling corrections,
spelling.py; docs/decisions/0021-words-of-the-language.md), and a posting's share of a memory's
score (CONTRIBUTION).

BM25 (Okapi): a memory matching any query lexeme scores
  sum over query lexemes t of idf(t) * tf (k1 + 1) / (tf + k1 (1 - b + b dl / avgdl))
with idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5)), N, df and the average length read from the
per-namespace statistics the schema keeps current on write
(recallmesh/migrations/0004_bm25_stats.sql), tf the lexeme's position count and dl the memory's
token count.
"""

from __future__ import annotations

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


# The query's distinct lexemes and the namespace's statistics: how both BM25 statements begin.
TERMS_STATS = """WITH terms AS (
    SELECT DISTINCT unnest(tsvector_to_array(to_tsvector('english', %(query)s))) AS lexeme
), stats AS (
    -- float8 throughout: an integer count minus 0.5 is numeric, and numeric ln() per posting
    -- was most of a statement's time (docs/decisions/0003-bm25-maxscore.md)
    SELECT greatest(docs, 1)::float8 AS docs,
           greatest(total_len::float8 / greatest(docs, 1), 1) AS avgdl
    FROM namespace_stats WHERE namespace = %(ns)s
)"""


# The query's terms with their df and idf, once per term, not per posting (plain: every term as
# written; spelled: a term no memory holds read as its correction, spelling.SPELLED).
# A term's df in the namespace (`t` or `w`: the row naming the term, `l`: the answer) and its
# idf beside the namespace's statistics `s`: the one lookup and formula of every term table (IDF
# and CORRECTED_IDF below, spelling.HELD).
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
LEXEME_DF = {
    "df_of_t": """    LEFT JOIN LATERAL (
        SELECT df FROM lexeme_stats
        WHERE namespace = %(ns)s AND lexeme = t.lexeme
        LIMIT 1
    ) l ON true""",
    "language_of_t": "    LEFT JOIN language_lexemes lf ON lf.lexeme = t.lexeme",
    "idf": (f"ln(1 + (s.docs + %(language_prior)s - (coalesce(l.df, 0) + {_LANGUAGE_DF}) + 0.5)"
            f" / (coalesce(l.df, 0) + {_LANGUAGE_DF} + 0.5))"),
}
LEXEME_DF["df_of_w"] = LEXEME_DF["df_of_t"].replace("t.lexeme", "w.lexeme")
LEXEME_DF["language_of_w"] = LEXEME_DF["language_of_t"].replace("t.lexeme", "w.lexeme")
# the default: the namespace's own counts alone (the decision rule has not chosen another yet)
LANGUAGE_PRIOR = 0.0
IDF = """, idf AS MATERIALIZED (  -- once per term, not per posting
    SELECT t.lexeme, coalesce(l.df, 0) AS df, {idf} AS idf
    FROM terms t
    CROSS JOIN stats s
{df_of_t}
{language_of_t}
    ORDER BY t.lexeme  -- the query's scale sums the terms' idf in this order, the same bits
                       -- in the pruned and the full statement
)""".format(**LEXEME_DF)
# The same with the corrections spelling.BM25_PREPARE found (parameters spelled_terms,
# spelled_lexemes, spelled_similarity): each corrected term replaced by its correction, weighted
# by the similarity.
CORRECTED_IDF = """, spelled AS MATERIALIZED (
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
)""".format(**LEXEME_DF)
