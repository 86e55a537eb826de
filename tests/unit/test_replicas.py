"""The read routing's plain parts (recallmesh/shared/replicas.py): the lag clock, WAL positions,
the settings, and where `run` sends a read when the replica fails it. The real replica is in
tests/integration/test_read_replica.py."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, cast

import psycopg
import pytest
from hypothesis import given
from hypothesis import strategies as st
from psycopg_pool import AsyncConnectionPool

from recallmesh.shared.replicas import LagClock, Reads, ReplicaState, lsn_int
from recallmesh.shared.settings import ConfigError, ReadSettings


def test_lsn_text_to_bytes() -> None:
    assert lsn_int("0/0") == 0
    assert lsn_int("0/16B3748") == 0x16B3748
    assert lsn_int("16/B374D848") == (0x16 << 32) + 0xB374D848
    assert lsn_int("1/0") > lsn_int("0/FFFFFFFF")


def test_lag_is_the_age_of_the_oldest_position_not_replayed() -> None:
    clock = LagClock()
    assert clock.lag(10.0, 100, 100) == 0.0  # caught up
    assert clock.lag(11.0, 200, 100) == 0.0  # 200 noted now: not old yet
    assert clock.lag(12.0, 300, 100) == 1.0  # 200, noted at 11, still not replayed
    assert clock.lag(13.0, 300, 250) == 1.0  # 300 was noted at 12
    assert clock.lag(14.0, 300, 300) == 0.0


def test_an_idle_primary_is_no_lag() -> None:
    clock = LagClock()
    for t in range(100):  # nothing written for 100 s: the position does not move
        assert clock.lag(float(t), 500, 500) == 0.0


def test_a_standby_that_stopped_receiving_lags_more_and_more() -> None:
    clock = LagClock()
    lags = [clock.lag(float(t), 1000 + t, 1000) for t in range(1, 10)]
    assert lags == sorted(lags) and lags[-1] == 8.0


@given(st.lists(st.tuples(st.integers(0, 50), st.integers(0, 50)), min_size=1, max_size=40))
def test_lag_bounds(steps: list[tuple[int, int]]) -> None:
    """Whatever the positions: never negative, 0 once everything noted is replayed, and never
    more than the time since the first check."""
    clock = LagClock()
    primary = replayed = 0
    for t, (wrote, replay) in enumerate(steps):
        primary += wrote
        replayed = min(primary, replayed + replay)
        lag = clock.lag(float(t), primary, replayed)
        assert 0.0 <= lag <= t
        if replayed == primary:
            assert lag == 0.0


def test_settings() -> None:
    assert ReadSettings.from_env({}) == ReadSettings()
    assert ReadSettings().dsn == ""
    got = ReadSettings.from_env({"RECALLMESH_READ_DSN": "host=r", "RECALLMESH_READ_MAX_LAG_S": "2",
                                 "RECALLMESH_READ_CHECK_S": "0.5"})
    assert (got.dsn, got.max_lag_s, got.check_interval_s) == ("host=r", 2.0, 0.5)
    with pytest.raises(ConfigError, match="RECALLMESH_READ_MAX_LAG_S"):
        ReadSettings.from_env({"RECALLMESH_READ_MAX_LAG_S": "soon"})


class FakeConn:
    def __init__(self, pool: FakePool) -> None:
        self.pool = pool

    async def __aenter__(self) -> FakeConn:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        return None


class FakePool:
    """Hands out connections; `fail_get` refuses them, `returned` counts them back."""

    def __init__(self, name: str, fail_get: bool = False) -> None:
        self.name, self.fail_get, self.returned = name, fail_get, 0

    async def getconn(self, timeout: float | None = None) -> FakeConn:
        if self.fail_get:
            raise psycopg.OperationalError("no connection")
        return FakeConn(self)

    async def putconn(self, conn: FakeConn) -> None:
        self.returned += 1

    @contextlib.asynccontextmanager
    async def connection(self, timeout: float | None = None) -> Any:
        conn = await self.getconn(timeout)
        try:
            yield conn
        finally:
            await self.putconn(conn)


def fake_reads(primary: FakePool, replica: FakePool | None = None) -> Reads:
    """Reads over the fakes, which stand in for the pools (they hand out FakeConns)."""
    return Reads(cast(AsyncConnectionPool, primary), cast(AsyncConnectionPool | None, replica))


def usable(reads: Reads) -> Reads:
    reads.state = ReplicaState("")
    return reads


def test_reads_go_to_the_replica_while_it_is_usable() -> None:
    primary, replica = FakePool("primary"), FakePool("replica")
    reads = usable(fake_reads(primary, replica))

    async def where(conn: Any) -> str:
        return str(conn.pool.name)

    assert asyncio.run(reads.run(where)) == "replica"
    assert replica.returned == 1
    reads.state = ReplicaState("lagging")
    assert asyncio.run(reads.run(where)) == "primary"
    assert fake_reads(primary).on_replica is False  # no replica: the primary


def test_a_read_that_fails_on_the_replica_is_repeated_on_the_primary() -> None:
    primary, replica = FakePool("primary"), FakePool("replica")
    reads = usable(fake_reads(primary, replica))
    tried: list[str] = []

    async def read(conn: Any) -> str:
        tried.append(conn.pool.name)
        if conn.pool is replica:
            raise psycopg.errors.SerializationFailure("conflict with recovery")
        return "rows"

    assert asyncio.run(reads.run(read)) == "rows"
    assert tried == ["replica", "primary"]
    assert reads.state.unusable == "down" and replica.returned == 1  # given back, marked down
    assert asyncio.run(reads.run(read)) == "rows" and tried[-1] == "primary"


def test_a_replica_without_a_connection_to_give_is_marked_down() -> None:
    primary, replica = FakePool("primary"), FakePool("replica", fail_get=True)
    reads = usable(fake_reads(primary, replica))

    async def where(conn: Any) -> str:
        return str(conn.pool.name)

    assert asyncio.run(reads.run(where)) == "primary"
    assert reads.state.unusable == "down"


def test_a_bug_in_the_read_is_not_hidden_by_a_second_try() -> None:
    primary, replica = FakePool("primary"), FakePool("replica")
    reads = usable(fake_reads(primary, replica))
    tried: list[str] = []

    async def broken(conn: Any) -> None:
        tried.append(conn.pool.name)
        raise ValueError("bug")

    with pytest.raises(ValueError):
        asyncio.run(reads.run(broken))
    assert tried == ["replica"] and reads.state.unusable == ""
