"""Chinese, Japanese and Korean text for Postgres full-text search.

Postgres' parser splits words at spaces and punctuation; Chinese and Japanese put no spaces
between words, so `to_tsvector` keeps a whole run of such characters ("我把护照放在书房") as one
token, and a query for any word inside it ("护照") finds nothing, in every text search
configuration. The usual answer of search engines without a dictionary (Lucene's CJKAnalyzer,
bigram indexing) is character n-grams: each run is indexed as its overlapping pairs of
characters (and its single characters, so a one-character query matches), and a query's runs
are searched as their pairs. The pairs are ordinary tokens to every configuration (no stemmer
touches them), so BM25, its statistics and the AND / OR tiers work on them unchanged.

Written into the memory's `keywords` column (weight B of its search vector, migration 0001) on
every write of its content; the lexical leg rewrites the query with `query_terms`. Latin,
Cyrillic, Greek... text is left to the configuration's own parser.
"""

from __future__ import annotations

import re

# Han (with extension A and compatibility ideographs), kana (with half-width katakana), Hangul.
_CJK_RUN = re.compile(
    "[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u309f\u30a0-\u30ff\u31f0-\u31ff"
    "\uff66-\uff9f\u1100-\u11ff\u3130-\u318f\uac00-\ud7af]+")


def _pairs(run: str) -> list[str]:
    return [run[i:i + 2] for i in range(len(run) - 1)] or [run]


def index_terms(text: str) -> str:
    """The CJK tokens stored beside a memory's text: each CJK run's characters and
    overlapping pairs, space-separated ('' for text without CJK)."""
    terms: list[str] = []
    for run in _CJK_RUN.findall(text):
        terms.extend(run if len(run) > 1 else ())
        terms.extend(_pairs(run))
    return " ".join(terms)


def query_terms(query: str) -> str:
    """The query as the lexical leg searches it: each CJK run replaced by its overlapping
    pairs (a one-character run stays as it is); other text unchanged."""
    return _CJK_RUN.sub(lambda m: " " + " ".join(_pairs(m.group())) + " ", query)
