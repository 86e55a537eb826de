"""The embedding job queue (the outbox): claiming jobs, writing their vectors, recording
their failures.

Every write of a non-sensitive memory enqueues a job in the same transaction (database
triggers, migrations/0002). The indexer
  1. claims due jobs with `FOR UPDATE SKIP LOCKED` and leases them (pushes next_attempt_at
     forward), so several indexers never embed the same row and a crashed one's jobs come
     back after the lease; sensitive memories never get a job, and if one is found anyway,
     its job is dropped and its text is never sent to the embedding service;
  2. in one transaction, takes the batch's namespaces' write locks as every writer does
     (recallmesh.shared.db.lock_for_write: a purge of the namespace waits, so no concept the
     batch links to goes from under it), locks the memories (always before their jobs, the
     same order writers use, so no deadlock), deletes each job only if its version is still
     the one embedded, and writes the vectors of exactly those rows. A memory edited
     meanwhile keeps its (re-versioned) job and is embedded again with its new content; one
     deleted or made sensitive meanwhile gets nothing. A write that fails for a reason that
     may be one memory's (not an outage) is split in halves, recursively, like a poison batch
     (recallmesh/services/indexer/poison.py): the others are written, and the memory that
     fails alone counts a failure of its job;
  3. on failure records the error and backs the jobs off exponentially, capped at
     max_backoff_s; a job whose own text failed counts a failure, and after max_attempts
     failures it is parked (`parked_at`, never claimed again, not pending) with its last
     error, for `recallmesh jobs list|retry|drop`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from psycopg_pool import AsyncConnectionPool

from recallmesh.migrations.vector_schema import vector_literal
from recallmesh.services.indexer.concepts import ConceptWriter, Source
from recallmesh.services.indexer.metrics import JOBS
from recallmesh.services.indexer.poison import ModelMismatch, Round, describe, write_outage
from recallmesh.shared.db import WRITE, lock_for_write, one_row, transaction
from recallmesh.wire.filters import not_deleted

if TYPE_CHECKING:
    from recallmesh.services.graph.extraction import Extraction

# Every log line of the indexer under one logger name, whichever of its modules writes it.
log = logging.getLogger("recallmesh.services.indexer.core")

_CLAIM = """
WITH due AS (
    SELECT memory_id FROM embedding_jobs
    WHERE next_attempt_at <= clock_timestamp() AND parked_at IS NULL
    ORDER BY next_attempt_at, memory_id
    LIMIT %(n)s
    FOR UPDATE SKIP LOCKED
)
UPDATE embedding_jobs j
SET next_attempt_at = clock_timestamp() + make_interval(secs => %(lease_s)s),
    attempts = j.attempts + 1
FROM due
WHERE j.memory_id = due.memory_id
RETURNING j.memory_id::text
"""

# Read after the claim, in a statement of its own: one fresh snapshot, so each
# job's version and its memory's content belong together. (Read inside the
# claim, a concurrent edit could pair the new version with the old text.)
_READ_CLAIMED = """
SELECT j.memory_id::text, j.version, m.content, (m.is_sensitive OR m.deleted_at IS NOT NULL),
       m.namespace, m.tags, m.created_at
FROM embedding_jobs j JOIN memories m ON m.id = j.memory_id
WHERE j.memory_id = ANY(%(ids)s::uuid[])
"""

_LOCK_MEMORIES = "SELECT id FROM memories WHERE id = ANY(%(ids)s::uuid[]) ORDER BY id FOR UPDATE"

_COMPLETE = f"""
WITH done AS (
    DELETE FROM embedding_jobs j
    USING unnest(%(ids)s::uuid[], %(versions)s::bigint[]) AS c(id, version)
    WHERE j.memory_id = c.id AND j.version = c.version
    RETURNING j.memory_id
)
UPDATE memories m
SET embedding = v.embedding::halfvec, embedding_model = %(model)s
FROM unnest(%(ids)s::uuid[], %(vectors)s::text[]) AS v(id, embedding)
WHERE m.id = v.id AND m.id IN (SELECT memory_id FROM done)
  AND NOT m.is_sensitive AND {not_deleted("m")}
