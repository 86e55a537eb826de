"""One service per process as a container runs it (`recallmesh serve <service>`), health that
tells the truth (readiness follows the database and, for the gateway, the legs; liveness
stays SERVING), and load spread over replicas (round_robin over every address a target
resolves to). Real processes, real Postgres, real gRPC; faults made by dropping the database
and killing a leg."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import psycopg
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from recallmesh.migrations.vector_schema import prepare_database
from recallmesh.stack.supervisor import free_port
from recallmesh.v1 import memory_pb2
from recallmesh.wire.channel import dial_blocking
from tests.fixtures import scratch_database
from tests.helpers import INTERNAL_TOKEN, api_key

pytestmark = pytest.mark.integration

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


class Served:
    """`recallmesh serve <service>` as a child process on free ports."""

    def __init__(self, service: str, dsn: str, tmp: Path, **env: str) -> None:
        self.service = service
        self.port, self.metrics_port = free_port(), free_port()
        prefix = f"RECALLMESH_{service.upper()}_"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("RECALLMESH_")}
        self.env.update({
            "RECALLMESH_DSN": dsn, "RECALLMESH_READINESS_INTERVAL_S": "0.2",
            "RECALLMESH_INTERNAL_TOKEN": INTERNAL_TOKEN,
            "RECALLMESH_DB_POOL_MAX": "2", f"{prefix}PORT": str(self.port),
            f"{prefix}METRICS_PORT": str(self.metrics_port), "PYTHONUNBUFFERED": "1", **env})
        self.log = tmp / f"{service}-{self.port}.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.address = f"localhost:{self.port}"

    def start(self) -> Served:
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "recallmesh.cli", "serve", self.service],
                env=self.env, stdout=log, stderr=subprocess.STDOUT)
        wait_for(lambda: health(self.address) == SERVING, 60, self)
        return self

    def stop(self, sig: int = signal.SIGTERM) -> int:
        assert self.process is not None
        self.process.send_signal(sig)
        return self.process.wait(timeout=30)

    def metric(self, pattern: str) -> float:
        text = urllib.request.urlopen(
            f"http://localhost:{self.metrics_port}/metrics", timeout=5).read().decode()
        return sum(float(m) for m in re.findall(pattern + r" ([0-9.e+]+)$", text, re.M))


def health(address: str, service: str = "") -> int | None:
    with grpc.insecure_channel(address) as channel:
        try:
            status: int = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=service), timeout=2).status
            return status
        except grpc.RpcError:
            return None


def wait_for(condition: Callable[[], object], timeout_s: float,
             served: Served | None = None) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    log = served.log.read_text()[-3000:] if served else ""
    pytest.fail(f"condition not met within {timeout_s} s\n{log}")


@contextlib.contextmanager
def serving(*served: Served) -> Iterator[None]:
    try:
        for s in served:
            s.start()
        yield
    finally:
        for s in served:
            if s.process is not None and s.process.poll() is None:
                s.stop(signal.SIGKILL)


@pytest.fixture
def droppable(admin_dsn: str) -> Iterator[str]:
    """A migrated database of its own, which the test may drop and make again."""
    with scratch_database(admin_dsn) as url:
        prepare_database(url)
        yield url


def test_leg_readiness_follows_its_database_and_sigterm_exits_cleanly(
        droppable: str, admin_dsn: str, tmp_path: Path) -> None:
    leg = Served("lexical", droppable, tmp_path)
    name = psycopg.conninfo.conninfo_to_dict(droppable)["dbname"]
    with serving(leg):
        assert health(leg.address, "liveness") == SERVING
        assert health(leg.address, "recallmesh.v1.RetrieverService") == SERVING
        assert leg.metric(r"recallmesh_ready") == 1
        with psycopg.connect(admin_dsn, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
        wait_for(lambda: health(leg.address) == NOT_SERVING, 15, leg)
        assert health(leg.address, "recallmesh.v1.RetrieverService") == NOT_SERVING
        assert health(leg.address, "liveness") == SERVING  # not a reason to restart it
        assert leg.metric(r"recallmesh_ready") == 0
        with psycopg.connect(admin_dsn, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        prepare_database(droppable)
        wait_for(lambda: health(leg.address) == SERVING, 30, leg)
        assert leg.stop() == 0
    assert "not ready" in leg.log.read_text()  # the operator reads why in the log


def test_gateway_is_not_ready_while_no_leg_is_serving(dsn: str, tmp_path: Path) -> None:
    leg = Served("lexical", dsn, tmp_path)
    with serving(leg):
        gateway = Served("gateway", dsn, tmp_path, RECALLMESH_LEGS="lexical",
                         RECALLMESH_LEXICAL_TARGET=leg.address, RECALLMESH_FUSION_TARGET="local")
        with serving(gateway):
            leg.stop(signal.SIGKILL)
            wait_for(lambda: health(gateway.address) == NOT_SERVING, 15, gateway)
            assert health(gateway.address, "liveness") == SERVING
            again = Served("lexical", dsn, tmp_path)
            again.port, again.address = leg.port, leg.address
            again.env["RECALLMESH_LEXICAL_PORT"] = str(leg.port)
            with serving(again):
                wait_for(lambda: health(gateway.address) == SERVING, 15, gateway)
            assert gateway.stop() == 0


def test_two_replicas_of_a_leg_both_receive_calls(dsn: str, ns: str, tmp_path: Path) -> None:
    first, second = Served("lexical", dsn, tmp_path), Served("lexical", dsn, tmp_path)
    with serving(first, second):
        # one target naming both replicas, as a headless Service's DNS name resolves to its
        # pods' addresses
        target = f"ipv4:127.0.0.1:{first.port},127.0.0.1:{second.port}"
        gateway = Served("gateway", dsn, tmp_path, RECALLMESH_LEGS="lexical",
                         RECALLMESH_LEXICAL_TARGET=target, RECALLMESH_FUSION_TARGET="local")
        with serving(gateway), dial_blocking(gateway.address, token=api_key(dsn)) as channel:
            from recallmesh.v1 import memory_pb2_grpc

            stub = memory_pb2_grpc.MemoryServiceStub(channel)
            stub.Store(memory_pb2.StoreRequest(namespace=ns, memory=memory_pb2.Memory(
                content="The lighthouse keeper feeds the gulls at dawn")), timeout=10)
            for _ in range(20):
                response = stub.Recall(memory_pb2.RecallRequest(
                    namespace=ns, query="lighthouse gulls", k=3), timeout=10)
                assert not response.degraded and response.hits
        searches = r'grpc_server_handled_total\{[^}]*grpc_method="Search"[^}]*\}'
        calls = [first.metric(searches), second.metric(searches)]
        assert all(c >= 5 for c in calls) and sum(calls) >= 20, calls
