"""The services' database pool bounds every wait (recallmesh/shared/db.py): a caller waits
for a connection until its deadline at most, beyond max_waiting it is refused at once,
connections are checked before they are handed out, and statements run under the statement
and lock timeouts of their query class. Real Postgres."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import psycopg
import psycopg_pool
import pytest

from recallmesh.shared.db import ADMIN, WRITE, deadline, open_pool, transaction
from recallmesh.shared.settings import PoolSettings

pytestmark = pytest.mark.integration


async def first_row(cursor: psycopg.AsyncCursor[tuple[Any, ...]]) -> tuple[Any, ...]:
    """The row a query returned (a query in a test that returns none fails it)."""
    row = await cursor.fetchone()
    assert row is not None
    return row


async def settings_of(conn: psycopg.AsyncConnection) -> tuple[str, str]:
    cur = await conn.execute("SELECT current_setting('statement_timeout'), "
                             "current_setting('lock_timeout')")
    return await first_row(cur)


async def test_a_callers_wait_for_a_connection_ends_at_its_deadline(dsn: str) -> None:
    pool = await open_pool(dsn, PoolSettings(1, 1, timeout_s=1.5, max_waiting=4), name="t1")
    try:
        held = await pool.getconn()
        try:
            started = time.monotonic()
            with deadline(0.2), pytest.raises(psycopg_pool.PoolTimeout):
                async with pool.connection():
                    pass
            assert time.monotonic() - started < 0.6
            started = time.monotonic()
            with pytest.raises(psycopg_pool.PoolTimeout):  # no deadline: the pool's timeout
                async with pool.connection():
                    pass
            assert 1.3 < time.monotonic() - started < 2.5
        finally:
            await pool.putconn(held)
    finally:
        await pool.close()


async def test_beyond_max_waiting_a_caller_is_refused_at_once(dsn: str) -> None:
    pool = await open_pool(dsn, PoolSettings(1, 1, timeout_s=2.0, max_waiting=1), name="t2")
    try:
        held = await pool.getconn()
        waiter = asyncio.ensure_future(pool.getconn())
        await asyncio.sleep(0.1)
        started = time.monotonic()
        with pytest.raises(psycopg_pool.TooManyRequests):
            await pool.getconn()
        assert time.monotonic() - started < 0.1
        await pool.putconn(held)
        await pool.putconn(await waiter)  # the one that waited got it
    finally:
        await pool.close()


async def test_statements_run_under_their_query_class(dsn: str) -> None:
    pool = await open_pool(dsn, PoolSettings(1, 2), name="t3")
    try:
        async with pool.connection() as conn:
            assert await settings_of(conn) == ("10s", "1s")  # READ, the pool's own class
        async with transaction(pool, WRITE) as conn:
            assert await settings_of(conn) == ("15s", "5s")
        async with transaction(pool, ADMIN) as conn:
            assert await settings_of(conn) == ("5min", "30s")
        async with pool.connection() as conn:  # SET LOCAL ended with the transaction
            assert await settings_of(conn) == ("10s", "1s")
        async with pool.connection() as conn:
            with pytest.raises(psycopg.errors.QueryCanceled):
                async with conn.transaction():
                    await conn.execute("SET LOCAL statement_timeout = 50")
                    await conn.execute("SELECT pg_sleep(1)")
    finally:
        await pool.close()


async def test_a_connection_killed_on_the_server_is_not_handed_out(dsn: str) -> None:
    pool = await open_pool(dsn, PoolSettings(1, 1), name="t4")
    try:
        async with pool.connection() as conn:
            pid = (await first_row(await conn.execute("SELECT pg_backend_pid()")))[0]
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        await asyncio.sleep(0.1)
        async with pool.connection() as conn:  # checked: a fresh one replaces the dead one
            again = (await first_row(await conn.execute("SELECT pg_backend_pid()")))[0]
        assert again != pid
    finally:
        await pool.close()


async def test_a_connection_comes_back_even_when_its_caller_is_cancelled_while_returning_it(
        dsn: str) -> None:
    """A call cancelled twice (its deadline, then the client's cancellation) while its
    connection goes back to the pool must not lose that connection: with one connection, the
    next caller gets it at once."""
    pool = await open_pool(dsn, PoolSettings(min_size=1, max_size=1, timeout_s=1.0,
                                             max_waiting=4), name="returns")
    returning = asyncio.Event()
    original = pool.putconn

    # widen the window a cancellation can land in
    async def slow_putconn(conn: psycopg.AsyncConnection) -> None:
        returning.set()
        await asyncio.sleep(0.2)
        await original(conn)

    pool.putconn = slow_putconn  # type: ignore[method-assign]  # on this pool only
    try:
        async def use() -> None:
            async with pool.connection() as conn:
                await conn.execute("SELECT 1")

        for _ in range(3):
            returning.clear()
            task = asyncio.ensure_future(use())
            await returning.wait()  # the body is done; the connection is being returned
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            async with pool.connection(timeout=1.0) as conn:  # the one connection is back
                assert (await first_row(await conn.execute("SELECT 1")))[0] == 1
    finally:
        pool.putconn = original  # type: ignore[method-assign]  # putconn restored
        await pool.close()
