"""Reads from a streaming replica, with the primary as the fallback (RECALLMESH_READ_DSN).

A service that reads (the legs' searches, the gateway's hydration) runs each read through
`Reads.run`: on the replica pool while the replica answers and has replayed what the primary had
written at most RECALLMESH_READ_MAX_LAG_S ago, else on the primary pool. Writes, the outbox,
key lookups and every read that must see the caller's own write (Get, List, History, Export)
stay on the primary pool; they never come here.

How "behind" is measured: every RECALLMESH_READ_CHECK_S a watcher notes the primary's flushed
WAL position and asks the replica how far it has replayed. The replica's lag is the age of the
oldest noted primary position it has not yet replayed (0 when it has replayed all of them; on
an idle primary it is 0, not the time since the last transaction). A standby that stopped
receiving WAL shows the lag growing, not a frozen 0.

When reads leave the replica:
  - the replica does not answer the watcher, or a connection to it is not handed out within
    RECALLMESH_READ_REPLICA_WAIT_S: down;
  - its lag passes RECALLMESH_READ_MAX_LAG_S: lagging;
  - a read on it fails with a database error (a lost connection, a statement cancelled by a
    recovery conflict): `run` repeats that read once on the primary, and reads stay on the
    primary until the watcher finds the replica healthy again.
None of these fails a read. The host in the read DSN that turns out to be a primary (after a
failover a promoted replica keeps its address) is read from as it is: lag 0.

Read-your-writes: a write the caller waits for (IndexWait) is acknowledged once the replica has
replayed past the WAL position after it (`replayed`), so the recall that follows finds it there.
The replica the read pool reaches is asked (its replay position, exactly); where the primary
shows its standbys' positions (pg_stat_replication, visible to roles with pg_read_all_stats or
pg_monitor), every streaming standby must also have flushed it (their replay positions are
reported up to 10 s late; a flushed write is replayed within milliseconds).

Metrics (every process with a read DSN):
  recallmesh_db_replica_lag_seconds  the watcher's lag (gauge)
  recallmesh_db_replica_lag_bytes    primary WAL position minus the replica's replay position
  recallmesh_db_replica_usable       1 while reads go to the replica
  recallmesh_db_reads_total{target}  reads served by the replica or the primary
  recallmesh_db_replica_fallbacks_total{reason}  reads sent to the primary: down, lagging, error
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeAlias, TypeVar

import psycopg
from prometheus_client import Counter, Gauge
from psycopg_pool import AsyncConnectionPool

from recallmesh.shared.db import Conn, one_row, open_pool, redact, time_left
from recallmesh.shared.settings import ReadSettings

log = logging.getLogger(__name__)

T = TypeVar("T")

REPLICA_LAG_SECONDS = Gauge(
    "recallmesh_db_replica_lag_seconds",
    "How long ago the primary had written WAL the read replica has not replayed yet "
    "(0: caught up)")
REPLICA_LAG_BYTES = Gauge(
    "recallmesh_db_replica_lag_bytes",
    "The primary's WAL position minus the read replica's replay position, in bytes")
REPLICA_USABLE = Gauge(
    "recallmesh_db_replica_usable",
    "1 while reads go to the read replica, 0 while they go to the primary")
READS = Counter("recallmesh_db_reads_total",
                "Reads by where they were served: replica or primary", ["target"])
FALLBACKS = Counter("recallmesh_db_replica_fallbacks_total",
                    "Reads sent to the primary although a read DSN is set, by why: the replica "
                    "is down, lagging, or a read on it failed (error)", ["reason"])
FALLBACK_REASONS = ("down", "lagging", "error")


def export_read_zeros() -> None:
    """Every series at zero from the start (an alert on a rate needs the series)."""
    for target in ("replica", "primary"):
        READS.labels(target)
    for reason in FALLBACK_REASONS:
        FALLBACKS.labels(reason)


def lsn_int(lsn: str) -> int:
    """A pg_lsn's text ("16/B374D848") as a byte position."""
    high, _, low = lsn.partition("/")
    return (int(high, 16) << 32) + int(low, 16)


@dataclass
class ReplicaState:
    """What the watcher last saw: why reads leave the replica ("" when they do not)."""

    unusable: str = "down"  # "", "down" or "lagging"
    lag_s: float = 0.0
    lag_bytes: int = 0
    since: float = 0.0  # when reads last moved (to the primary or back)


