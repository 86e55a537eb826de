"""The lexical leg's own settings."""

from __future__ import annotations

from dataclasses import dataclass

from recallmesh.migrations.bm25_index import BM25_B, BM25_K1
from recallmesh.policy import BM25IndexMode, LexicalRanking, lexical_setting
from recallmesh.services.lexical.bm25 import PRUNE_MIN_POSTINGS
from recallmesh.services.lexical.scoring import LANGUAGE_PRIOR
from recallmesh.services.lexical.spelling import SPELLING_SIMILARITY
from recallmesh.shared.settings import env_float


@dataclass(frozen=True)
class LexicalSettings:
    # Rows admitted by the OR-broaden step must reach this ts_rank; keeps the
    # broaden step from flooding a short AND result with one-word noise.
    or_min_rank: float = 0.01
    # BM25 (k1 0.9, b 0.4) by default (docs/decisions/0007-bm25-parameters.md); "ts_rank" is
    # the faithful Postgres full-text baseline.
    # The three are recall settings the lexical leg owns (recallmesh/policy.py): their
    # variables and bounds are declared there, a request may override them.
    ranking: LexicalRanking = "bm25"
    bm25_k1: float = BM25_K1
    bm25_b: float = BM25_B
    # A misspelt term read as the namespace's most similar one from this trigram similarity
    # (docs/decisions/0013-misspellings-by-trigram.md); 1 turns it off. Deployment only.
    spelling_similarity: float = SPELLING_SIMILARITY
    # The language's word frequencies beside the namespace's counts in a term's idf, as this
    # many memories of the language (docs/decisions/0021-words-of-the-language.md); 0: off.
    # Deployment only.
    language_prior: float = LANGUAGE_PRIOR
    # auto: the pg_textsearch index when the database has it, for queries whose terms are
    # common; off: the SQL statements only (docs/decisions/0018-bm25-index.md). Deployment only.
    bm25_index: BM25IndexMode = "auto"
    # ... for the queries whose terms bring at least this many postings in the namespace: where
    # the SQL statement needs pruning (PRUNE_MIN_POSTINGS). Deployment only.
    bm25_index_min_postings: int = PRUNE_MIN_POSTINGS

    @classmethod
    def from_env(cls) -> LexicalSettings:
        return cls(or_min_rank=env_float("RECALLMESH_LEXICAL_OR_MIN_RANK", 0.01),
                   ranking=lexical_setting("lexical_ranking", cls.ranking),
                   bm25_k1=lexical_setting("bm25_k1", cls.bm25_k1),
                   bm25_b=lexical_setting("bm25_b", cls.bm25_b),
                   spelling_similarity=lexical_setting("lexical_spelling_similarity",
                                                       cls.spelling_similarity),
                   language_prior=lexical_setting("lexical_language_prior",
                                                  cls.language_prior),
                   bm25_index=lexical_setting("lexical_bm25_index", cls.bm25_index),
                   bm25_index_min_postings=lexical_setting(
                       "lexical_bm25_index_min_postings", cls.bm25_index_min_postings))