RETURNING m.id::text
"""

_DROP = """
DELETE FROM embedding_jobs j
USING unnest(%(ids)s::uuid[], %(versions)s::bigint[]) AS c(id, version)
WHERE j.memory_id = c.id AND j.version = c.version
"""

_BACKOFF = ("clock_timestamp() + make_interval(secs => least(%(max_s)s, "
            "%(base_s)s * power(2, least(greatest(j.attempts - 1, 0), 30))))")

# A failure that is not the jobs' fault (outage, timeout, model mismatch): back off only.
_FAIL = f"""
UPDATE embedding_jobs j
SET next_attempt_at = {_BACKOFF},
    last_error = %(error)s
FROM unnest(%(ids)s::uuid[], %(versions)s::bigint[]) AS c(id, version)
WHERE j.memory_id = c.id AND j.version = c.version AND j.parked_at IS NULL
"""

# The job's own text failed: count it, back off, and park the job at max_attempts.
_POISONED = f"""
UPDATE embedding_jobs j
SET failures = j.failures + 1,
    last_error = c.error,
    parked_at = CASE WHEN j.failures + 1 >= %(max_attempts)s THEN clock_timestamp() END,
    next_attempt_at = CASE WHEN j.failures + 1 >= %(max_attempts)s THEN 'infinity'
                           ELSE {_BACKOFF} END
FROM unnest(%(ids)s::uuid[], %(versions)s::bigint[], %(errors)s::text[])
     AS c(id, version, error)
WHERE j.memory_id = c.id AND j.version = c.version AND j.parked_at IS NULL
RETURNING j.memory_id::text, j.parked_at IS NOT NULL, j.failures
"""


def backoff_s(failures: int, base_s: float, max_s: float) -> float:
    """Exponential backoff after `failures` consecutive failures, capped (the SQL in _FAIL
    applies the same rule per job, exponent capped at 30 there too)."""
    delay: float = min(max_s, base_s * 2 ** min(max(failures - 1, 0), 30))
    return delay


@dataclass
class Claimed:
    """A claimed batch between its embedding turn and its write turn."""

    asked: int
    claimed: int
    dropped: int
    work: list[tuple[str, int, str]]  # (memory id, job version, content)
    sources: list[Source]
    namespaces: dict[str, str]  # memory id -> namespace
    outcome: Round = field(default_factory=Round)
    extractions: list[Extraction] | None = None


async def claim(pool: AsyncConnectionPool, asked: int, lease_s: float) -> Claimed:
    """Claim and lease up to `asked` due jobs and read their memories; drop the jobs of
    sensitive or deleted memories. The batch's work is empty when nothing is left to embed."""
    async with pool.connection() as conn:
        cur = await conn.execute(_CLAIM, {"n": asked, "lease_s": lease_s})
        claimed_ids = [r[0] for r in await cur.fetchall()]
        if not claimed_ids:
            return Claimed(asked, 0, 0, [], [], {})
        cur = await conn.execute(_READ_CLAIMED, {"ids": claimed_ids})
        claimed = await cur.fetchall()  # jobs deleted meanwhile are simply gone
    if not claimed:
        return Claimed(asked, len(claimed_ids), 0, [], [], {})
    skip = [(r[0], r[1]) for r in claimed if r[3]]
    work = [(r[0], r[1], r[2]) for r in claimed if not r[3]]
    sources = [Source(r[0], r[4], r[2], tuple(r[5]), r[6]) for r in claimed if not r[3]]
    if skip:
        async with pool.connection() as conn:
            await conn.execute(
                _DROP, {"ids": [s[0] for s in skip], "versions": [s[1] for s in skip]}
            )
        JOBS.labels("dropped").inc(len(skip))
    return Claimed(asked, len(claimed), len(skip), work, sources,
                   {r[0]: r[4] for r in claimed})


