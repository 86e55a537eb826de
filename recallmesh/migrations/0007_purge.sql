-- Data that really goes away: purge one memory, or a whole namespace, together with what was
-- derived from it. A soft delete (deleted_at) keeps the row; these remove it.
--
-- Derived data, and how each goes:
--   vector, pending embedding job, concept links, memory edges: with the row (ON DELETE CASCADE);
--   lexical statistics and postings: the memories_lexeme_stats trigger counts a live row out;
--   lexemes no memory holds any more (df 0 in lexeme_stats): deleted here;
--   concept edges: the memory's id leaves every evidence list; an edge it alone evidenced goes;
--   concepts: one that no live link and no evidenced edge keeps any more goes, with its aliases
--     and edges (ON DELETE CASCADE). That includes concepts left over from memories deleted or
--     edited earlier, whose links went then: after a purge no concept of the namespace outlives
--     all of its evidence.

-- Graph versions drawn from one sequence: a namespace deleted and made again never reuses a
-- version a graph leg may still hold in its cache (a per-namespace counter would restart at 1).
CREATE SEQUENCE recallmesh_graph_version_seq;
SELECT setval('recallmesh_graph_version_seq',
              greatest((SELECT max(version) FROM graph_versions), 0) + 1);

CREATE OR REPLACE FUNCTION recallmesh_bump_graph_version(ns text) RETURNS void
    LANGUAGE sql AS $$
    INSERT INTO graph_versions (namespace, version)
    VALUES (ns, nextval('recallmesh_graph_version_seq'))
    ON CONFLICT (namespace) DO UPDATE SET version = nextval('recallmesh_graph_version_seq');
$$;

CREATE FUNCTION recallmesh_drop_unevidenced_concepts(ns text) RETURNS void
    LANGUAGE sql AS $$
    DELETE FROM concepts c
    WHERE c.namespace = ns
      AND NOT EXISTS (SELECT 1 FROM memory_concepts mc WHERE mc.concept_id = c.id)
      AND NOT EXISTS (SELECT 1 FROM concept_edges e
                      WHERE (e.src = c.id OR e.dst = c.id) AND e.evidence <> '{}');
$$;

-- What the concept graph derived from one memory goes: its id leaves every edge's evidence (an
-- edge only it evidenced goes), and every concept nothing keeps any more goes. Run by a purge
-- (after the row is gone) and when a memory is made sensitive (its links went with the flip).
CREATE FUNCTION recallmesh_forget_derived(ns text, mid uuid) RETURNS void
    LANGUAGE sql AS $$
    DELETE FROM memory_concepts WHERE memory_id = mid;
    DELETE FROM concept_edges WHERE namespace = ns AND evidence = ARRAY[mid];
    UPDATE concept_edges SET evidence = array_remove(evidence, mid)
    WHERE namespace = ns AND mid = ANY (evidence);
    SELECT recallmesh_drop_unevidenced_concepts(ns);
    SELECT recallmesh_bump_graph_version(ns);
$$;

CREATE FUNCTION recallmesh_purge_memory(ns text, mid uuid) RETURNS boolean
    LANGUAGE plpgsql AS $$
DECLARE
    lexemes text[];
BEGIN
    PERFORM recallmesh_lock_namespace(ns);
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

CREATE FUNCTION recallmesh_purge_namespace(ns text) RETURNS bigint
    LANGUAGE plpgsql AS $$
DECLARE
    removed bigint;
BEGIN
    PERFORM recallmesh_lock_namespace(ns);
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
