"""Integration: a gateway with more legs than answer — timeouts, errors, fallback.

The extra legs are real gRPC RetrieverService servers: one that never answers
in time (and records when it was cancelled) and one address nobody listens on.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from recallmesh.stack.supervisor import Stack, free_port
from recallmesh.v1 import memory_pb2, memory_pb2_grpc, retriever_pb2, retriever_pb2_grpc
from tests.fixtures import extra_gateway, stack_env
from tests.helpers import expect_status, recall, store
from tests.latency_proxy import distant_dsn

pytestmark = pytest.mark.integration


class SlowLeg(retriever_pb2_grpc.RetrieverServiceServicer):
    """Works for `delay_s` unless the caller cancels first."""

    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s
        self.cancelled_after: list[float] = []

    def Search(self, request: retriever_pb2.SearchRequest,
               context: grpc.ServicerContext) -> retriever_pb2.SearchResponse:
        start = time.monotonic()
        while time.monotonic() - start < self.delay_s:
            if not context.is_active():
                self.cancelled_after.append(time.monotonic() - start)
                return retriever_pb2.SearchResponse()
            time.sleep(0.005)
        return retriever_pb2.SearchResponse(
            candidates=[retriever_pb2.Candidate(memory_id="00000000-0000-4000-8000-000000000001")])


class JunkLeg(retriever_pb2_grpc.RetrieverServiceServicer):
    """Answers at once, ranking ids that are malformed or name no live memory first."""

    def Search(self, request: retriever_pb2.SearchRequest,
               context: grpc.ServicerContext) -> retriever_pb2.SearchResponse:
        return retriever_pb2.SearchResponse(candidates=[
            retriever_pb2.Candidate(memory_id="not-a-uuid", score=9.0),
            *(retriever_pb2.Candidate(memory_id=f"00000000-0000-4000-8000-{i:012d}", score=1.0)
              for i in range(30)),
        ])


@pytest.fixture(scope="module")
def junk_leg() -> Iterator[str]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    retriever_pb2_grpc.add_RetrieverServiceServicer_to_server(JunkLeg(), server)
    port = server.add_insecure_port("localhost:0")
    server.start()
    yield f"localhost:{port}"
    server.stop(0)


@pytest.fixture(scope="module")
def slow_leg() -> Iterator[tuple[SlowLeg, str]]:
    servicer = SlowLeg(delay_s=5.0)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    retriever_pb2_grpc.add_RetrieverServiceServicer_to_server(servicer, server)
    port = server.add_insecure_port("localhost:0")
    server.start()
    yield servicer, f"localhost:{port}"
    server.stop(0)


@pytest.fixture(scope="module")
def degraded_gateway(dsn: str, pg_dir: Path, slow_leg: tuple[SlowLeg, str],
                     junk_leg: str) -> Iterator[memory_pb2_grpc.MemoryServiceStub]:
    _, slow_target = slow_leg
    env = stack_env(
        pg_dir / "degraded", dsn,
        RECALLMESH_LEGS="lexical,slow,dead,junk",
        RECALLMESH_SLOW_TARGET=slow_target,
        RECALLMESH_JUNK_TARGET=junk_leg,
        RECALLMESH_DEAD_TARGET=f"localhost:{free_port()}",
        RECALLMESH_RECALL_BUDGET_MS="300",
        RECALLMESH_FUSION_TARGET="local",
    )
    stack = Stack(env=env, services=("lexical", "gateway"))
    stack.start(timeout_s=60)
    with stack.dial("gateway") as channel:
        yield memory_pb2_grpc.MemoryServiceStub(channel)
    stack.stop()


DB_DISTANCE_S = 0.06  # the distant database's round trip: more than the 50 ms reserve


@pytest.fixture(scope="module")
def distant_db_gateway(stack: Stack, pg_dir: Path, slow_leg: tuple[SlowLeg, str]
                       ) -> Iterator[memory_pb2_grpc.MemoryServiceStub]:
    """A gateway over the session's lexical leg and the slow leg whose database is
    DB_DISTANCE_S away (every round trip through a LatencyProxy): its reads after the legs (one
    round trip or more: no checkout adds one since decision 0026) take longer than the 50 ms
    reserve, every time, whatever else the machine does. The lexical leg reads the database
    directly and answers in time."""
    _, slow_target = slow_leg
    with distant_dsn(stack.dsn, delay_s=DB_DISTANCE_S) as far, extra_gateway(
        pg_dir / "distant-db", stack, RECALLMESH_DSN=far, RECALLMESH_LEGS="lexical,slow",
        RECALLMESH_LEXICAL_TARGET=stack.endpoints["lexical"],
        RECALLMESH_SLOW_TARGET=slow_target, RECALLMESH_RECALL_BUDGET_MS="300",
        RECALLMESH_FUSION_TARGET="local",
    ) as stub:
        yield stub


def states(response: memory_pb2.RecallResponse) -> dict[str, str]:
    return {leg.leg: memory_pb2.LegState.Name(leg.state) for leg in response.legs}


def lexical_ranking(stack: Stack, ns: str, query: str, k: int) -> list[str]:
    """The lexical leg's own order, asked directly."""
    with stack.dial("lexical") as channel:
        response = retriever_pb2_grpc.RetrieverServiceStub(channel).Search(
            retriever_pb2.SearchRequest(namespace=ns, query=query, k=50), timeout=10)
    return [c.memory_id for c in response.candidates][:k]


