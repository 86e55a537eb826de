-- recallmesh schema v1: memories with a weighted full-text vector.
-- pgvector is enabled now; the vector leg adds its column in a later migration.
CREATE EXTENSION IF NOT EXISTS vector;

-- array_to_string is only STABLE (it can call arbitrary output functions);
-- for text[] it is immutable, which a generated column requires.
CREATE FUNCTION recallmesh_tags_text(tags text[]) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN coalesce(array_to_string(tags, ' '), '');

CREATE TABLE memories (
    id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    namespace     text        NOT NULL CHECK (length(namespace) BETWEEN 1 AND 128),
    content       text        NOT NULL CHECK (length(btrim(content)) > 0),
    category      text        NOT NULL DEFAULT '',
    tags          text[]      NOT NULL DEFAULT '{}',
    -- Weight B of the search vector, reserved for extracted keywords.
    keywords      text        NOT NULL DEFAULT '',
    importance    real        NOT NULL DEFAULT 0.5 CHECK (importance >= 0 AND importance <= 1),
    is_sensitive  boolean     NOT NULL DEFAULT false,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    deleted_at    timestamptz,
    valid_from    timestamptz,
    valid_to      timestamptz,
    metadata      jsonb       NOT NULL DEFAULT '{}'::jsonb,
    search_vector tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('english'::regconfig, content), 'A') ||
        setweight(to_tsvector('english'::regconfig, keywords), 'B') ||
        setweight(to_tsvector('english'::regconfig, recallmesh_tags_text(tags)), 'C') ||
        setweight(to_tsvector('english'::regconfig, category), 'D')
    ) STORED
);

CREATE INDEX memories_search_idx ON memories USING gin (search_vector);
CREATE INDEX memories_live_ns_created_idx ON memories (namespace, created_at DESC)
    WHERE deleted_at IS NULL;
CREATE INDEX memories_tags_idx ON memories USING gin (tags);
