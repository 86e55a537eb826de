-- recallmesh schema v11: the lexical leg reads a term's postings from the index alone.
--
-- A BM25 search reads every posting of each query term (migration 0006). The primary key
-- found them, but tf and dl were in the heap, one random page per posting: at 100,000
-- memories a query with common terms (108,000 postings) spent 280 ms on heap pages alone
-- (benchmarks/performance/scale.py). With tf and dl in the key's leaf pages the same read is
-- an index-only scan (12 ms there) wherever the visibility map says the pages are settled,
-- which VACUUM and autovacuum keep up to date. The key itself (namespace, lexeme, memory_id)
-- is unchanged; rebuilding it locks writes to the postings while it runs (seconds per
-- million postings).
ALTER TABLE memory_lexemes
    DROP CONSTRAINT memory_lexemes_pkey,
    ADD CONSTRAINT memory_lexemes_pkey PRIMARY KEY (namespace, lexeme, memory_id) INCLUDE (tf, dl);