async def write(pool: AsyncConnectionPool, concepts: ConceptWriter | None, batch: Claimed,
                prepared: Any,
                done: list[int], model_id: str) -> int:
    """Write the vectors of work[done] (and their concepts); how many were written. A write
    that fails for a reason that may be a memory's own is split in halves, recursively; a
    memory whose write fails alone is recorded in the batch's outcome.poisoned."""

    async def split(idx: list[int]) -> int:
        try:
            return await _write_rows(pool, concepts, batch, prepared, idx, model_id)
        except Exception as exc:
            if write_outage(exc):
                raise
            if len(idx) > 1:
                mid = len(idx) // 2
                return await split(idx[:mid]) + await split(idx[mid:])
            batch.outcome.poisoned[idx[0]] = f"writing its vector failed: {describe(exc)}"
            return 0

    return await split(done)


async def _write_rows(pool: AsyncConnectionPool, concepts: ConceptWriter | None, batch: Claimed,
                      prepared: Any, done: list[int], model_id: str) -> int:
    """One transaction writing the vectors (and concepts) of work[done]."""
    work, sources, outcome = batch.work, batch.sources, batch.outcome
    ids = [work[i][0] for i in done]
    async with transaction(pool, WRITE) as conn:
        await lock_for_write(conn, {sources[i].namespace for i in done})
        # Vectors of another model than the live one must never be stored
        # (e.g. an embedding service not yet restarted after a model switch).
        cur = await conn.execute("SELECT model_id FROM embedding_space FOR SHARE")
        live = await cur.fetchone()
        if live is None or live[0] != model_id:
            raise ModelMismatch(
                f"embedding service serves {model_id!r}, the database "
                f"holds vectors of {live[0] if live else None!r}"
            )
        await conn.execute(_LOCK_MEMORIES, {"ids": ids})
        cur = await conn.execute(
            _COMPLETE,
            {
                "ids": ids,
                "versions": [work[i][1] for i in done],
                "vectors": [vector_literal(outcome.vectors[i]) for i in done],
                "model": model_id,
            },
        )
        written_ids = {r[0] for r in await cur.fetchall()}
        if concepts is not None and prepared is not None:  # prepared only with concepts
            await concepts.write(conn, prepared, written_ids)
    return len(written_ids)


@dataclass(frozen=True)
class Backoff:
    """How the jobs left of a batch are backed off, and when a poisoned one is parked."""

    base_s: float
    max_s: float
    max_attempts: int


async def record_failures(pool: AsyncConnectionPool, batch: Claimed, poisoned: list[int],
                          retry: list[int],
                          error: str, backoff: Backoff) -> int:
    """Back off the jobs left; count the poisoned ones' failures and park those at
    max_attempts. Returns how many were parked."""
    if not poisoned and not retry:
        return 0
    work, outcome = batch.work, batch.outcome
    delays = {"base_s": backoff.base_s, "max_s": backoff.max_s}
    parked = 0
    async with pool.connection() as conn:
        if retry:
            await conn.execute(_FAIL, {
                "ids": [work[i][0] for i in retry], "versions": [work[i][1] for i in retry],
                "error": error[:1000], **delays})
        if poisoned:
            cur = await conn.execute(_POISONED, {
                "ids": [work[i][0] for i in poisoned],
                "versions": [work[i][1] for i in poisoned],
                "errors": [outcome.poisoned[i][:1000] for i in poisoned],
                "max_attempts": backoff.max_attempts, **delays})
            errors = {work[i][0]: outcome.poisoned[i] for i in poisoned}
            for memory_id, now_parked, failures in await cur.fetchall():
                where = {"memory_id": memory_id,
                         "namespace": batch.namespaces.get(memory_id, ""),
                         "failures": failures, "error": errors.get(memory_id, "")}
                if now_parked:
                    parked += 1
                    log.error("embedding job parked after %d failures of its text",
                              failures, extra=where)
                else:
                    log.warning("embedding failed for one text; will retry", extra={
                        **where, "max_attempts": backoff.max_attempts})
    if parked:
        JOBS.labels("parked").inc(parked)
    return parked


async def count_jobs(pool: AsyncConnectionPool) -> tuple[int, int]:
    """Jobs waiting (parked ones not included) and jobs parked, in all namespaces."""
    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT count(*) FILTER (WHERE parked_at IS NULL), "
            "count(*) FILTER (WHERE parked_at IS NOT NULL) FROM embedding_jobs")
        waiting, parked = await one_row(cur)
    return int(waiting), int(parked)
