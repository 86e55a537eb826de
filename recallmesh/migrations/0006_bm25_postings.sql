-- recallmesh schema v6: postings for the lexical leg's BM25 ranking.
--
-- v4 scored BM25 by unnesting the whole search vector of every memory that
-- matched any query term: fine for chat turns, slow for long documents (a
-- SciFact abstract has ~120 lexemes, and most abstracts match some term of a
-- ten-word question). An inverted index turns that around: one row per
-- (namespace, lexeme, live memory) with the lexeme's frequency in the memory
-- and the memory's length, so a search reads only the postings of its own
-- terms. The rows follow the memory in the same trigger, under the same
-- per-namespace lock (v5), as the v4 counters; soft-deleted memories have none.

CREATE TABLE memory_lexemes (
    namespace text    NOT NULL,
    lexeme    text    NOT NULL,
    memory_id uuid    NOT NULL,
    tf        integer NOT NULL CHECK (tf > 0),   -- the lexeme's position count in the memory
    dl        integer NOT NULL CHECK (dl >= 0),  -- the memory's length (recallmesh_tsvector_length)
    PRIMARY KEY (namespace, lexeme, memory_id)
);

-- Add (sign 1) or remove (sign -1) one memory's postings.
CREATE FUNCTION recallmesh_post_lexemes(ns text, id uuid, v tsvector, sign integer) RETURNS void
    LANGUAGE plpgsql AS $$
BEGIN
    IF sign > 0 THEN
        INSERT INTO memory_lexemes (namespace, lexeme, memory_id, tf, dl)
        SELECT ns, u.lexeme, id, coalesce(array_length(u.positions, 1), 1),
               recallmesh_tsvector_length(v)
        FROM unnest(v) u
        ORDER BY u.lexeme;
    ELSE
        DELETE FROM memory_lexemes
        WHERE namespace = ns AND memory_id = id AND lexeme = ANY (tsvector_to_array(v));
    END IF;
END
$$;

CREATE OR REPLACE FUNCTION recallmesh_lexeme_stats() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.deleted_at IS NULL THEN
        PERFORM recallmesh_lock_namespace(OLD.namespace);
        PERFORM recallmesh_count_lexemes(OLD.namespace, OLD.search_vector, -1);
        PERFORM recallmesh_post_lexemes(OLD.namespace, OLD.id, OLD.search_vector, -1);
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.deleted_at IS NULL THEN
        PERFORM recallmesh_lock_namespace(NEW.namespace);
        PERFORM recallmesh_count_lexemes(NEW.namespace, NEW.search_vector, 1);
        PERFORM recallmesh_post_lexemes(NEW.namespace, NEW.id, NEW.search_vector, 1);
    END IF;
    RETURN NULL;
END
$$;

-- Memories stored before this migration.
INSERT INTO memory_lexemes (namespace, lexeme, memory_id, tf, dl)
SELECT m.namespace, u.lexeme, m.id, coalesce(array_length(u.positions, 1), 1),
       recallmesh_tsvector_length(m.search_vector)
FROM memories m, unnest(m.search_vector) u
WHERE m.deleted_at IS NULL;
