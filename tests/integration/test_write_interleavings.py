"""Issue 65: no interleaving of writes can hang the database, under either BM25 engine.

Every pair of writing RPCs runs at once, through real gRPC, on the same ids and namespaces and
across namespaces, once on the session's stack (the SQL BM25) and once on a stack over the
server that loads pg_textsearch 1.0 (the BM25 index on the write path, its indexer writing
vectors meanwhile). A pair passes when both calls answer within their deadline and what they
answered and left in the database is what one of the two serial orders answers and leaves. Then
the issue's repro (an Import of 150 records and an id, racing a Store of that id into another
namespace), repeated; and the detector of a wait nothing can end, shown a real one."""

from __future__ import annotations

import contextlib
import itertools
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import grpc
import psycopg
import pytest
from google.protobuf import field_mask_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc

from recallmesh.shared.db import LOCK_FOR_WRITE, write_lock_params
from recallmesh.stack.supervisor import Stack
from recallmesh.v1 import memory_pb2, memory_pb2_grpc
from recallmesh.wire.timestamps import to_proto_timestamp
from tests.fixtures import stack_env

pytestmark = pytest.mark.integration

DEADLINE_S = 20.0  # every call's; none may outlive it
CONTESTED = "contested"  # the tag DeleteMatching deletes by
T0 = datetime(2026, 1, 1, tzinfo=UTC)
OPS = ("store", "store_batch", "import", "update", "delete", "purge", "delete_matching",
       "delete_namespace")
PAIRS = list(itertools.combinations_with_replacement(OPS, 2))
PLACEMENTS = ("same", "across")  # the second call in the first's namespace, or in another


class Engine:
    """A gateway over one BM25 engine, and the database under it."""

    def __init__(self, name: str, gateway: memory_pb2_grpc.MemoryServiceStub, dsn: str) -> None:
        self.name, self.gateway, self.dsn = name, gateway, dsn


@pytest.fixture(scope="module")
def bm25_stack(stack: Stack, bm25_dsn: str, pg_dir: Path) -> Iterator[Stack]:
    """The lexical leg, indexer and gateway over the server that loads pg_textsearch, embedding
    through the session's embedding service."""
    bm25 = Stack(env=stack_env(
        pg_dir / "interleavings-bm25", bm25_dsn, RECALLMESH_INTERNAL_TOKEN=stack.internal_token,
        RECALLMESH_LEGS="lexical", RECALLMESH_INDEXER_EMBEDDING_TARGET=stack.endpoints[
            "embedding"]), services=("lexical", "indexer", "gateway"))
    bm25.start(timeout_s=60)
    yield bm25
    bm25.stop()


@pytest.fixture(scope="module", params=["sql", "pg_textsearch"])
def engine(request: pytest.FixtureRequest) -> Iterator[Engine]:
    """The session's stack (a server without pg_textsearch), or bm25_stack."""
    if request.param == "sql":
        stack: Stack = request.getfixturevalue("stack")
        yield Engine("sql", request.getfixturevalue("gateway"), stack.dsn)
        return
    bm25: Stack = request.getfixturevalue("bm25_stack")
    with bm25.dial() as channel:
        yield Engine("pg_textsearch", memory_pb2_grpc.MemoryServiceStub(channel), bm25.dsn)


class Run:
    """One run of a pair: its own namespaces and ids (names map back to them)."""

    def __init__(self) -> None:
        self.tag = uuid.uuid4().hex[:10]
        self.names: dict[str, str] = {}

    def ns(self, role: str) -> str:
        return f"il-{self.tag}-{role}"

    def id(self, name: str) -> str:
        made = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{self.tag}/{name}"))
        self.names[made] = name
        return made


def record(run: Run, name: str, content: str, tags: tuple[str, ...] = ()
           ) -> memory_pb2.MemoryRecord:
    rec = memory_pb2.MemoryRecord(memory=memory_pb2.Memory(id=run.id(name), content=content,
                                                           tags=list(tags)))
    to_proto_timestamp(T0, rec.memory.created_at)
    to_proto_timestamp(T0, rec.memory.updated_at)
    return rec


