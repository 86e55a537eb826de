"""Postgres access: where the database is, the pool.

RECALLMESH_DSN points every process at an external Postgres (>= 15 with the
pgvector extension available). Without it, a service reads the embedded Postgres that
`recallmesh up` runs with its data under RECALLMESH_DATA_DIR/pg (recallmesh.shared.embedded).

The pool bounds every wait (docs/architecture.md, "Admission control"): a caller waits for a
connection at most until its deadline (the RPC's, or a tighter one a core sets with
`deadline()`) and at most RECALLMESH_DB_POOL_TIMEOUT_S; beyond RECALLMESH_DB_POOL_MAX_WAITING
waiters it is refused at once (psycopg_pool.TooManyRequests); a pooled connection is checked
before it is handed out, so none left over from before a Postgres restart is (without a round
trip while it is in use: `Pool.usable`); and every statement runs under the statement and lock
timeouts of its query class (READ, WRITE, ADMIN).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import select
import time
import weakref
from collections.abc import AsyncIterator, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import psycopg
import psycopg.sql
import psycopg_pool
from prometheus_client import Gauge
from psycopg_pool import AsyncConnectionPool

from recallmesh.shared.embedded import NoDatabase, running_embedded_dsn
from recallmesh.shared.errors import (
    InvalidArgument,
    RequestError,
    ResourceExhausted,
    Unavailable,
)
from recallmesh.shared.settings import PoolSettings, configured_dsn, data_dir

log = logging.getLogger(__name__)

# A connection of the services' pools, its rows tuples (psycopg's default row factory).
Conn = psycopg.AsyncConnection[tuple[Any, ...]]


async def one_row(cursor: psycopg.AsyncCursor[tuple[Any, ...]]) -> tuple[Any, ...]:
    """The row of a statement that always returns one (an aggregate, INSERT ... RETURNING, a
    function's value); RuntimeError where it returned none, which is a bug, not an answer."""
    row = await cursor.fetchone()
    if row is None:
        raise RuntimeError("a statement that always returns a row returned none")
    return row

def resolve_dsn() -> str:
    """The DSN a service process should use.

    RECALLMESH_DSN when set; otherwise the embedded Postgres that
    `recallmesh up` runs on RECALLMESH_DATA_DIR/pg. A service never starts
    the embedded server itself (it could not know when to stop it).
    """
    dsn = configured_dsn()
    if dsn:
        return dsn
    pg_root = data_dir() / "pg"
    dsn = running_embedded_dsn(pg_root)
    if dsn is None:
        raise NoDatabase(
            f"no database: RECALLMESH_DSN is not set and no embedded Postgres runs on {pg_root}; "
            "start the stack with `recallmesh up` or point RECALLMESH_DSN at a Postgres"
        )
    return dsn


def redact(dsn: str) -> str:
    """A DSN safe to log (password removed)."""
    try:
        info = psycopg.conninfo.conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return "<unparseable dsn>"
    if "password" in info:
        info["password"] = "***"
    return psycopg.conninfo.make_conninfo("", **{k: v for k, v in info.items() if v is not None})


# The time.monotonic() by which the call being served needs its answer (None: no deadline).
# The bootstrap sets it from the RPC's deadline; a core narrows it with deadline().
_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "recallmesh_deadline", default=None)


def time_left() -> float | None:
    """Seconds the call being served has left (None: no deadline)."""
    at = _DEADLINE.get()
    return None if at is None else at - time.monotonic()


@contextlib.contextmanager
def deadline(seconds: float | None) -> Iterator[None]:
    """Within the block, database waits end `seconds` from now, or at the deadline already
    set when that is sooner (None: leave it as it is)."""
    if seconds is None:
        yield
        return
    at = time.monotonic() + seconds
    outer = _DEADLINE.get()
    token = _DEADLINE.set(at if outer is None else min(at, outer))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


