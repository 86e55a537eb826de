"""Fault injection on the write path, real processes (issue 25): a poison text, the indexer
SIGKILLed mid-batch, the embedding service SIGKILLed under a write load.

A Stack of its own (embedding, lexical, indexer, gateway) over a scratch database of its own,
so the session stack's indexer never races it for jobs. The indexer embeds through a gRPC
proxy in front of the real embedding service (FaultProxy): it fails every call holding a text
with MARKER, as a model that cannot handle a text would, and it can hold a call (to kill the
indexer while a batch is in flight). Short backoffs, a 6 s claim lease (2 x the 3 s embed
timeout) and 3 attempts keep it fast.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from concurrent import futures
from pathlib import Path
from typing import TypeVar

import grpc
import psycopg
import pytest
from google.protobuf import field_mask_pb2

from recallmesh.shared.transport import grpc_options
from recallmesh.stack.supervisor import Stack
from recallmesh.v1 import embedder_pb2, embedder_pb2_grpc, memory_pb2, memory_pb2_grpc
from tests.fixtures import scratch_database, stack_env
from tests.helpers import one_row

T = TypeVar("T")

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

MARKER = "zq-poison-qz"
MAX_ATTEMPTS = 3


class FaultProxy(embedder_pb2_grpc.EmbedderServiceServicer):
    """Forwards to the real embedding service; fails texts with MARKER; can hold calls."""

    def __init__(self, upstream: str) -> None:
        self.channel = grpc.insecure_channel(upstream, options=grpc_options())
        self.stub = embedder_pb2_grpc.EmbedderServiceStub(self.channel)
        self.lock = threading.Lock()
        self.calls: list[list[str]] = []
        self.poison = True
        self.hold = threading.Event()  # set: the next call waits for `release`
        self.held = threading.Event()  # set when a call is being held
        self.release = threading.Event()

    def Embed(self, request: embedder_pb2.EmbedRequest,
              context: grpc.ServicerContext) -> embedder_pb2.EmbedResponse:
        texts = list(request.texts)
        with self.lock:
            self.calls.append(texts)
        if self.hold.is_set():
            self.hold.clear()
            self.held.set()
            self.release.wait(30)
        if self.poison and any(MARKER in t for t in texts):
            context.abort(grpc.StatusCode.INTERNAL, "the model failed on an input")
        try:
            embedded: embedder_pb2.EmbedResponse = self.stub.Embed(
                request, timeout=context.time_remaining(), metadata=_credential(context))
            return embedded
        except grpc.RpcError as exc:
            context.abort(exc.code(), exc.details())
            raise  # not reached: context.abort() raises (grpc is untyped: mypy cannot tell)

    def ModelInfo(self, request: embedder_pb2.ModelInfoRequest,
                  context: grpc.ServicerContext) -> embedder_pb2.ModelInfoResponse:
        try:
            info: embedder_pb2.ModelInfoResponse = self.stub.ModelInfo(
                request, timeout=context.time_remaining(), metadata=_credential(context))
            return info
        except grpc.RpcError as exc:
            context.abort(exc.code(), exc.details())
            raise  # not reached: context.abort() raises (grpc is untyped: mypy cannot tell)

    def texts_sent(self) -> list[str]:
        with self.lock:
            return [t for call in self.calls for t in call]


def _credential(context: grpc.ServicerContext) -> list[tuple[str, str]]:
    return [(k, v) for k, v in context.invocation_metadata() if k == "authorization"]


# The stack under test, the embedding proxy its indexer calls, a connection to its database,
# and its gateway.
Faults = tuple[Stack, FaultProxy, psycopg.Connection, memory_pb2_grpc.MemoryServiceStub]


@pytest.fixture(scope="module")
def faults(admin_dsn: str, pg_dir: Path) -> Iterator[Faults]:
    with scratch_database(admin_dsn) as dsn:
        env = stack_env(
            pg_dir / "faults", dsn,
            RECALLMESH_LEGS="lexical", RECALLMESH_FUSION_TARGET="local",
            RECALLMESH_INDEXER_MAX_ATTEMPTS=str(MAX_ATTEMPTS),
            RECALLMESH_INDEXER_BASE_BACKOFF_S="0.05",
            RECALLMESH_INDEXER_MAX_BACKOFF_S="0.5",
            RECALLMESH_INDEXER_EMBED_TIMEOUT_S="3",  # the claim lease: 6 s
            RECALLMESH_INDEXER_POLL_S="0.2",
        )
        proxy = FaultProxy(f"localhost:{env['RECALLMESH_EMBEDDING_PORT']}")
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        embedder_pb2_grpc.add_EmbedderServiceServicer_to_server(proxy, server)
        port = server.add_insecure_port("localhost:0")
        env["RECALLMESH_INDEXER_EMBEDDING_TARGET"] = f"localhost:{port}"
        server.start()
        stack = Stack(env=env, services=("embedding", "lexical", "indexer", "gateway"))
        stack.start(timeout_s=90)
        try:
            with psycopg.connect(dsn, autocommit=True) as db:
                # Every vector write, to tell "embedded exactly once" from "written twice".
                db.execute("""
                    CREATE TABLE test_vector_writes (
                        memory_id uuid NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp());
                    CREATE FUNCTION test_log_vector_write() RETURNS trigger LANGUAGE plpgsql AS $$
                    BEGIN
                        INSERT INTO test_vector_writes (memory_id) VALUES (NEW.id);
                        RETURN NULL;
                    END $$;
                    CREATE TRIGGER test_vector_writes AFTER UPDATE OF embedding ON memories
                        FOR EACH ROW WHEN (NEW.embedding IS NOT NULL)
                        EXECUTE FUNCTION test_log_vector_write();
                """)
                with stack.dial() as channel:
                    yield stack, proxy, db, memory_pb2_grpc.MemoryServiceStub(channel)
        finally:
            proxy.release.set()
            stack.stop()
            server.stop(0)


def sigkill(stack: Stack, name: str) -> None:
    process = stack.processes.pop(name)
    os.kill(process.pid, signal.SIGKILL)
    process.wait(10)
    stack.endpoints.pop(name, None)


def wait_for(what: Callable[[], T], timeout_s: float, every_s: float = 0.1) -> T:
    deadline = time.monotonic() + timeout_s
    while True:
        value = what()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(every_s)


def vectors(db: psycopg.Connection, ids: list[str]) -> dict[str, bool]:
    rows = db.execute("SELECT id::text, embedding IS NOT NULL FROM memories "
                      "WHERE id = ANY(%s::uuid[])", (ids,)).fetchall()
    return dict(rows)


def jobs_left(db: psycopg.Connection, ids: list[str]) -> int:
    left: int = one_row(db.execute(
        "SELECT count(*) FROM embedding_jobs WHERE memory_id = ANY(%s::uuid[])",
        (ids,)))[0]
    return left


def cli(dsn: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "recallmesh.cli", *args],
                          env={**os.environ, "RECALLMESH_DSN": dsn, "COLUMNS": "200"},
                          capture_output=True, text=True, timeout=60)


def parked_gauge(stack: Stack) -> float | None:
    text = urllib.request.urlopen(
        f"http://localhost:{stack.metrics['indexer']}/metrics", timeout=5).read().decode()
    for line in text.splitlines():
        if line.startswith("recallmesh_indexer_parked_jobs "):
            return float(line.split()[1])
    return None


def store_batch(gateway: memory_pb2_grpc.MemoryServiceStub, ns: str, contents: list[str],
                wait_ms: int = 0) -> memory_pb2.StoreBatchResponse:
    request = memory_pb2.StoreBatchRequest(
        namespace=ns, memories=[memory_pb2.Memory(content=c) for c in contents])
    if wait_ms:
        request.index_wait.CopyFrom(memory_pb2.IndexWait(wait=True, timeout_ms=wait_ms))
    response: memory_pb2.StoreBatchResponse = gateway.StoreBatch(request, timeout=60)
    return response


def test_a_poison_text_is_parked_and_the_rest_of_its_batch_embedded(
        faults: Faults, ns: str) -> None:
    stack, proxy, db, gateway = faults
    poison = f"this note carries {MARKER} and the model cannot embed it"
    contents = [f"harbour ferry note number {i}" for i in range(12)]
    contents.insert(5, poison)
    started = time.monotonic()
    response = store_batch(gateway, ns, contents, wait_ms=30000)
    waited = time.monotonic() - started
    ids = list(response.ids)
    bad = ids[5]
    good = [i for i in ids if i != bad]
    # The wait ends when the poison job is parked (indexed false), not at its 30 s timeout.
    assert not response.indexed
    assert waited < 20
    assert all(vectors(db, good).values()) and not vectors(db, [bad])[bad]
    assert jobs_left(db, good) == 0
    # It was batched with the others, failed them all once, and the split left it alone.
    assert any(poison in call and len(call) > 1 for call in proxy.calls)
    assert [poison] in proxy.calls
    failures, parked, error = one_row(db.execute(
        "SELECT failures, parked_at IS NOT NULL, last_error FROM embedding_jobs "
        "WHERE memory_id = %s", (bad,)))
    assert (failures, parked) == (MAX_ATTEMPTS, True)
    assert "INTERNAL" in error and "the model failed on an input" in error
    # Each good memory got its vector once.
    writes: dict[str, int] = dict(db.execute(
        "SELECT memory_id::text, count(*) FROM test_vector_writes "
        "WHERE memory_id = ANY(%s::uuid[]) GROUP BY 1", (ids,)).fetchall())
    assert writes == {i: 1 for i in good}
    # The metric, and an index wait on the parked memory answers at once.
    assert wait_for(lambda: parked_gauge(stack) == 1.0, 5)
    started = time.monotonic()
    update = gateway.Update(memory_pb2.UpdateRequest(
        namespace=ns, id=bad, memory=memory_pb2.Memory(importance=0.9),
        update_mask=field_mask_pb2.FieldMask(paths=["importance"]),
        index_wait=memory_pb2.IndexWait(wait=True, timeout_ms=30000)), timeout=40)
    assert not update.indexed and time.monotonic() - started < 5
    # The lexical leg finds it meanwhile.
    hits = gateway.Recall(memory_pb2.RecallRequest(namespace=ns, query=MARKER, k=5),
                          timeout=10).hits
    assert [h.memory.id for h in hits] == [bad]

    # `jobs list` shows it with its error; once the model is fixed, `jobs retry` embeds it.
    listed = cli(stack.dsn, "jobs", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    entry = next(j for j in json.loads(listed.stdout) if j["memory_id"] == bad)
    assert entry["namespace"] == ns and entry["failures"] == MAX_ATTEMPTS
    assert "the model failed on an input" in entry["last_error"]
    table = cli(stack.dsn, "jobs", "list", "-n", ns)
    assert table.returncode == 0 and bad in table.stdout and "1 parked" in table.stdout
    proxy.poison = False
    try:
        retried = cli(stack.dsn, "jobs", "retry", bad)
        assert retried.returncode == 0, retried.stderr
        assert "1 parked job(s) re-queued" in retried.stdout
        assert wait_for(lambda: vectors(db, [bad])[bad] and jobs_left(db, [bad]) == 0, 20)
    finally:
        proxy.poison = True
    assert wait_for(lambda: parked_gauge(stack) == 0.0, 5)
    # A retry of a job that is not parked changes nothing.
    again = cli(stack.dsn, "jobs", "retry", bad)
    assert again.returncode == 2 and "no parked embedding job" in again.stderr


def test_a_dropped_poison_job_leaves_the_memory_lexical_only(faults: Faults, ns: str) -> None:
    stack, proxy, db, gateway = faults
    poison = f"another {MARKER} text"
    response = store_batch(gateway, ns, [poison, "a healthy neighbour"], wait_ms=30000)
    bad = response.ids[0]
    assert not response.indexed
    assert one_row(db.execute(
        "SELECT parked_at IS NOT NULL FROM embedding_jobs WHERE memory_id = %s",
        (bad,)))[0]
    dropped = cli(stack.dsn, "jobs", "drop", bad)
    assert dropped.returncode == 0, dropped.stderr
    assert "1 parked job(s) dropped" in dropped.stdout
    assert jobs_left(db, [bad]) == 0 and not vectors(db, [bad])[bad]
    hits = gateway.Recall(memory_pb2.RecallRequest(namespace=ns, query=MARKER, k=5),
                          timeout=10).hits
    assert [h.memory.id for h in hits] == [bad]


def test_sigkill_the_indexer_mid_batch(faults: Faults, ns: str) -> None:
    """Killed while its batch is being embedded: after a restart every memory is embedded
    exactly once (one vector write each) and no job is left behind."""
    stack, proxy, db, gateway = faults
    contents = [f"memory written before the crash, number {i}" for i in range(20)]
    proxy.held.clear()
    proxy.release.clear()
    proxy.hold.set()
    try:
        ids = list(store_batch(gateway, ns, contents).ids)
        assert proxy.held.wait(15), "the indexer never sent the batch"
        sigkill(stack, "indexer")
    finally:
        proxy.hold.clear()
        proxy.release.set()
    # The killed batch is leased, not lost: its jobs are there, claimed once.
    leased = one_row(db.execute(
        "SELECT count(*) FROM embedding_jobs WHERE memory_id = ANY(%s::uuid[]) "
        "AND attempts = 1 AND next_attempt_at > clock_timestamp()",
        (ids,)))[0]
    assert leased >= 1
    assert not any(vectors(db, ids).values())
    stack.start_service("indexer", timeout_s=90)
    assert wait_for(lambda: all(vectors(db, ids).values()) and jobs_left(db, ids) == 0, 60)
    writes: dict[str, int] = dict(db.execute(
        "SELECT memory_id::text, count(*) FROM test_vector_writes "
        "WHERE memory_id = ANY(%s::uuid[]) GROUP BY 1", (ids,)).fetchall())
    assert writes == {i: 1 for i in ids}
    # The killed batch's texts really were in flight: sent once before the kill, once after.
    sent = proxy.texts_sent()
    assert any(sent.count(c) >= 2 for c in contents)


def test_sigkill_the_embedding_service_under_a_write_load(faults: Faults, ns: str) -> None:
    """Writes go on while the model is dead; every acknowledged write is kept and embedded
    once it is back (an outage parks nothing, with MAX_ATTEMPTS = 3)."""
    stack, proxy, db, gateway = faults
    acked: list[str] = []
    errors: list[str] = []
    stop = threading.Event()

    def writer(w: int) -> None:
        n = 0
        while not stop.is_set():
            try:
                response = gateway.Store(memory_pb2.StoreRequest(
                    namespace=ns, memory=memory_pb2.Memory(content=f"load {w}-{n} note")),
                    timeout=10)
                acked.append(response.memory.id)
            except grpc.RpcError as exc:
                errors.append(f"{exc.code().name}: {exc.details()}")
            n += 1
            time.sleep(0.08)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(3)]
    for t in threads:
        t.start()
    try:
        time.sleep(1.0)
        sigkill(stack, "embedding")
        killed_at = len(acked)
        time.sleep(2.0)
        during = len(acked) - killed_at
        stack.start_service("embedding", timeout_s=90)
        time.sleep(1.0)
    finally:
        stop.set()
        for t in threads:
            t.join(15)
    assert not errors, errors[:5]
    assert during > 10  # writes were acknowledged while the model was dead
    assert len(set(acked)) == len(acked)
    live = one_row(db.execute("SELECT count(*) FROM memories WHERE id = ANY(%s::uuid[]) "
                              "AND deleted_at IS NULL", (acked,)))[0]
    assert live == len(acked)  # zero acknowledged writes lost
    done = wait_for(lambda: all(vectors(db, acked).values()) and jobs_left(db, acked) == 0, 90,
                    every_s=0.5)
    parked = one_row(db.execute("SELECT count(*) FROM embedding_jobs WHERE parked_at IS NOT NULL "
                                "AND memory_id = ANY(%s::uuid[])", (acked,)))[0]
    missing = sum(not v for v in vectors(db, acked).values())
    assert done, f"{missing} of {len(acked)} without a vector, {parked} parked"
    writes = db.execute("SELECT count(*), count(DISTINCT memory_id) FROM test_vector_writes "
                        "WHERE memory_id = ANY(%s::uuid[])", (acked,)).fetchone()
    assert writes == (len(acked), len(acked))