def set_up(gw: memory_pb2_grpc.MemoryServiceStub, run: Run) -> None:
    """Namespace A holds x1 (which Update, Delete and Purge name) and three others, two of
    them tagged `contested`; namespace B holds one memory."""
    gw.Import(memory_pb2.ImportRequest(namespace=run.ns("A"), records=[
        record(run, "x1", "x1 as it was", (CONTESTED,)),
        record(run, "a1", "a1 rests", (CONTESTED,)),
        record(run, "a2", "a2 rests"), record(run, "a3", "a3 rests")]), timeout=DEADLINE_S)
    gw.Import(memory_pb2.ImportRequest(namespace=run.ns("B"), records=[
        record(run, "b1", "b1 rests", (CONTESTED,))]), timeout=DEADLINE_S)


def call(gw: memory_pb2_grpc.MemoryServiceStub, run: Run, op: str, ns: str,
         side: int) -> str:
    """One writing RPC on the contested ids: x2, new, for those that create (with others of
    their own), x1 for those that change or delete one memory; its status code's name."""
    def memory(name: str, content: str) -> memory_pb2.Memory:
        return memory_pb2.Memory(id=run.id(name), content=content, tags=[CONTESTED])

    requests: dict[str, Callable[[], Any]] = {
        "store": lambda: gw.Store(memory_pb2.StoreRequest(
            namespace=ns, memory=memory("x2", f"x2 stored by {side}")), timeout=DEADLINE_S),
        "store_batch": lambda: gw.StoreBatch(memory_pb2.StoreBatchRequest(
            namespace=ns, memories=[memory("x2", f"x2 batched by {side}")]
            + [memory(f"s{side}-{j}", f"batch note {j} of {side}") for j in range(20)]),
            timeout=DEADLINE_S),
        "import": lambda: gw.Import(memory_pb2.ImportRequest(
            namespace=ns, records=[record(run, f"i{side}-{j}", f"imported note {j} of {side}",
                                          (CONTESTED,)) for j in range(150)]
            + [record(run, "x2", f"x2 imported by {side}", (CONTESTED,))]),
            timeout=DEADLINE_S),
        "update": lambda: gw.Update(memory_pb2.UpdateRequest(
            namespace=ns, id=run.id("x1"),
            memory=memory_pb2.Memory(content=f"x1 updated by {side}"),
            update_mask=field_mask_pb2.FieldMask(paths=["content"])), timeout=DEADLINE_S),
        "delete": lambda: gw.Delete(memory_pb2.DeleteRequest(namespace=ns, id=run.id("x1")),
                                    timeout=DEADLINE_S),
        "purge": lambda: gw.Delete(memory_pb2.DeleteRequest(namespace=ns, id=run.id("x1"),
                                                            purge=True), timeout=DEADLINE_S),
        "delete_matching": lambda: gw.DeleteMatching(memory_pb2.DeleteMatchingRequest(
            namespace=ns, filters=memory_pb2.RecallFilters(tags=[CONTESTED]), confirm=True,
            purge=True), timeout=DEADLINE_S),
        "delete_namespace": lambda: gw.DeleteNamespace(
            memory_pb2.DeleteNamespaceRequest(namespace=ns), timeout=DEADLINE_S),
    }
    try:
        requests[op]()
    except grpc.RpcError as exc:
        name: str = exc.code().name
        return name
    return "OK"