@dataclass(frozen=True)
class QueryClass:
    """Statement and lock timeouts of a kind of work (Postgres statement_timeout and
    lock_timeout): a statement that runs longer, or waits longer for a lock, is cancelled
    (psycopg QueryCanceled / LockNotAvailable: UNAVAILABLE to the caller). A backstop: the
    caller's deadline cancels its statements sooner (a cancelled psycopg call cancels its
    query on the server), these bound what no deadline does (a caller that went away, the
    indexer's loop) and how long anything queues behind a lock."""

    name: str
    statement_timeout_ms: int
    lock_timeout_ms: int


# Recall reads (the legs' searches, hydration, Get, key lookups): no read of a recall may
# outlive the longest budget a client can ask for (recallmesh.wire.validation.MAX_BUDGET_MS,
# 10 s); reads take no row locks, so a lock wait is DDL (a model switch's LOCK TABLE) and is
# cut at 1 s rather than piling recalls up behind it.
READ = QueryClass("read", statement_timeout_ms=10_000, lock_timeout_ms=1_000)
# Writes (Store, StoreBatch, Update, Delete, the indexer's claims and vector writes): one
# statement of a 1,000-memory StoreBatch takes milliseconds; writers of one namespace queue
# on its advisory lock, a wait of 5 s means a stuck writer, not a busy one.
WRITE = QueryClass("write", statement_timeout_ms=15_000, lock_timeout_ms=5_000)
# Admin (purging a memory or a whole namespace): one statement removes a namespace and all
# that was derived from it.
ADMIN = QueryClass("admin", statement_timeout_ms=300_000, lock_timeout_ms=30_000)

# psycopg_pool retries a failed reconnection with a backoff that doubles without a cap (1, 2,
# 4, 8, ... s) until reconnect_timeout: after a long outage the next attempt could come
# minutes after Postgres is back. It gives up after this many seconds instead, and
# _keep_trying starts a fresh attempt (first retry after 1 s again).
RECONNECT_TIMEOUT_S = 5.0
OPEN_TIMEOUT_S = 30.0  # how long a service waits for its database at start-up


class Pool(AsyncConnectionPool):
    """An AsyncConnectionPool whose wait for a connection (when the caller names no timeout)
    ends at the caller's deadline (time_left()), and at the pool's timeout at the latest; and
    whose connections always come back.

    psycopg_pool's `connection()` returns the connection with an awaited putconn() in a
    `finally`. A call cancelled while that putconn() runs (its deadline and the client's
    cancellation land together under overload: a second CancelledError) loses the connection:
    it is neither in the pool nor closed, and the pool still counts it. Enough of those and the
    pool has nothing to hand out, for good: every later call waits, then is refused ("database
    busy"), and the service never recovers (seen in the first bench-overload runs: the gateway
    refused every call at 500 clients and kept refusing after the load stopped). Here the
    return runs shielded: it completes even when the caller is cancelled again."""

    def __init__(self, *args: Any, primary: bool = True, **kwargs: Any) -> None:
        super().__init__(*args, check=self.usable, **kwargs)
        self.primary = primary
        self._checked: weakref.WeakSet[Any] = weakref.WeakSet()  # passed a round-trip check
        self._returned: weakref.WeakKeyDictionary[Any, float] = weakref.WeakKeyDictionary()

    async def usable(self, conn: psycopg.AsyncConnection) -> None:
        """The check before a connection is handed out (raises to have it dropped). A round
        trip (check_primary, or psycopg_pool's own check for a replica's pool) the first time
        a connection is handed out, and again when it has been idle for RECHECK_IDLE_S or its
        socket has something to say (an idle connection's server sends nothing unless it
        closes it or ends it: a restart, a failover, an administrator). Otherwise none: a
        server cannot turn from primary to standby without ending its connections, and a
        round trip on every checkout delayed each of a recall's reads
        (docs/decisions/0026-the-hops-around-the-vector.md)."""
        returned = self._returned.get(conn)
        if (conn in self._checked and returned is not None
                and time.monotonic() - returned < RECHECK_IDLE_S and not _has_input(conn)):
            return
        if self.primary:
            await check_primary(conn)
        else:
            await AsyncConnectionPool.check_connection(conn)
        self._checked.add(conn)

    async def putconn(self, conn: Conn) -> None:
        self._returned[conn] = time.monotonic()
        await super().putconn(conn)

    async def getconn(self, timeout: float | None = None) -> Any:
        if timeout is None:
            timeout = self.timeout
            left = time_left()
            if left is not None:
                timeout = min(timeout, left)
        return await super().getconn(timeout)

    @contextlib.asynccontextmanager
    async def connection(self, timeout: float | None = None) -> AsyncIterator[Any]:
        conn = await self.getconn(timeout=timeout)
        try:
            async with conn:
                yield conn
        finally:
            await asyncio.shield(self.putconn(conn))