def test_fallback_is_exactly_the_lexical_ranking(
        gateway: memory_pb2_grpc.MemoryServiceStub, stack: Stack,
        degraded_gateway: memory_pb2_grpc.MemoryServiceStub, ns: str,
        slow_leg: tuple[SlowLeg, str]) -> None:
    for i, importance in enumerate([0.2, 0.9, 0.5, 0.7]):
        store(gateway, ns, f"note {i} about the harbour ferry timetable", importance=importance)
    store(gateway, ns, "ferry tickets are in the drawer")
    started = time.monotonic()
    degraded = recall(degraded_gateway, ns, "harbour ferry timetable", k=5)
    elapsed = time.monotonic() - started

    # The junk leg's ids hydrate to nothing, so what remains is the lexical ranking.
    assert [h.memory.id for h in degraded.hits] == lexical_ranking(
        stack, ns, "harbour ferry timetable", 5)
    assert len(degraded.hits) == 5
    assert degraded.degraded
    assert states(degraded) == {
        "lexical": "LEG_STATE_OK", "slow": "LEG_STATE_TIMEOUT", "dead": "LEG_STATE_ERROR",
        "junk": "LEG_STATE_OK"}
    by_leg = {leg.leg: leg for leg in degraded.legs}
    assert "UNAVAILABLE" in by_leg["dead"].detail
    # What failed, not the peer's internals (address, "Connection refused"): those are logged.
    assert by_leg["dead"].detail == "UNAVAILABLE"
    assert by_leg["slow"].detail.startswith("no answer within ")
    assert 200 <= by_leg["slow"].latency_ms < 1000  # budget 300 ms minus the 50 ms reserve
    assert elapsed <= 0.300 + 0.025  # the budget plus 25 ms, seen by the client
    # The slow leg was cancelled, not left running for its full 5 s.
    deadline = time.monotonic() + 2
    while not slow_leg[0].cancelled_after and time.monotonic() < deadline:
        time.sleep(0.05)
    assert slow_leg[0].cancelled_after and slow_leg[0].cancelled_after[-1] < 1.0


def test_request_budget_and_client_deadline_shorten_leg_deadlines(
        degraded_gateway: memory_pb2_grpc.MemoryServiceStub,
        gateway: memory_pb2_grpc.MemoryServiceStub, ns: str) -> None:
    store(gateway, ns, "budgeted recall probe")
    response = recall(degraded_gateway, ns, "budgeted recall probe", budget_ms=120)
    slow = next(leg for leg in response.legs if leg.leg == "slow")
    assert slow.state == memory_pb2.LEG_STATE_TIMEOUT and slow.latency_ms < 110
    # A large budget, but the client only waits 0.4 s: the legs must give up first.
    response = degraded_gateway.Recall(
        memory_pb2.RecallRequest(namespace=ns, query="budgeted recall probe", budget_ms=5000),
        timeout=0.4)
    assert [h.memory.content for h in response.hits] == ["budgeted recall probe"]
    assert states(response)["slow"] == "LEG_STATE_TIMEOUT"


