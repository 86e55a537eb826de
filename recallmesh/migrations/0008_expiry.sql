-- Expiry: a memory may carry expires_at. From then on it is never read (Get, Recall,
-- hydration and every leg treat it like a deleted memory), and the indexer's sweeper
-- purges it with recallmesh_purge_memory (migration 0007).
ALTER TABLE memories ADD COLUMN expires_at timestamptz;

-- The sweeper's scan: expired rows, oldest first, whether or not soft-deleted.
CREATE INDEX memories_expires_at_idx ON memories (expires_at) WHERE expires_at IS NOT NULL;
