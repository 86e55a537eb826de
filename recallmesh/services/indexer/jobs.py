"""Parked embedding jobs: list, retry, drop (`recallmesh jobs ...`, straight SQL on the DSN).

A job is parked by the indexer (recallmesh/services/indexer/queue.py) after its own text failed the
embedding RECALLMESH_INDEXER_MAX_ATTEMPTS times. Its memory is stored and found lexically,
but has no vector. An operator then either
  - retries it (`retry`): the job is enqueued afresh (recallmesh_enqueue_embedding_jobs,
    migration 0010: new version, attempts and failures 0, due now, the indexer notified), for
    example after the embedding service was fixed or its model changed; or
  - drops it (`drop`): the job is deleted, the memory stays lexical-only for good (until its
    content is edited, which enqueues a new job).
Only parked jobs are touched; a job the indexer is working on is never changed here.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import psycopg

from recallmesh.wire.filters import not_deleted


@dataclass(frozen=True)
class ParkedJob:
    memory_id: str
    namespace: str
    failures: int  # failed attempts of its own text (the last one parked it)
    attempts: int  # claims since it was last enqueued (outages included)
    enqueued_at: datetime
    parked_at: datetime
    last_error: str


class NotParked(ValueError):
    """Some of the given memory ids have no parked job (nothing was changed)."""

    def __init__(self, ids: list[str]) -> None:
        super().__init__("no parked embedding job for: " + ", ".join(ids))
        self.ids = ids


_SELECT = """
SELECT j.memory_id::text, m.namespace, j.failures, j.attempts, j.enqueued_at, j.parked_at,
       coalesce(j.last_error, '')
FROM embedding_jobs j JOIN memories m ON m.id = j.memory_id
WHERE j.parked_at IS NOT NULL
  AND (%(ns)s::text IS NULL OR m.namespace = %(ns)s)
  AND (%(ids)s::uuid[] IS NULL OR j.memory_id = ANY(%(ids)s::uuid[]))
"""


def count_parked(conn: psycopg.Connection, namespace: str | None = None) -> int:
    row = conn.execute(
        "SELECT count(*) FROM embedding_jobs j JOIN memories m ON m.id = j.memory_id "
        "WHERE j.parked_at IS NOT NULL AND (%(ns)s::text IS NULL OR m.namespace = %(ns)s)",
        {"ns": namespace}).fetchone()
    assert row is not None  # an aggregate / function call: always one row
    return int(row[0])


def list_parked(conn: psycopg.Connection, namespace: str | None = None,
                limit: int = 100) -> list[ParkedJob]:
    """Parked jobs, oldest parked first (at most `limit`)."""
    rows = conn.execute(_SELECT + " ORDER BY j.parked_at, j.memory_id LIMIT %(limit)s",
                        {"ns": namespace, "ids": None, "limit": limit}).fetchall()
    return [ParkedJob(*row) for row in rows]


def _pick(conn: psycopg.Connection, ids: list[str] | None,
          namespace: str | None) -> list[str]:
    """Lock the parked jobs to act on: `ids` (all of them must be parked, else NotParked), or
    every parked job (of `namespace`, if given) when ids is None."""
    rows = conn.execute(_SELECT + " ORDER BY j.memory_id FOR UPDATE OF j",
                        {"ns": namespace, "ids": ids}).fetchall()
    found = [r[0] for r in rows]
    if ids is not None:
        missing = sorted({str(i).lower() for i in ids} - set(found))
        if missing:
            raise NotParked(missing)
    return found


def retry(conn: psycopg.Connection, ids: list[str] | None = None,
          namespace: str | None = None) -> list[str]:
    """Enqueue parked jobs afresh; the memory ids re-queued. All or nothing."""
    with conn.transaction():
        picked = _pick(conn, ids, namespace)
        if picked:
            conn.execute("SELECT recallmesh_enqueue_embedding_jobs(%s::uuid[])", (picked,))
    return picked


def drop(conn: psycopg.Connection, ids: list[str] | None = None,
         namespace: str | None = None) -> list[str]:
    """Delete parked jobs: their memories stay without a vector (found lexically only).
    The memory ids whose job was dropped. All or nothing."""
    with conn.transaction():
        picked = _pick(conn, ids, namespace)
        if picked:
            conn.execute("DELETE FROM embedding_jobs WHERE memory_id = ANY(%s::uuid[]) "
                         "AND parked_at IS NOT NULL", (picked,))
    return picked


def queue_for_concepts(conn: psycopg.Connection, namespace: str | None = None) -> int:
    """Enqueue every live ordinary memory (of `namespace`, if given) that has no concept link,
    so the indexer embeds it again and extracts its concepts: the memories stored while
    extraction was off, once the graph leg is turned on (docs/decisions/0025). A memory in
    which the extractor finds nothing is queued again by a later call. How many were queued."""
    with conn.transaction():
        rows = conn.execute(
            f"SELECT m.id FROM memories m WHERE {not_deleted('m')} AND NOT m.is_sensitive "
            "AND (%(ns)s::text IS NULL OR m.namespace = %(ns)s) AND NOT EXISTS "
            "(SELECT 1 FROM memory_concepts c WHERE c.memory_id = m.id) ORDER BY m.id",
            {"ns": namespace}).fetchall()
        ids = [r[0] for r in rows]
        if ids:
            conn.execute("SELECT recallmesh_enqueue_embedding_jobs(%s::uuid[])", (ids,))
    return len(ids)
