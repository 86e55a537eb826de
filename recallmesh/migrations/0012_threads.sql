-- Threads: the conversation, session or task a memory belongs to, named by the client
-- (Memory.thread; '' = none). Context propagation links a recall hit only to the memories
-- stored right before / after it in the same thread: memories merely stored close in time
-- are not a conversation.
ALTER TABLE memories ADD COLUMN thread text NOT NULL DEFAULT '' CHECK (length(thread) <= 128);

-- A hit's neighbours in its thread, in creation order.
CREATE INDEX memories_thread_idx ON memories (namespace, thread, created_at, id)
    WHERE thread <> '' AND deleted_at IS NULL;