def test_no_leg_answering_is_unavailable_naming_the_legs(dsn: str, pg_dir: Path, ns: str) -> None:
    env = stack_env(pg_dir / "unavailable", dsn, RECALLMESH_LEGS="dead",
                    RECALLMESH_DEAD_TARGET=f"localhost:{free_port()}",
                    RECALLMESH_FUSION_TARGET="local")
    # up, not ready: no leg is serving (the readiness a load balancer would act on)
    stack = Stack(env=env, services=("gateway",), wait_for="liveness")
    stack.start(timeout_s=60)
    try:
        with stack.dial("gateway") as channel:
            status = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(), timeout=5).status
            assert status == health_pb2.HealthCheckResponse.NOT_SERVING
            stub = memory_pb2_grpc.MemoryServiceStub(channel)
            details = expect_status(grpc.StatusCode.UNAVAILABLE, stub.Recall,
                                    memory_pb2.RecallRequest(namespace=ns, query="anything"))
            assert "dead (ERROR" in details
            assert details == "no retrieval leg answered: dead (ERROR: UNAVAILABLE)"
            # Writes do not depend on the legs.
            assert store(stub, ns, "still writable")
    finally:
        stack.stop()


def test_concurrent_recalls_during_leg_failure_all_answer(
        distant_db_gateway: memory_pb2_grpc.MemoryServiceStub,
        gateway: memory_pb2_grpc.MemoryServiceStub, ns: str) -> None:
    """A leg that always outlasts its deadline costs only its own candidates: 16 recalls
    released together reach the reads after the legs together, and those take longer than
    the reserve (a database 25 ms away, the connections shared). Every one is answered,
    degraded; none fails UNAVAILABLE ("database did not answer")."""
    store(gateway, ns, "concurrency probe memory")
    concurrency = 16
    start = threading.Barrier(concurrency)
    results: list[object] = []

    def one() -> None:
        start.wait(timeout=10)
        try:
            response = recall(distant_db_gateway, ns, "concurrency probe")
            results.append((len(response.hits), response.degraded, states(response)["slow"]))
        except grpc.RpcError as exc:
            results.append((exc.code().name, exc.details()))

    threads = [threading.Thread(target=one) for _ in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=20)
    assert results == [(1, True, "LEG_STATE_TIMEOUT")] * concurrency


def test_the_legs_end_early_enough_for_a_slow_database(
        distant_db_gateway: memory_pb2_grpc.MemoryServiceStub,
        gateway: memory_pb2_grpc.MemoryServiceStub, ns: str) -> None:
    """Once the gateway has seen how long its reads after the legs take, a recall with a leg
    that never answers is cut early enough to be answered within its budget (300 ms)."""
    store(gateway, ns, "planned budget probe")
    recall(distant_db_gateway, ns, "planned budget probe")  # measured at least once
    for _ in range(3):
        started = time.monotonic()
        response = recall(distant_db_gateway, ns, "planned budget probe")
        elapsed = time.monotonic() - started
        assert [h.memory.content for h in response.hits] == ["planned budget probe"]
        assert states(response)["slow"] == "LEG_STATE_TIMEOUT"
        slow = next(leg for leg in response.legs if leg.leg == "slow")
        # the reads after the legs, as measured: a round trip or more
        assert slow.latency_ms < 300 - DB_DISTANCE_S * 1000
        # past the budget by at most the round trip the plan allows for, and one check of a
        # connection that idled (Pool.usable, decision 0026) the plan had not seen
        assert elapsed <= 0.300 + 2 * DB_DISTANCE_S