# How long a pooled connection may sit idle and still be handed out without a round trip
# (Pool.usable): past it, a network that dropped the connection without a word is found
# before a caller's statement waits on it.
RECHECK_IDLE_S = 5.0


def _has_input(conn: psycopg.AsyncConnection) -> bool:
    """Whether an idle connection's socket is readable: the server closed it or sent an error
    (or the connection is already closed)."""
    if conn.closed or conn.broken:
        return True
    try:
        readable, _, _ = select.select([conn.pgconn.socket], [], [], 0)
    except (OSError, ValueError, psycopg.OperationalError):
        return True
    return bool(readable)


def _session_limits(query_class: QueryClass) -> Any:
    async def configure(conn: psycopg.AsyncConnection) -> None:
        await conn.execute(
            "SELECT set_config('statement_timeout', %s, false), "
            "set_config('lock_timeout', %s, false)",
            (str(query_class.statement_timeout_ms), str(query_class.lock_timeout_ms)))

    return configure


async def limit(conn: psycopg.AsyncConnection, query_class: QueryClass) -> None:
    """Run the rest of the current transaction under `query_class`'s timeouts (SET LOCAL:
    they end with the transaction; the pool's connections keep their own class)."""
    await conn.execute(
        "SELECT set_config('statement_timeout', %s, true), set_config('lock_timeout', %s, true)",
        (str(query_class.statement_timeout_ms), str(query_class.lock_timeout_ms)))


@contextlib.asynccontextmanager
async def transaction(pool: AsyncConnectionPool, query_class: QueryClass
                      ) -> AsyncIterator[psycopg.AsyncConnection]:
    """A pooled connection in a transaction that runs under `query_class`'s timeouts."""
    async with pool.connection() as conn, conn.transaction():
        await limit(conn, query_class)
        yield conn


async def lock_for_write(conn: psycopg.AsyncConnection, namespaces: Iterable[str],
                         ids: Iterable[str] = ()) -> None:
    """The first statement of every transaction that writes memories: its locks, in the one
    order every writer takes them, before any row (recallmesh_lock_for_write, migration 0018):
    the BM25 index's writer lock where pg_textsearch older than 1.1 keeps its own lock to the
    end of the transaction, then the namespaces' write locks, then the memory ids the write
    names. So a transaction that has written a row never waits for another writer's lock, and
    two writers of one id meet here, where waits are seen, timed out and cancelled, never
    inside an index (docs/decisions/0020-write-locks.md)."""
    await conn.execute(LOCK_FOR_WRITE, write_lock_params(namespaces, ids))


# lock_for_write's statement and its parameters, for a synchronous connection too (the re-embed
# run's batches and switch).
LOCK_FOR_WRITE = "SELECT recallmesh_lock_for_write(%s::text[], %s::uuid[])"


def write_lock_params(namespaces: Iterable[str], ids: Iterable[str] = ()
                      ) -> tuple[list[str], list[str]]:
    return sorted(set(namespaces)), sorted(set(ids))