def state(dsn: str, run: Run) -> frozenset[tuple[Any, ...]]:
    """What the run's namespaces hold: (namespace role, memory name, content, deleted, kept
    versions), every row, deleted ones included."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT right(namespace, 1), id::text, content, deleted_at IS NOT NULL, "
            "(SELECT count(*) FROM memory_versions v WHERE v.memory_id = m.id) "
            "FROM memories m WHERE namespace = ANY(%s)",
            ([run.ns("A"), run.ns("B")],)).fetchall()
    return frozenset((r[0], run.names.get(r[1], "?"), r[2], r[3], r[4]) for r in rows)


def outcome(engine: Engine, ops: tuple[str, str], placement: str, order: str
            ) -> tuple[tuple[str, str], frozenset[tuple[Any, ...]], float]:
    """Run ops[0] in A and ops[1] in A or B (`placement`): the first then the second (order
    "01"), the second then the first ("10"), or both at once ("together"). Their codes, the
    state they leave, and the longest call's seconds."""
    gw, run = engine.gateway, Run()
    set_up(gw, run)
    targets = (run.ns("A"), run.ns("A" if placement == "same" else "B"))

    def timed(side: int) -> tuple[str, float]:
        started = time.monotonic()
        code = call(gw, run, ops[side], targets[side], side)
        return code, time.monotonic() - started

    answers: dict[int, tuple[str, float]] = {}
    if order == "together":
        start = threading.Barrier(2)

        def at_once(side: int) -> tuple[str, float]:
            start.wait()
            return timed(side)

        with ThreadPoolExecutor(2) as pool:
            answers = dict(enumerate(pool.map(at_once, (0, 1))))
    else:
        for side in map(int, order):
            answers[side] = timed(side)
    return (answers[0][0], answers[1][0]), state(engine.dsn, run), max(
        a[1] for a in answers.values())


@pytest.mark.parametrize("placement", PLACEMENTS)
def test_every_pair_of_writes_at_once_is_one_serial_order(engine: Engine,
                                                           placement: str) -> None:
    failures = []
    for ops in PAIRS:
        serial = {}
        for order in ("01", "10"):
            codes, held, _ = outcome(engine, ops, placement, order)
            serial[codes, held] = order
        codes, held, longest = outcome(engine, ops, placement, "together")
        if longest >= DEADLINE_S or "DEADLINE_EXCEEDED" in codes:
            failures.append(f"{ops}: a call outlived its {DEADLINE_S:g} s deadline "
                            f"({longest:.1f} s, {codes})")
        elif (codes, held) not in serial:
            failures.append(f"{ops}: answered {codes}, which no serial order answers with "
                            f"the state left: {sorted(held)}; serially: "
                            + "; ".join(f"{o}: {c} {sorted(h)}" for (c, h), o in serial.items()))
    assert not failures, f"{engine.name}, {placement}:\n" + "\n".join(failures)


def test_the_issues_repro_never_hangs(engine: Engine) -> None:
    """An Import of 150 records and id X into A, sent at the same moment as a Store of X into
    B: with pg_textsearch 1.0 the Import waited on the Store's speculative insertion while
    holding the index's lock, and the Store waited on that lock, for good. Now one of them
    answers ALREADY_EXISTS, the other OK, at once, round after round."""
    for _ in range(12):
        codes, held, longest = outcome(engine, ("import", "store"), "across", "together")
        assert longest < 5, f"{engine.name}: a call took {longest:.1f} s ({codes})"
        assert sorted(codes) == ["ALREADY_EXISTS", "OK"], codes
        assert sum(1 for row in held if row[1] == "x2") == 1


def insert_sql(ns: str, content: str) -> str:
    return ("INSERT INTO memories (namespace, content, keywords, content_key) "
            f"VALUES ('{ns}', '{content}', '', '{uuid.uuid4().hex}')")


