-- recallmesh schema v16: the lexical leg looks a misspelt query term up among the namespace's
-- own terms by spelling (issue 56; docs/decisions/0013-misspellings-by-trigram.md).
--
-- Three contrib modules of PostgreSQL (in the embedded Postgres, and in the PostgreSQL package
-- of Debian's and CloudNativePG's images), trusted extensions: a database owner may create them
-- without superuser rights. pg_trgm measures how alike two words are by the three-letter
-- sequences they share; fuzzystrmatch counts the edits between them (levenshtein_less_equal);
-- btree_gin lets one GIN index hold the namespace beside the lexeme's trigrams.
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE EXTENSION IF NOT EXISTS fuzzystrmatch;
CREATE EXTENSION IF NOT EXISTS btree_gin;

-- `namespace = ns AND lexeme % term` (similarity at least pg_trgm.similarity_threshold) finds
-- the namespace's lexemes that share trigrams with a term, without visiting another namespace's
-- rows. It indexes the namespace and the lexeme only, never df, so the counters' updates on
-- every write stay HOT (no index entry changes).
CREATE INDEX lexeme_stats_trigrams ON lexeme_stats USING gin (namespace, lexeme gin_trgm_ops);
