"""The expiry sweeper: purges memories whose expires_at has passed.

An expired memory is never read (every read treats it like a deleted one, see
recallmesh/wire/filters.py `live`); the sweeper then removes it with everything derived
from it, through recallmesh_purge_memory (migration 0007), in small batches, each in its own
transaction. It runs in the indexer process every RECALLMESH_EXPIRY_SWEEP_S seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from prometheus_client import Counter
from psycopg_pool import AsyncConnectionPool

from recallmesh.shared.db import WRITE, lock_for_write, transaction

log = logging.getLogger(__name__)

EXPIRED_PURGED = Counter(
    "recallmesh_expired_purged_total",
    "Expired memories purged by the indexer's expiry sweeper.",
)

SWEEP_BATCH = 50  # memories purged per transaction
MAX_BATCHES = 200  # per sweep; the rest waits for the next sweep (keeps a sweep short)

_DUE = """
SELECT namespace, id::text FROM memories
WHERE expires_at IS NOT NULL AND expires_at <= now()
ORDER BY expires_at, id
LIMIT %s
"""
# Re-checked inside the purging transaction: only a memory still there and still expired.
_PURGE = """
SELECT recallmesh_purge_memory(namespace, id) FROM memories
WHERE namespace = %s AND id = %s AND expires_at <= now()
"""


async def sweep_expired(pool: AsyncConnectionPool, batch: int = SWEEP_BATCH,
                        max_batches: int = MAX_BATCHES) -> int:
    """Purge memories that have expired; how many were purged."""
    purged = 0
    for _ in range(max_batches):
        async with pool.connection() as conn:
            cur = await conn.execute(_DUE, (batch,))
            due = await cur.fetchall()
        if not due:
            break
        # Every namespace's write lock first, in the one order every writer takes them
        # (lock_for_write): the sweeper never waits for a writer after its first purge.
        done = 0
        async with transaction(pool, WRITE) as conn:
            await lock_for_write(conn, {ns for ns, _ in due})
            for ns, memory_id in sorted(due):
                cur = await conn.execute(_PURGE, (ns, memory_id))
                row = await cur.fetchone()
                done += bool(row and row[0])
        purged += done
        EXPIRED_PURGED.inc(done)
        if len(due) < batch:
            break
    return purged


async def run_sweeper(pool: AsyncConnectionPool, stop: asyncio.Event, every_s: float) -> None:
    """Sweep every `every_s` seconds until `stop`; a failed sweep is logged and retried."""
    while not stop.is_set():
        started = time.monotonic()
        try:
            purged = await sweep_expired(pool)
        except Exception:  # database unavailable: keep the process, try again next time
            log.exception("expiry sweep failed")
        else:
            if purged:
                log.info("expired memories purged", extra={
                    "purged": purged,
                    "seconds": round(time.monotonic() - started, 3)})
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), every_s)
