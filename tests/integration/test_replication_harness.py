"""The local replication harness (tests/replication.py): a real primary and a real
streaming hot standby on 127.0.0.1, the recallmesh schema on both."""

from __future__ import annotations

import uuid

import psycopg
import pytest

from tests.replication import cluster, multi_host_dsn


@pytest.mark.parametrize("synchronous", [True, False], ids=["sync", "async"])
def test_a_write_on_the_primary_is_read_on_the_replica(synchronous: bool) -> None:
    with cluster(synchronous=synchronous) as c:
        replica = c.replicas[0]
        assert not c.primary.is_in_recovery()
        assert replica.is_in_recovery()
        # the schema came over: pgvector and the memories table are on the standby
        assert replica.execute("SELECT extname FROM pg_extension WHERE extname = 'vector'")
        marker = f"harness-{uuid.uuid4().hex}"
        c.primary.execute("CREATE TABLE IF NOT EXISTS harness_probe (v text)")
        c.primary.execute("INSERT INTO harness_probe VALUES (%s)", (marker,))
        lsn = c.primary.execute("SELECT pg_current_wal_lsn()::text")[0][0]
        replica.wait_replayed(str(lsn))
        assert replica.execute("SELECT v FROM harness_probe WHERE v = %s", (marker,)) == [(marker,)]
        assert replica.execute("SELECT count(*) FROM memories")[0][0] == 0
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            replica.execute("INSERT INTO harness_probe VALUES ('x')")
        rows = c.primary.execute(
            "SELECT application_name, sync_state FROM pg_stat_replication", dbname="postgres")
        assert rows == [("replica", "quorum" if synchronous else "async")]
        # the multi-host DSN lands on the primary whichever order the nodes are named in
        with psycopg.connect(multi_host_dsn([replica, c.primary])) as conn:
            assert conn.execute("SELECT pg_is_in_recovery()").fetchone() == (False,)
        pids = [n.postmaster_pid() for n in c.nodes]
        assert all(pids)
    assert all(n.postmaster_pid() is None for n in c.nodes)  # torn down


def test_kill_and_promote() -> None:
    with cluster(synchronous=True, prepare=False) as c:
        replica = c.replicas[0]
        c.primary.execute("CREATE TABLE probe (v int)")
        c.primary.execute("INSERT INTO probe VALUES (1)")  # acknowledged: the standby has it
        c.primary.kill()
        assert c.primary.postmaster_pid() is None
        replica.promote()
        assert not replica.is_in_recovery()
        assert replica.execute("SELECT v FROM probe") == [(1,)]
        replica.execute("INSERT INTO probe VALUES (2)")  # alone, it does not wait for a standby
        with psycopg.connect(multi_host_dsn(c.nodes)) as conn:
            assert conn.execute("SELECT count(*) FROM probe").fetchone() == (2,)
