"""Reads from a real streaming replica (RECALLMESH_READ_DSN, recallmesh/shared/replicas.py).

A real primary and a real hot standby (tests/replication.py), the gateway, the
legs, fusion and the indexer on them (the session's embedding service embeds): the legs and the
gateway's hydration read from the replica; a write that waits for indexing is found by the
recall that follows; a replica whose replay stops, or that is killed, sends the reads to the
primary without failing one.
"""

from __future__ import annotations

import asyncio
import time
import urllib.request
import uuid
from collections.abc import Iterator

import psycopg
import psycopg_pool
import pytest
from prometheus_client.parser import text_string_to_metric_families

from recallmesh.shared.db import domain_error, open_pool
from recallmesh.shared.errors import Unavailable
from recallmesh.shared.settings import PoolSettings
from recallmesh.stack.supervisor import Stack
from recallmesh.v1 import memory_pb2, memory_pb2_grpc
from tests.fixtures import stack_env
from tests.replication import Cluster, cluster

MAX_LAG_S = 1.0


def sample(port: int, name: str, **labels: str) -> float:
    """One sample of a service's /metrics (0 when absent)."""
    text = urllib.request.urlopen(f"http://localhost:{port}/metrics", timeout=5).read().decode()
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
                return float(s.value)
    return 0.0


def wait_for(check, timeout_s: float = 15.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


Replicated = tuple[Cluster, Stack, memory_pb2_grpc.MemoryServiceStub]


@pytest.fixture(scope="module")
def replicated(tmp_path_factory: pytest.TempPathFactory, stack: Stack) -> Iterator[Replicated]:
    root = tmp_path_factory.mktemp("read-replica")
    with cluster(root / "pg", synchronous=False) as c:
        env = stack_env(
            root / "stack", c.primary.dsn(),
            RECALLMESH_READ_DSN=c.replicas[0].dsn(),
            RECALLMESH_READ_CHECK_S="0.2",
            RECALLMESH_READ_MAX_LAG_S=str(MAX_LAG_S),
            # the session's embedding service embeds (one model in memory is enough)
            RECALLMESH_INTERNAL_TOKEN=stack.internal_token,
            RECALLMESH_EMBEDDING_TARGET=stack.endpoints["embedding"],
        )
        s = Stack(env=env, services=("indexer", "lexical", "vector", "fusion", "gateway"))
        s.start(timeout_s=90)
        try:
            with s.dial() as channel:
                yield c, s, memory_pb2_grpc.MemoryServiceStub(channel)
        finally:
            s.stop()


def store_and_wait(gateway: memory_pb2_grpc.MemoryServiceStub, ns: str, content: str) -> str:
    response = gateway.Store(memory_pb2.StoreRequest(
        namespace=ns, memory=memory_pb2.Memory(content=content),
        index_wait=memory_pb2.IndexWait(wait=True, timeout_ms=15000)), timeout=20)
    assert response.indexed
    return str(response.memory.id)


def first_hit(gateway: memory_pb2_grpc.MemoryServiceStub, ns: str, query: str) -> str:
    response = gateway.Recall(memory_pb2.RecallRequest(namespace=ns, query=query), timeout=10)
    assert not response.degraded, [(leg.leg, leg.state) for leg in response.legs]
    return str(response.hits[0].memory.id) if response.hits else ""


def test_recall_reads_the_replica_and_finds_a_write_it_waited_for(replicated: Replicated) -> None:
    _, s, gateway = replicated
    ns = f"replica-{uuid.uuid4().hex[:8]}"
    before = {leg: sample(s.metrics[leg], "recallmesh_db_reads_total", target="replica")
              for leg in ("lexical", "vector", "gateway")}
    for i, content in enumerate(["Mira keeps her climbing rope in the hallway cupboard",
                                 "The boiler was serviced by Petrov Heating in March",
                                 "Jun's passport expires in October next year"]):
        memory_id = store_and_wait(gateway, ns, content)
        # the write waited for the replica: the very next recall, read there, finds it
        assert first_hit(gateway, ns, content) == memory_id, i
    for leg, count in before.items():
        assert sample(s.metrics[leg], "recallmesh_db_reads_total", target="replica") > count, leg
    assert sample(s.metrics["lexical"], "recallmesh_db_replica_usable") == 1


def test_a_replica_that_stops_replaying_sends_reads_to_the_primary(replicated: Replicated) -> None:
    c, s, gateway = replicated
    replica = c.replicas[0]
    ns = f"paused-{uuid.uuid4().hex[:8]}"
    replica.execute("SELECT pg_wal_replay_pause()")
    try:
        # the write waits until the reads have left the lagging replica, then is found there
        memory_id = store_and_wait(gateway, ns, "The spare house key is under the blue flowerpot")
        assert first_hit(gateway, ns, "where is the spare house key") == memory_id
        lexical = s.metrics["lexical"]
        assert sample(lexical, "recallmesh_db_replica_usable") == 0
        assert sample(lexical, "recallmesh_db_replica_lag_seconds") > MAX_LAG_S
        assert sample(lexical, "recallmesh_db_replica_lag_bytes") > 0
        assert sample(lexical, "recallmesh_db_replica_fallbacks_total", reason="lagging") > 0
    finally:
        replica.execute("SELECT pg_wal_replay_resume()")
    wait_for(lambda: sample(s.metrics["lexical"], "recallmesh_db_replica_usable") == 1)
    assert sample(s.metrics["lexical"], "recallmesh_db_replica_lag_seconds") <= MAX_LAG_S


def test_a_primary_pool_hands_out_no_connection_to_a_standby(replicated: Replicated) -> None:
    """A primary pool whose DSN reaches a standby (a connection from before a failover, or a
    multi-host DSN without target_session_attrs) drops such connections instead of failing
    writes on them; what a caller gets is UNAVAILABLE, retry, never INTERNAL."""
    c, _, _ = replicated

    async def scenario() -> None:
        pool = await open_pool(c.replicas[0].dsn(), PoolSettings(1, 1, timeout_s=0.5),
                               name="standby-test")
        try:
            with pytest.raises(psycopg_pool.PoolTimeout):
                async with pool.connection():
                    pass
        finally:
            await pool.close()
        replica_pool = await open_pool(c.replicas[0].dsn(), PoolSettings(1, 1), name="reads",
                                       primary=False)
        try:
            async with replica_pool.connection() as conn:
                with pytest.raises(psycopg.errors.ReadOnlySqlTransaction) as info:
                    await conn.execute("CREATE TABLE standby_write (v int)")
        finally:
            await replica_pool.close()
        error = domain_error(info.value)
        assert isinstance(error, Unavailable) and "retry" in str(error)

    asyncio.run(scenario())


def test_a_replica_that_is_killed_fails_no_read(replicated: Replicated) -> None:
    c, s, gateway = replicated
    ns = f"killed-{uuid.uuid4().hex[:8]}"
    kept = store_and_wait(gateway, ns, "Olek's bike lock code is written in the red notebook")
    c.replicas[0].kill()
    # at once, before any check noticed: every recall is answered, from the primary
    for _ in range(5):
        assert first_hit(gateway, ns, "bike lock code notebook") == kept
    added = store_and_wait(gateway, ns, "The garden hose hangs behind the shed door")
    assert first_hit(gateway, ns, "garden hose shed") == added
    for leg in ("lexical", "vector", "gateway"):
        assert sample(s.metrics[leg], "recallmesh_db_replica_usable") == 0, leg
        assert sample(s.metrics[leg], "recallmesh_db_replica_fallbacks_total",
                      reason="down") > 0, leg
