-- recallmesh schema v18: every write transaction takes its locks first, in one order, and a
-- memory records who wrote it (issue 65; docs/decisions/0020-write-locks.md).
--
-- recallmesh_lock_for_write(namespaces, ids) is a write transaction's first statement. In this
-- order, each set sorted by its lock key:
--   1. the BM25 index's writer lock, only while the index is pg_textsearch older than 1.1:
--      its insert takes an LWLock and keeps it to the end of the transaction, so a lock wait
--      of a transaction that wrote the index would be a wait no deadlock check, timeout or
--      cancel can end. Every writer takes this advisory lock before its first row: writers of
--      the index then never wait for each other inside it;
--   2. the namespaces' write locks (migration 0005; the statistics triggers re-take them free);
--   3. the memory ids the transaction names (a client's ids, an import's records): two
--      writers of one id, in two namespaces, meet here and never inside an index.

CREATE FUNCTION recallmesh_bm25_index_holds_lock() RETURNS boolean
    LANGUAGE sql STABLE
    RETURN to_regclass('memories_bm25_idx') IS NOT NULL
       AND EXISTS (SELECT 1 FROM pg_extension
                   WHERE extname = 'pg_textsearch' AND extversion ~ '^(0\.|1\.0(\.|$))');

CREATE FUNCTION recallmesh_lock_for_write(namespaces text[], ids uuid[] DEFAULT '{}')
    RETURNS void
    LANGUAGE plpgsql AS $$
DECLARE
    k bigint;
BEGIN
    IF recallmesh_bm25_index_holds_lock() THEN
        PERFORM pg_advisory_xact_lock(hashtextextended('recallmesh.bm25-index-writer', 0));
    END IF;
    FOR k IN SELECT DISTINCT hashtextextended('recallmesh.namespace:' || n, 0)
             FROM unnest(namespaces) n ORDER BY 1 LOOP
        PERFORM pg_advisory_xact_lock(k);
    END LOOP;
    FOR k IN SELECT DISTINCT hashtextextended('recallmesh.memory:' || i::text, 0)
             FROM unnest(ids) i ORDER BY 1 LOOP
        PERFORM pg_advisory_xact_lock(k);
    END LOOP;
END
$$;

-- The purges take their locks the same way (the expiry sweeper and DeleteMatching call them
-- inside their own transactions, after their own recallmesh_lock_for_write: re-taking is free).
CREATE OR REPLACE FUNCTION recallmesh_purge_memory(ns text, mid uuid) RETURNS boolean
    LANGUAGE plpgsql AS $$
DECLARE
    lexemes text[];
BEGIN
    PERFORM recallmesh_lock_for_write(ARRAY[ns]);
    SELECT tsvector_to_array(search_vector) INTO lexemes
    FROM memories WHERE namespace = ns AND id = mid;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    DELETE FROM memories WHERE namespace = ns AND id = mid;
    PERFORM recallmesh_forget_derived(ns, mid);
    DELETE FROM lexeme_stats WHERE namespace = ns AND lexeme = ANY (lexemes) AND df = 0;
    RETURN true;
END
$$;

CREATE OR REPLACE FUNCTION recallmesh_purge_namespace(ns text) RETURNS bigint
    LANGUAGE plpgsql AS $$
DECLARE
    removed bigint;
BEGIN
    PERFORM recallmesh_lock_for_write(ARRAY[ns]);
    DELETE FROM memories WHERE namespace = ns;
    GET DIAGNOSTICS removed = ROW_COUNT;
    DELETE FROM concepts WHERE namespace = ns;  -- aliases, links and edges cascade
    DELETE FROM concept_edges WHERE namespace = ns;
    DELETE FROM memory_edges WHERE namespace = ns;
    DELETE FROM memory_lexemes WHERE namespace = ns;
    DELETE FROM lexeme_stats WHERE namespace = ns;
    DELETE FROM namespace_stats WHERE namespace = ns;
    DELETE FROM concept_aliases WHERE namespace = ns;
    DELETE FROM graph_versions WHERE namespace = ns;  -- a graph leg drops its cached graph
    RETURN removed;
END
$$;

-- Who wrote a memory: the API key's id, the JWT's subject, or 'local' (authentication off),
-- as `kind:identity`. A key without the read scope is answered about the memories it wrote
-- only (the duplicate rule, a retry, an unchanged import record, DeleteMatching). NULL for
-- memories written before this version: no write-only key wrote them.
ALTER TABLE memories ADD COLUMN written_by text;
