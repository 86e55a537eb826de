-- recallmesh schema v2: the write path of semantic recall.
--
-- The vector column itself, memories.embedding halfvec(<dimension>), and its
-- HNSW index are created by shared/vector_schema.py right after migrations,
-- because the dimension comes from the embedding model manifest, not from SQL.
ALTER TABLE memories ADD COLUMN embedding_model text;

-- Which model the live vectors come from (one row, written when the vector
-- column is created and by a model switch). Services started with another
-- model refuse to start, and the indexer refuses to write its vectors.
CREATE TABLE embedding_space (
    singleton  boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    model_id   text        NOT NULL,
    dimension  integer     NOT NULL CHECK (dimension > 0),
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- The outbox: one row per memory that needs a (new) vector. Written by the
-- triggers below in the same transaction as the memory itself, so a stored
-- memory can never lack its job; consumed by the indexer.
CREATE SEQUENCE embedding_job_version_seq;

CREATE TABLE embedding_jobs (
    memory_id       uuid PRIMARY KEY REFERENCES memories (id) ON DELETE CASCADE,
    -- Bumped whenever the memory changes again; the indexer only writes a
    -- vector (and drops the job) if the version it embedded is still current.
    version         bigint      NOT NULL DEFAULT nextval('embedding_job_version_seq'),
    enqueued_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
    -- Claims push this forward by a lease; failures by a backoff.
    next_attempt_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    attempts        integer     NOT NULL DEFAULT 0,
    last_error      text
);

CREATE INDEX embedding_jobs_due_idx ON embedding_jobs (next_attempt_at);

-- (Re-)enqueue memories for embedding: a new job, or a pending one made
-- current again (new version, due now, attempts reset). The one definition of
-- "enqueue", used by the trigger below and by a model switch.
CREATE FUNCTION recallmesh_enqueue_embedding_jobs(ids uuid[]) RETURNS void
    LANGUAGE sql AS $$
    INSERT INTO embedding_jobs (memory_id) SELECT DISTINCT unnest(ids)
    ON CONFLICT (memory_id) DO UPDATE
        SET version = nextval('embedding_job_version_seq'),
            enqueued_at = clock_timestamp(),
            next_attempt_at = clock_timestamp(),
            attempts = 0,
            last_error = NULL;
    -- Delivered at commit; identical notifications in one transaction fold into one.
    SELECT pg_notify('recallmesh_embedding_jobs', '');
$$;

-- Never a vector for a sensitive or deleted memory, and never a stale one:
-- a content change clears the vector until the indexer writes the new one.
-- The same holds for the side column a model switch fills (embedding_next,
-- present only while `recallmesh reembed` runs), hence the generic record
-- update instead of naming that column.
CREATE FUNCTION recallmesh_clear_stale_embedding() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.is_sensitive OR NEW.deleted_at IS NOT NULL
       OR (TG_OP = 'UPDATE' AND NEW.content IS DISTINCT FROM OLD.content) THEN
        NEW := jsonb_populate_record(NEW, jsonb_build_object(
            'embedding', NULL, 'embedding_model', NULL,
            'embedding_next', NULL, 'embedding_next_model', NULL));
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER memories_clear_stale_embedding
    BEFORE INSERT OR UPDATE ON memories
    FOR EACH ROW EXECUTE FUNCTION recallmesh_clear_stale_embedding();

CREATE FUNCTION recallmesh_enqueue_embedding() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.is_sensitive OR NEW.deleted_at IS NOT NULL THEN
        DELETE FROM embedding_jobs WHERE memory_id = NEW.id;
    ELSIF TG_OP = 'INSERT'
          OR NEW.content IS DISTINCT FROM OLD.content
          OR OLD.is_sensitive OR OLD.deleted_at IS NOT NULL THEN
        PERFORM recallmesh_enqueue_embedding_jobs(ARRAY[NEW.id]);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER memories_enqueue_embedding
    AFTER INSERT OR UPDATE OF content, is_sensitive, deleted_at ON memories
    FOR EACH ROW EXECUTE FUNCTION recallmesh_enqueue_embedding();

-- Memories stored before this migration get their vectors too.
SELECT recallmesh_enqueue_embedding_jobs(array_agg(id))
FROM memories WHERE NOT is_sensitive AND deleted_at IS NULL;
