"""Memory persistence: MemoryStore, the gateway's one handle on the memories' tables.

Its writes (store, batch store, update, delete, purge) are MemoryWrites
(recallmesh/gateway/store_writes.py), with the duplicate rule and the writer's view in
recallmesh/gateway/write_keys.py; its reads (get, pinned, hydrate, neighbours, similar pairs)
are MemoryReads (recallmesh/gateway/store_reads.py). Here: the pools they run on, and the
waits a write may ask for (indexing, replicas) and the schema's version.

Plain async psycopg over a pool; no gRPC here. Every statement is scoped to a
namespace, so an id from another namespace behaves exactly like an unknown id. Reads run
under the pool's READ timeouts, writes under WRITE's and purges under ADMIN's
(recallmesh/shared/db.py).
"""

from __future__ import annotations

import asyncio
import time

from psycopg_pool import AsyncConnectionPool

from recallmesh.gateway.settings import NamespaceTTL
from recallmesh.gateway.store_reads import MemoryReads
from recallmesh.gateway.store_writes import MemoryWrites
from recallmesh.shared.db import one_row
from recallmesh.shared.replicas import Reads, as_reads, wal_position


class MemoryStore(MemoryWrites, MemoryReads):
    """The memories of every namespace: writes on `pool` (the primary), a recall's reads on
    `reads`, a write's default expiry from `namespace_ttl`."""

    def __init__(self, pool: AsyncConnectionPool, namespace_ttl: NamespaceTTL | None = None,
                 reads: Reads | None = None) -> None:
        self.pool = pool  # the primary: writes and the reads that must see them
        # a recall's reads (hydration, pins, neighbours): a replica's when one is set
        self.reads = reads or as_reads(pool)
        self.namespace_ttl = namespace_ttl or NamespaceTTL()

    async def index_jobs(self, memory_ids: list[str]) -> tuple[int, int]:
        """Embedding jobs of memory_ids: (waiting, parked). A parked job (its text failed the
        embedding RECALLMESH_INDEXER_MAX_ATTEMPTS times) is not retried until an operator
        runs `recallmesh jobs retry`: its memory is found lexically only."""
        async with self.pool.connection() as conn:
            cur = await conn.execute(
                "SELECT count(*) FILTER (WHERE parked_at IS NULL), "
                "count(*) FILTER (WHERE parked_at IS NOT NULL) "
                "FROM embedding_jobs WHERE memory_id = ANY(%s::uuid[])",
                (memory_ids,),
            )
            waiting, parked = await one_row(cur)
            return int(waiting), int(parked)

    async def pending_index(self, memory_ids: list[str]) -> int:
        """How many of memory_ids lack their vector and still have a job (parked included)."""
        return sum(await self.index_jobs(memory_ids))

    async def wait_indexed(self, memory_ids: list[str], timeout_s: float) -> bool:
        """Poll until no job is left to try for memory_ids, or timeout_s passes. True when no
        job is left at all; False after the timeout, or at once when the only jobs left are
        parked (no wait could end them)."""
        deadline = time.monotonic() + timeout_s
        delay = 0.01
        while True:
            waiting, parked = await self.index_jobs(memory_ids)
            if waiting == 0:
                return parked == 0
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            await asyncio.sleep(min(delay, remaining))
            delay = min(delay * 1.5, 0.1)

    async def visible_to_reads(self, timeout_s: float) -> bool:
        """Wait until a recall's reads see every write committed before the call: at once
        without a read replica, else until the replicas replayed past the primary's WAL
        position now (recallmesh.shared.replicas). False when timeout_s passes first."""
        if self.reads.replica is None:
            return True
        return await self.reads.replayed(await wal_position(self.pool), timeout_s)

    async def schema_version(self) -> int:
        async with self.pool.connection() as conn:
            cur = await conn.execute("SELECT to_regclass('schema_migrations')")
            if (await one_row(cur))[0] is None:
                return 0
            cur = await conn.execute("SELECT coalesce(max(version), 0) FROM schema_migrations")
            row = await one_row(cur)
            return int(row[0])