async def _keep_trying(pool: AsyncConnectionPool) -> None:
    """psycopg_pool gave up reconnecting after RECONNECT_TIMEOUT_S: try again from the start
    (check() grows the pool back with a fresh attempt), so the pool comes back by itself
    however long Postgres was away."""
    log.warning("database still unreachable, reconnecting", extra={"pool": pool.name})
    await pool.check()


class Standby(psycopg.OperationalError):
    """A pool that needs the primary was handed a connection to a standby."""


async def check_primary(conn: psycopg.AsyncConnection) -> None:
    """The check a primary pool runs on a connection before handing it out (one round trip,
    as psycopg_pool's own check): it answers, and its server is not a standby. A connection
    opened before a failover to a node that is a standby now, or a DSN without
    target_session_attrs=read-write that landed on one, is dropped and replaced instead of
    failing every write on it (ReadOnlySqlTransaction)."""
    cur = await conn.execute("SELECT pg_is_in_recovery()")
    row = await cur.fetchone()
    if row is None or row[0]:
        log.warning("a primary pool's connection reached a standby: dropped (a RECALLMESH_DSN "
                    "naming several hosts needs target_session_attrs=read-write)")
        raise Standby("the server is a standby (read-only); this pool needs the primary")


async def open_pool(
    dsn: str, settings: PoolSettings | None = None, *, name: str = "db",
    query_class: QueryClass = READ, wait: bool = True, primary: bool = True,
) -> AsyncConnectionPool:
    """The service's pool; its connections run under `query_class`'s timeouts unless a
    transaction asks for another class (`transaction()`, `limit()`). wait=False: return at
    once, the connections are made in the background (a replica that is down at start-up).
    primary: each connection is checked to be on the primary when first handed out
    (check_primary, Pool.usable); False for a replica's pool (recallmesh.shared.replicas)."""
    settings = settings or PoolSettings.from_env()
    pool = Pool(
        dsn,
        min_size=settings.min_size,
        max_size=settings.max_size,
        open=False,
        name=name,
        kwargs={"autocommit": True, "application_name": f"recallmesh-{name}"},
        configure=_session_limits(query_class),
        primary=primary,
        timeout=settings.timeout_s,
        max_waiting=settings.max_waiting,
        reconnect_timeout=RECONNECT_TIMEOUT_S,
        reconnect_failed=_keep_trying,
    )
    await pool.open(wait=wait, timeout=OPEN_TIMEOUT_S)
    log.info("database pool open", extra={"dsn": redact(dsn), "max_size": settings.max_size,
                                           "max_waiting": settings.max_waiting,
                                           "timeout_s": settings.timeout_s,
                                           "query_class": query_class.name})
    return pool


async def unreachable(pool: AsyncConnectionPool | None) -> str:
    """A readiness check: "" when a pooled connection answers `SELECT 1`, else why not."""
    if pool is None:
        return "no database pool"
    try:
        async with pool.connection(timeout=1.0) as conn:
            await conn.execute("SELECT 1")
    except Exception as exc:
        return f"database unreachable: {type(exc).__name__}"
    return ""


STUCK_BACKENDS = Gauge(
    "recallmesh_db_stuck_backends",
    "Database backends seen waiting on an LWLock at every look for longer than the write "
    "path's statement timeout: a wait no timeout, cancel or pg_terminate_backend can end "
    "(docs/decisions/0020-write-locks.md). Above 0, writes may be frozen until Postgres "
    "restarts.")

# The backends of this database whose statement waits on an LWLock now: (pid, statement
# start, wait event, what it runs, abridged). Only backends of roles this one may see (all of
# them where every service shares the database's role).
_LWLOCK_WAITS = """
SELECT pid, query_start, wait_event, left(query, 80) FROM pg_stat_activity
WHERE datname = current_database() AND state = 'active' AND wait_event_type = 'LWLock'
  AND query_start IS NOT NULL
"""