def test_a_wait_nothing_can_end_is_seen_and_unreadies_the_gateway(bm25_stack: Stack) -> None:
    """pg_textsearch 1.0 keeps its index's lock from a transaction's first insert to its end.
    A writer that does not take the writers' first lock (here a session by hand, as an
    operator's psql would) and stays open holds it: a second insert then waits on the LWLock,
    past its statement timeout and through a cancel. The detector sees it, the gateway's
    readiness says so, and both clear when the first transaction ends."""
    ns = f"stuck-{uuid.uuid4().hex[:8]}"
    with psycopg.connect(bm25_stack.dsn, autocommit=True) as waiter, \
            psycopg.connect(bm25_stack.dsn, autocommit=True) as look, \
            psycopg.connect(bm25_stack.dsn) as holder, \
            ThreadPoolExecutor(1) as pool, bm25_stack.dial() as channel:
        holder.execute(insert_sql(ns, "held open"))  # a transaction, still open
        waiter.execute("SET statement_timeout = '500ms'")
        pid = waiter.info.backend_pid
        waiting = pool.submit(waiter.execute, insert_sql(ns, "waits for the lock"))
        try:
            time.sleep(2)
            look.execute("SELECT pg_cancel_backend(%s)", (pid,))
            time.sleep(1)
            assert not waiting.done()  # 3 s into a 0.5 s statement timeout, and cancelled
            assert look.execute("SELECT wait_event_type, wait_event FROM pg_stat_activity "
                                "WHERE pid = %s", (pid,)).fetchone() == ("LWLock", "extension")
            health = health_pb2_grpc.HealthStub(channel)
            status = wait_for_health(health, health_pb2.HealthCheckResponse.NOT_SERVING)
            assert status == health_pb2.HealthCheckResponse.NOT_SERVING
            log = bm25_stack.log_path("gateway").read_text()
            assert "waited on an LWLock (extension)" in log and str(pid) in log
        finally:
            holder.rollback()  # before anything waits for the waiter
        with contextlib.suppress(psycopg.errors.QueryCanceled):  # the cancel may land now
            waiting.result(timeout=10)  # it goes on once the lock is free
        status = wait_for_health(health, health_pb2.HealthCheckResponse.SERVING)
        assert status == health_pb2.HealthCheckResponse.SERVING


def wait_for_health(health: health_pb2_grpc.HealthStub, wanted: int, within_s: float = 30) -> int:
    """The gateway's health status once it is `wanted`, or after within_s."""
    deadline = time.monotonic() + within_s
    status: int = health.Check(health_pb2.HealthCheckRequest(), timeout=5).status
    while status != wanted and time.monotonic() < deadline:
        time.sleep(0.5)
        status = health.Check(health_pb2.HealthCheckRequest(), timeout=5).status
    return status


def test_a_writer_of_many_namespaces_rows_never_freezes_a_gateway_write(
        bm25_stack: Stack) -> None:
    """A transaction that updates memories of several namespaces row by row, as the re-embed
    run's batches do, takes the writers' first lock before its first row. A gateway Update of
    one of its rows, sent meanwhile, waits for that lock, holding nothing. Without it the
    Update would hold its row while it waits for the index's lock, which the transaction holds
    and keeps while it waits for that row: a cycle Postgres cannot see (decision 0020)."""
    with bm25_stack.dial() as channel, ThreadPoolExecutor(1) as pool:
        gw = memory_pb2_grpc.MemoryServiceStub(channel)
        first, second = (gw.Store(memory_pb2.StoreRequest(
            namespace=f"rows-{uuid.uuid4().hex[:8]}", memory=memory_pb2.Memory(
                content=f"a note the re-embed run rewrites ({n})")), timeout=10).memory
            for n in (1, 2))
        with psycopg.connect(bm25_stack.dsn) as run:
            run.execute(LOCK_FOR_WRITE, write_lock_params([]))
            run.execute("UPDATE memories SET importance = 0.9 WHERE id = %s", (first.id,))
            update = pool.submit(gw.Update, memory_pb2.UpdateRequest(
                namespace=second.namespace, id=second.id, memory=memory_pb2.Memory(
                    importance=0.1), update_mask=field_mask_pb2.FieldMask(paths=["importance"])),
                timeout=DEADLINE_S)
            time.sleep(1)
            assert not update.done()
            run.execute("UPDATE memories SET importance = 0.9 WHERE id = %s", (second.id,))
        assert update.result(timeout=10).memory.importance == pytest.approx(0.1)
