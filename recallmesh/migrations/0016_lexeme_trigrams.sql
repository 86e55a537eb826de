-- recallmesh schema v16: the lexical leg looks a misspelt query term up among the namespace's
-- own terms by spelling (issue 56; docs/decisions/0013-misspellings-by-trigram.md).
--
-- pg_trgm (a contrib module of PostgreSQL: in the embedded Postgres, in Debian's and
-- CloudNativePG's images) measures how alike two words are by the three-letter sequences they
-- share. It is a trusted extension: a database owner may create it without superuser rights.
-- The index lets `lexeme % term` (similarity at least pg_trgm.similarity_threshold) find the
-- lexemes of lexeme_stats that share trigrams with a term without reading every one; the
-- namespace is checked on the rows it finds. It indexes the lexeme only, never df, so the
-- counters' updates on every write stay HOT (no index entry changes).
CREATE EXTENSION IF NOT EXISTS pg_trgm;
-- fuzzystrmatch (contrib, trusted too): levenshtein_less_equal, the edits between a term and a
-- candidate the trigram index found.
CREATE EXTENSION IF NOT EXISTS fuzzystrmatch;

CREATE INDEX lexeme_stats_trigrams ON lexeme_stats USING gin (lexeme gin_trgm_ops);