class LagClock:
    """The replica's lag in seconds from the primary's WAL positions noted at each check: the
    age of the oldest noted position the replica has not replayed yet."""

    def __init__(self, keep: int = 10_000) -> None:
        self._noted: deque[tuple[float, int]] = deque(maxlen=keep)

    def lag(self, now: float, primary_lsn: int, replayed: int) -> float:
        if not self._noted or self._noted[-1][1] < primary_lsn:
            self._noted.append((now, primary_lsn))
        while self._noted and self._noted[0][1] <= replayed:
            self._noted.popleft()
        return now - self._noted[0][0] if self._noted else 0.0


_REPLICA_POSITION = ("SELECT pg_is_in_recovery(), "
                     "coalesce(pg_last_wal_replay_lsn(), '0/0'::pg_lsn)::text")
# The primary's WAL flushed to disk: every transaction whose commit has returned is in it (no
# recallmesh statement turns synchronous_commit off), and nothing a standby cannot receive yet
# is (the WAL written but not flushed, e.g. of transactions still running, is sent only after
# the WAL writer flushes it, up to wal_writer_delay later).
_PRIMARY_POSITION = "SELECT pg_current_wal_flush_lsn()::text"
# The standbys' flush positions as the primary sees them (NULL without pg_read_all_stats). A
# standby reports its flush position as soon as it flushed, its replay position only with its
# next report (up to wal_receiver_status_interval, 10 s, later on an idle primary): only the
# flush position is current enough to wait on.
_STANDBYS = ("SELECT count(*), count(flush_lsn), min(flush_lsn)::text "
             "FROM pg_stat_replication WHERE state = 'streaming'")


