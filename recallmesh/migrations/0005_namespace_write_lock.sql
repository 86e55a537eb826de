-- recallmesh schema v5: one writer at a time per namespace for the corpus statistics.
--
-- The BM25 statistics (v4) are counters that every write to a namespace
-- updates, row by row. Two transactions storing batches into the same
-- namespace locked those counter rows in different orders and could deadlock
-- (one of them then failed). A write now first takes a transaction-scoped
-- advisory lock on its namespace, so writers of one namespace queue up in a
-- single order; namespaces stay independent. The gateway takes the lock at the
-- start of each write transaction (before any row lock); the trigger takes it
-- too, for writers that do not (re-taking a held lock is free).

CREATE FUNCTION recallmesh_lock_namespace(ns text) RETURNS void
    LANGUAGE sql
    RETURN pg_advisory_xact_lock(hashtextextended('recallmesh.namespace:' || ns, 0));

CREATE OR REPLACE FUNCTION recallmesh_lexeme_stats() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.deleted_at IS NULL THEN
        PERFORM recallmesh_lock_namespace(OLD.namespace);
        PERFORM recallmesh_count_lexemes(OLD.namespace, OLD.search_vector, -1);
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.deleted_at IS NULL THEN
        PERFORM recallmesh_lock_namespace(NEW.namespace);
        PERFORM recallmesh_count_lexemes(NEW.namespace, NEW.search_vector, 1);
    END IF;
    RETURN NULL;
END
$$;
