-- Duplicate writes and superseded facts, found by index.
--
-- content_key: a digest of what a write says (its content after normalising case and white
-- space, its thread, category, tags, metadata and sensitivity), set by the gateway on every
-- write (recallmesh/gateway/store.py, content_key). A write whose key equals a live, current
-- memory's in the same namespace stores nothing new and answers that memory. Rows stored
-- before this migration have none (NULL) and are never matched.
ALTER TABLE memories ADD COLUMN content_key text;
CREATE INDEX memories_content_key_idx ON memories (namespace, content_key)
    WHERE content_key IS NOT NULL AND deleted_at IS NULL;

-- Which memory superseded a memory (Memory.superseded_by): read by the target's id.
CREATE INDEX memory_edges_superseded_idx ON memory_edges (dst, created_at DESC)
    WHERE rel_type = 'supersedes';