class Reads:
    """Connections for reads: the replica's while it is usable, else the primary's. Without a
    replica every read goes to the primary (the default: no RECALLMESH_READ_DSN)."""

    def __init__(self, primary: AsyncConnectionPool, replica: AsyncConnectionPool | None = None,
                 settings: ReadSettings | None = None) -> None:
        self.primary = primary
        self.replica = replica
        self.settings = settings or ReadSettings()
        self.state = ReplicaState()
        self._clock = LagClock()
        self._watcher: asyncio.Task[None] | None = None

    @classmethod
    async def open(cls, primary: AsyncConnectionPool, name: str,
                   settings: ReadSettings | None = None) -> Reads:
        """Reads for a service whose primary pool is open: with a replica pool (opened without
        waiting: a replica that is down at start-up leaves reads on the primary) when the
        settings name a read DSN, and its watcher running."""
        settings = settings or ReadSettings.from_env()
        export_read_zeros()
        if not settings.dsn:
            return cls(primary, None, settings)
        replica = await open_pool(settings.dsn, name=f"{name}-read", wait=False, primary=False)
        reads = cls(primary, replica, settings)
        await reads.check()
        reads._watcher = asyncio.create_task(reads._watch())
        log.info("reads from a replica", extra={"dsn": redact(settings.dsn),
                                                "max_lag_s": settings.max_lag_s,
                                                "usable": not reads.state.unusable})
        return reads

    @property
    def on_replica(self) -> bool:
        return self.replica is not None and not self.state.unusable

    async def close(self) -> None:
        """Stop the watcher and close the replica pool (the primary pool is its owner's)."""
        if self._watcher is not None:
            self._watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watcher
        if self.replica is not None:
            await self.replica.close()

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(self.settings.check_interval_s)
            try:
                await self.check()
            except asyncio.CancelledError:
                raise
            except Exception:  # never let the watcher die: the next check tries again
                log.exception("replica check failed")

    def _replica_pool(self) -> AsyncConnectionPool:
        """The replica's pool (asked only of reads that have one: `on_replica`, `check`)."""
        if self.replica is None:
            raise RuntimeError("these reads have no replica")
        return self.replica

    async def _replica_position(self) -> tuple[bool, int]:
        """Whether the read host is in recovery, and the position it has replayed up to."""
        async with self._replica_pool().connection(timeout=self.settings.replica_wait_s) as conn:
            in_recovery, replayed = await one_row(await conn.execute(_REPLICA_POSITION))
        return bool(in_recovery), lsn_int(replayed)

    async def check(self) -> ReplicaState:
        """Ask the primary and the replica where they are; set the state and the gauges."""
        now = time.monotonic()
        try:
            in_recovery, replayed = await self._replica_position()
        except Exception as exc:
            self._set(ReplicaState("down"), type(exc).__name__)
            return self.state
        if not in_recovery:  # the read host is itself a primary (e.g. promoted): no lag
            self._set(ReplicaState(""))
            return self.state
        try:
            primary_lsn = lsn_int(await wal_position(self.primary,
                                                     self.settings.replica_wait_s))
        except psycopg.Error:
            # the primary is away (failing over?): the replica's data is what there is
            self._set(ReplicaState("", self.state.lag_s, self.state.lag_bytes))
            return self.state
        lag_s = self._clock.lag(now, primary_lsn, replayed)
        unusable = "lagging" if lag_s > self.settings.max_lag_s else ""
        self._set(ReplicaState(unusable, lag_s, max(primary_lsn - replayed, 0)))
        return self.state

    def _set(self, state: ReplicaState, why: str = "") -> None:
        moved = bool(state.unusable) != bool(self.state.unusable)
        state.since = time.monotonic() if moved else self.state.since
        if state.unusable != self.state.unusable:
            log.warning("reads moved to the primary" if state.unusable else
                        "reads back on the replica",
                        extra={"reason": state.unusable or "healthy", "error": why,
                               "lag_s": round(state.lag_s, 3)})
        self.state = state
        REPLICA_LAG_SECONDS.set(state.lag_s)
        REPLICA_LAG_BYTES.set(state.lag_bytes)
        REPLICA_USABLE.set(0 if state.unusable else 1)

    def _fallback(self, reason: str = "") -> None:
        if self.replica is not None:
            FALLBACKS.labels(reason or self.state.unusable or "error").inc()
        READS.labels("primary").inc()

    async def _replica_conn(self) -> Conn | None:
        """A replica connection, or None (and the replica marked down) when none comes."""
        try:
            return await self._replica_pool().getconn(timeout=self.settings.replica_wait_s)
        except Exception as exc:
            self._mark_down(type(exc).__name__)
            return None

    def _mark_down(self, why: str) -> None:
        self._set(ReplicaState("down", self.state.lag_s, self.state.lag_bytes), why)

    async def run(self, read: Callable[[Conn], Awaitable[T]]) -> T:
        """`read` on a read connection; when it fails on the replica with a database error
        and the caller has time left, once more on the primary."""
        conn = await self._replica_conn() if self.on_replica else None
        if conn is not None:
            READS.labels("replica").inc()
            try:
                async with conn:
                    return await read(conn)
            except psycopg.OperationalError as exc:
                self._mark_down(type(exc).__name__)
                left = time_left()
                if left is not None and left <= 0:
                    raise
                log.warning("read failed on the replica, repeated on the primary",
                            extra={"error": type(exc).__name__})
            finally:
                await asyncio.shield(self._replica_pool().putconn(conn))
            self._fallback("error")
        else:
            self._fallback()
        async with self.primary.connection() as conn:
            return await read(conn)

    @property
    def moved_everywhere_s(self) -> float:
        """How long after this process moved its reads off the replica every other process
        reading from it has too: each sees the same lag growing, checks once an interval, and
        measures from positions noted up to an interval apart."""
        return 2 * self.settings.check_interval_s + self.settings.replica_wait_s

    async def replayed(self, lsn: str, timeout_s: float) -> bool:
        """Wait until reads see everything up to the primary's WAL position `lsn` (text): the
        replica the read pool reaches has replayed past it, and every streaming standby has
        flushed it where the primary shows their positions; or reads have left the replica here for
        long enough that they have in every other process (`moved_everywhere_s`: the legs
        decide for themselves). False when timeout_s passes first."""
        target = lsn_int(lsn)
        deadline_at = time.monotonic() + timeout_s
        delay = 0.002
        while True:
            if self.replica is None:
                return True
            if not self.on_replica:
                if time.monotonic() - self.state.since >= self.moved_everywhere_s:
                    return True
            elif await self._replayed(target):
                return True
            remaining = deadline_at - time.monotonic()
            if remaining <= 0:
                return False
            await asyncio.sleep(min(delay, remaining))
            delay = min(delay * 2, 0.05)

    async def _replayed(self, target: int) -> bool:
        try:
            in_recovery, replayed = await self._replica_position()
        except Exception:
            return False
        if in_recovery and replayed < target:
            return False
        async with self.primary.connection() as conn:
            standbys, visible, oldest = await one_row(await conn.execute(_STANDBYS))
        return not (standbys and visible == standbys) or lsn_int(oldest) >= target


async def wal_position(pool: AsyncConnectionPool, timeout_s: float | None = None) -> str:
    """The primary's flushed WAL position (text): every transaction committed before the call
    is at or before it. timeout_s: the longest wait for a connection (None: the pool's)."""
    async with pool.connection(timeout=timeout_s) as conn:
        row = await one_row(await conn.execute(_PRIMARY_POSITION))
    return str(row[0])


# What a leg reads through: Reads, or a plain pool all of whose reads go to it (a test's, a
# benchmark's).
ReadSource: TypeAlias = Reads | AsyncConnectionPool


def as_reads(source: ReadSource) -> Reads:
    """`source` as Reads: itself, or a plain pool all of whose reads go to it."""
    return source if isinstance(source, Reads) else Reads(source)
