-- Memory you can see and manage (issue 43): List / Count in a stable order, filters on
-- metadata, History of every Update, pinned memories.

-- Pinned memories are always in Context, first (Memory.pinned).
ALTER TABLE memories ADD COLUMN pinned boolean NOT NULL DEFAULT false;
CREATE INDEX memories_pinned_idx ON memories (namespace, importance DESC, created_at DESC)
    WHERE pinned AND deleted_at IS NULL;

-- List's keyset pages: (namespace, sort key, id), read forwards or backwards. Not partial:
-- List may include deleted memories.
CREATE INDEX memories_list_created_idx ON memories (namespace, created_at, id);
CREATE INDEX memories_list_updated_idx ON memories (namespace, updated_at, id);
CREATE INDEX memories_list_importance_idx ON memories (namespace, importance, id);

-- Metadata filters are containment tests (metadata @> '{"k": "v"}'), which this index serves.
CREATE INDEX memories_metadata_idx ON memories USING gin (metadata jsonb_path_ops);

-- Every earlier state of a memory, kept by the Update that replaced it. Goes with the memory
-- (a purge, a namespace deleted).
CREATE TABLE memory_versions (
    memory_id    uuid        NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
    version      integer     NOT NULL CHECK (version >= 1),
    namespace    text        NOT NULL,
    content      text        NOT NULL,
    category     text        NOT NULL,
    tags         text[]      NOT NULL,
    importance   real        NOT NULL,
    is_sensitive boolean     NOT NULL,
    updated_at   timestamptz NOT NULL,
    valid_from   timestamptz,
    valid_to     timestamptz,
    metadata     jsonb       NOT NULL,
    expires_at   timestamptz,
    thread       text        NOT NULL,
    pinned       boolean     NOT NULL,
    replaced_at  timestamptz NOT NULL,
    replaced_by  text        NOT NULL,
    changed      text[]      NOT NULL,
    PRIMARY KEY (memory_id, version)
);

-- History's relations both ways: every edge naming a memory, of any type (src leads the
-- primary key; the index of migration 0013 holds SUPERSEDES edges only).
CREATE INDEX memory_edges_dst_idx ON memory_edges (dst);
