-- Poison jobs (recallmesh/indexer/core.py): a job whose own text makes the embedding fail
-- is retried with a per-job backoff and, after RECALLMESH_INDEXER_MAX_ATTEMPTS such failures,
-- parked with its last error instead of being retried forever.
--
-- `failures` counts the failed attempts that were the text's own fault: the embedding of
-- this one text failed (the indexer splits a failing batch until the bad text is alone)
-- while the service embedded other texts. Outages (UNAVAILABLE, timeouts, refusals, a model
-- mismatch) never count here; `attempts` (claims since the last enqueue) still counts them.
-- `parked_at` is set when the job is parked: it is then never claimed again (next_attempt_at
-- 'infinity'), does not count as pending, and waits for `recallmesh jobs retry|drop`.
ALTER TABLE embedding_jobs
    ADD COLUMN failures integer NOT NULL DEFAULT 0,
    ADD COLUMN parked_at timestamptz;

CREATE INDEX embedding_jobs_parked_idx ON embedding_jobs (parked_at)
    WHERE parked_at IS NOT NULL;

-- The one definition of "enqueue" (migration 0002), now also un-parking: an edited memory
-- (new content), a model switch and `recallmesh jobs retry` give a parked job a fresh start.
CREATE OR REPLACE FUNCTION recallmesh_enqueue_embedding_jobs(ids uuid[]) RETURNS void
    LANGUAGE sql AS $$
    INSERT INTO embedding_jobs (memory_id) SELECT DISTINCT unnest(ids)
    ON CONFLICT (memory_id) DO UPDATE
        SET version = nextval('embedding_job_version_seq'),
            enqueued_at = clock_timestamp(),
            next_attempt_at = clock_timestamp(),
            attempts = 0,
            last_error = NULL,
            failures = 0,
            parked_at = NULL;
    -- Delivered at commit; identical notifications in one transaction fold into one.
    SELECT pg_notify('recallmesh_embedding_jobs', '');
$$;