class StuckBackends:
    """The detector of a frozen write path: a backend that waits on an LWLock at every look
    for longer than `after_s` (the write path's statement timeout by default), in one
    statement. An LWLock wait lasts microseconds; one that outlives every statement timeout is
    a wait Postgres cannot end (interrupts held off: an extension holding its lock across
    statements, as pg_textsearch 1.0 does), and every writer that needs the lock queues behind
    it. `check` runs with each readiness check: it sets STUCK_BACKENDS and returns why the
    service is not ready ("" when none is stuck)."""

    def __init__(self, after_s: float = WRITE.statement_timeout_ms / 1000,
                 clock: Any = time.monotonic) -> None:
        self.after_s = after_s
        self.clock = clock
        self._since: dict[tuple[int, Any, str], float] = {}  # first seen waiting, unbroken

    def observe(self, rows: list[tuple[int, Any, str, str]]) -> list[tuple[int, str, str]]:
        """Take one look's rows (_LWLOCK_WAITS); the (pid, wait event, statement) stuck."""
        now = self.clock()
        since = {(pid, started, event): self._since.get((pid, started, event), now)
                 for pid, started, event, _ in rows}
        self._since = since
        stuck = [(pid, event, query) for pid, started, event, query in rows
                 if now - since[(pid, started, event)] >= self.after_s]
        STUCK_BACKENDS.set(len(stuck))
        return stuck

    async def check(self, pool: AsyncConnectionPool) -> str:
        async with pool.connection(timeout=1.0) as conn:
            cur = await conn.execute(_LWLOCK_WAITS)
            stuck = self.observe(await cur.fetchall())
        if not stuck:
            return ""
        events = ", ".join(sorted({event for _, event, _ in stuck}))
        pids = ", ".join(str(pid) for pid, _, _ in stuck[:5])
        return (f"{len(stuck)} database backend(s) have waited on an LWLock ({events}) for "
                f"more than {self.after_s:g} s (pid {pids}): no timeout or cancel can end such "
                "a wait; writes may be frozen until PostgreSQL is restarted "
                "(docs/operations/alerts.md#recallmeshdatabasebackendsstuck)")


def domain_error(exc: BaseException) -> RequestError | None:
    """What a database failure means to the caller; None for anything else (a bug: INTERNAL).

    - psycopg_pool.TooManyRequests (more callers waiting for a connection than the pool's
      max_waiting): RESOURCE_EXHAUSTED, retry after a pause.
    - every other psycopg.OperationalError: UNAVAILABLE, retry. That is the server gone or
      restarting (AdminShutdown, a lost or refused connection), no connection within the
      wait (PoolTimeout), a statement or lock timeout (QueryCanceled, LockNotAvailable), a
      deadlock or serialization failure: none is the request's fault, and a retry may pass.
    - psycopg.errors.ReadOnlySqlTransaction (a write that reached a standby: a failover under
      way): UNAVAILABLE, retry.
    - psycopg.DataError (SQLSTATE class 22, data exceptions: a value out of the range of its
      column's type, one that does not convert; and psycopg's own refusal of a NUL in text):
      INVALID_ARGUMENT, with the reason. Validation
      (recallmesh.wire) refuses or rounds every such value first; this keeps one it missed a
      clear answer to the caller instead of INTERNAL (docs/decisions/0011-hostile-input-rules.md).
    """
    if isinstance(exc, psycopg_pool.TooManyRequests):
        return ResourceExhausted("database busy: too many requests waiting for a connection, "
                                 "retry", reason="db_pool")
    if isinstance(exc, psycopg.OperationalError):
        return Unavailable(f"database unavailable, retry ({type(exc).__name__})")
    if isinstance(exc, psycopg.errors.ReadOnlySqlTransaction):
        # a write reached a standby: the primary is failing over (or the DSN names a standby)
        return Unavailable("database read-only (a standby: failing over?), retry "
                           "(ReadOnlySqlTransaction)")
    if isinstance(exc, psycopg.DataError):  # DataException and psycopg's own (e.g. a NUL)
        reason = exc.diag.message_primary or str(exc) or type(exc).__name__
        return InvalidArgument(f"a value the database cannot store or compare: {reason[:200]}")
    return None
