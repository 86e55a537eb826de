"""Misspelt query terms under BM25, and the search's first round trip that finds them.

A term no memory of the namespace holds and no supported language knows as a word is read as
the namespace's most similar term by spelling, weighted by that similarity (SPELLED;
docs/decisions/0013-misspellings-by-trigram.md, docs/decisions/0021-words-of-the-language.md).
BM25_PREPARE, the first statement of every BM25 search, looks the corrections up, sets the
search's work_mem and counts the postings of the query's terms (which statement runs: core.py);
`spelling_params` passes its corrections on to the statement (scoring.CORRECTED_IDF).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from recallmesh.services.lexical.scoring import LEXEME_DF

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


# Each query term and its df in the namespace (scoring.LEXEME_DF's lookup): a term held by no
# memory may be misspelt.
HELD = """, held AS MATERIALIZED (  -- each term and how many live memories hold it
    SELECT t.lexeme, coalesce(l.df, 0) AS df
    FROM terms t
{df_of_t}
)""".format(**LEXEME_DF)


# The BM25 statement's work_mem (for this transaction only): enough that the per-memory sums of
# a million memories' postings for a question with common words stay in memory, where the
# server's default spilled them to disk (docs/decisions/0017-smaller-settings-and-limits.md).
BM25_WORK_MEM = "32MB"
# The BM25 search's first round trip: the statement's work_mem (BM25_WORK_MEM) set, how many
# postings the query's terms have in the namespace (bm25.PRUNE_MIN_POSTINGS), and the query's
# corrections (SPELLED): the terms, their corrections and similarities, NULL where none; the
# statement reads them only then (the pg_trgm threshold is set before the lookup: the FROM row
# comes first). Its columns are Prepared's fields.
BM25_PREPARE = """WITH terms AS (
    SELECT DISTINCT unnest(tsvector_to_array(to_tsvector('english', %(query)s))) AS lexeme
)""" + HELD + SPELLED + """
SELECT c.work_mem, (SELECT coalesce(sum(df), 0) FROM held) AS postings,
       (SELECT array_agg(term ORDER BY term) FROM spelled) AS spelled_terms,
       (SELECT array_agg(lexeme ORDER BY term) FROM spelled) AS spelled_lexemes,
       (SELECT array_agg(similarity ORDER BY term) FROM spelled) AS spelled_similarity
FROM (SELECT set_config('work_mem', %(work_mem)s, true) AS work_mem,
             set_config('pg_trgm.similarity_threshold', least(%(spelling)s, 1)::text, true)
     ) c"""


class Prepared(NamedTuple):
    """The answer row of BM25_PREPARE: its columns, in order and by name."""

    work_mem: str
    postings: int  # of the query's terms, in the namespace
    # the misspelt terms, their corrections and similarities, in the terms' order; None for none
    spelled_terms: list[str] | None
    spelled_lexemes: list[str] | None
    spelled_similarity: list[float] | None


def spelling_params(prepared: Sequence[Any] | None) -> dict[str, Any]:
    """The corrections of a BM25_PREPARE row (a Prepared, or its columns in order) as the
    corrected statement's parameters ({} for none)."""
    if not prepared:
        return {}
    row = Prepared(*prepared)
    if not row.spelled_terms:
        return {}
    return {"spelled_terms": list(row.spelled_terms),
            "spelled_lexemes": list(row.spelled_lexemes or ()),
            "spelled_similarity": [float(v) for v in row.spelled_similarity or ()]}
