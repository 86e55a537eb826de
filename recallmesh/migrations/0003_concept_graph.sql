-- recallmesh schema v3: the concept graph.
--
-- Concepts are extracted from non-sensitive memories by the indexer (the same
-- outbox job that embeds a memory also links it to its concepts), so a
-- sensitive memory never gets concepts, exactly as it never gets a vector.
-- Everything is namespace-scoped. The graph leg reads it; `graph_versions`
-- tells it when a namespace's cached subgraph is stale.

CREATE TABLE concepts (
    id              bigserial PRIMARY KEY,
    namespace       text        NOT NULL,
    name            text        NOT NULL,  -- canonical (normalised) name
    kind            text        NOT NULL,  -- entity label (PERSON, ORG, ...), 'phrase' or 'tag'
    -- Embedding of the name (unit length) by `embedding_model`; used to merge
    -- surface forms and to seed the graph from a query vector. real[] rather
    -- than halfvec(n): the graph leg compares them in memory.
    embedding       real[],
    embedding_model text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (namespace, name)
);

-- Surface forms (normalised) -> concept; a form belongs to one concept per namespace.
CREATE TABLE concept_aliases (
    namespace  text   NOT NULL,
    alias      text   NOT NULL,
    concept_id bigint NOT NULL REFERENCES concepts (id) ON DELETE CASCADE,
    PRIMARY KEY (namespace, alias)
);
CREATE INDEX concept_aliases_concept_idx ON concept_aliases (concept_id);

-- memory --mentions--> concept
CREATE TABLE memory_concepts (
    memory_id  uuid   NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
    concept_id bigint NOT NULL REFERENCES concepts (id) ON DELETE CASCADE,
    weight     real   NOT NULL DEFAULT 1 CHECK (weight > 0),
    PRIMARY KEY (memory_id, concept_id)
);
CREATE INDEX memory_concepts_concept_idx ON memory_concepts (concept_id);

-- Typed, directed concept -> concept relationships with bi-temporal validity:
-- valid_from / valid_to is when the relation held in the world (from the
-- evidence memories' times), recorded_at / retracted_at when we learnt / unlearnt it.
CREATE TABLE concept_edges (
    id           bigserial PRIMARY KEY,
    namespace    text        NOT NULL,
    src          bigint      NOT NULL REFERENCES concepts (id) ON DELETE CASCADE,
    dst          bigint      NOT NULL REFERENCES concepts (id) ON DELETE CASCADE,
    rel_type     text        NOT NULL,  -- 'co_occurs' or an extracted relation (e.g. 'prefer')
    weight       real        NOT NULL DEFAULT 1 CHECK (weight > 0),
    evidence     uuid[]      NOT NULL DEFAULT '{}',  -- memories the relation was read from
    valid_from   timestamptz,
    valid_to     timestamptz,
    recorded_at  timestamptz NOT NULL DEFAULT now(),
    retracted_at timestamptz,
    CHECK (src <> dst)
);
CREATE UNIQUE INDEX concept_edges_live_idx ON concept_edges (src, dst, rel_type)
    WHERE retracted_at IS NULL;
CREATE INDEX concept_edges_ns_idx ON concept_edges (namespace);

-- Explicit memory -> memory relations a client supplies at store time.
CREATE TABLE memory_edges (
    namespace  text        NOT NULL,
    src        uuid        NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
    dst        uuid        NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
    rel_type   text        NOT NULL CHECK (rel_type IN ('supersedes', 'derived_from',
                                                        'references', 'about')),
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (src, dst, rel_type),
    CHECK (src <> dst)
);
CREATE INDEX memory_edges_ns_idx ON memory_edges (namespace);

-- Bumped by every change that alters a namespace's graph (links, edges, and a
-- memory deleted, superseded or edited), so the graph leg's cache is never stale.
CREATE TABLE graph_versions (
    namespace text   PRIMARY KEY,
    version   bigint NOT NULL DEFAULT 1
);

CREATE FUNCTION recallmesh_bump_graph_version(ns text) RETURNS void
    LANGUAGE sql AS $$
    INSERT INTO graph_versions (namespace) VALUES (ns)
    ON CONFLICT (namespace) DO UPDATE SET version = graph_versions.version + 1;
$$;

CREATE FUNCTION recallmesh_memory_graph_changed() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.deleted_at IS DISTINCT FROM OLD.deleted_at
       OR NEW.valid_to IS DISTINCT FROM OLD.valid_to
       OR NEW.valid_from IS DISTINCT FROM OLD.valid_from
       OR NEW.is_sensitive IS DISTINCT FROM OLD.is_sensitive
       OR NEW.content IS DISTINCT FROM OLD.content THEN
        -- Edited, deleted or made sensitive: its concept links go now; the
        -- indexer writes fresh ones for a live, non-sensitive new version.
        IF NEW.deleted_at IS NOT NULL OR NEW.is_sensitive
           OR NEW.content IS DISTINCT FROM OLD.content THEN
            DELETE FROM memory_concepts WHERE memory_id = NEW.id;
        END IF;
        PERFORM recallmesh_bump_graph_version(NEW.namespace);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER memories_graph_changed
    AFTER UPDATE OF deleted_at, valid_to, valid_from, is_sensitive, content ON memories
    FOR EACH ROW EXECUTE FUNCTION recallmesh_memory_graph_changed();

CREATE FUNCTION recallmesh_memory_edges_changed() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    PERFORM recallmesh_bump_graph_version(coalesce(NEW.namespace, OLD.namespace));
    RETURN NULL;
END
$$;

CREATE TRIGGER memory_edges_changed
    AFTER INSERT OR DELETE ON memory_edges
    FOR EACH ROW EXECUTE FUNCTION recallmesh_memory_edges_changed();

-- Memories stored before this migration get their concepts: the embedding job
-- also extracts concepts, so re-enqueue every live, non-sensitive memory.
SELECT recallmesh_enqueue_embedding_jobs(array_agg(id))
FROM memories WHERE NOT is_sensitive AND deleted_at IS NULL;
