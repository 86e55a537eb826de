"""The client's channel behaviour against small real gRPC servers: retries on UNAVAILABLE and
RESOURCE_EXHAUSTED honouring the server's pushback, no retry of other errors, round robin over
several gateways, errors keeping their status, the bearer credential on every call."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent import futures
from typing import Any

import grpc
import pytest

from recallmesh.client import (
    NO_RETRIES,
    Client,
    InvalidArgumentError,
    NotFoundError,
    RecallmeshError,
    ResourceExhaustedError,
    RetryPolicy,
    UnavailableError,
)
from recallmesh.shared.errors import PUSHBACK_KEY
from recallmesh.v1 import memory_pb2, memory_pb2_grpc

MEMORY_ID = "00000000-0000-4000-8000-000000000001"


class Scripted(memory_pb2_grpc.MemoryServiceServicer):
    """Answers Get with the scripted failures first, then the memory; records each call."""

    def __init__(self, name: str,
                 failures: Sequence[tuple[grpc.StatusCode, int | None]] = ()) -> None:
        self.name = name
        self.failures = list(failures)
        self.calls: list[tuple[float, str]] = []
        self.lock = threading.Lock()

    def Get(self, request: memory_pb2.GetRequest,
            context: grpc.ServicerContext) -> memory_pb2.GetResponse:
        with self.lock:
            auth = dict(context.invocation_metadata()).get("authorization", "")
            self.calls.append((time.monotonic(), auth))
            failure = self.failures.pop(0) if self.failures else None
        if failure is not None:
            code, pushback = failure
            if pushback is not None:
                context.set_trailing_metadata(((PUSHBACK_KEY, str(pushback)),))
            context.abort(code, f"scripted {code.name}")
        return memory_pb2.GetResponse(memory=memory_pb2.Memory(
            id=request.id, namespace=request.namespace, content=f"from {self.name}"))


@pytest.fixture
def serve() -> Iterator[Callable[[Scripted], int]]:
    servers = []

    def start(servicer: Scripted) -> int:
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        memory_pb2_grpc.add_MemoryServiceServicer_to_server(servicer, server)
        port: int = server.add_insecure_port("127.0.0.1:0")
        server.start()
        servers.append(server)
        return port

    yield start
    for server in servers:
        server.stop(0)


def client(target: str, **kw: Any) -> Client:
    return Client(target, namespace="ns", api_key="test-key", tls=False, timeout=5, **kw)


def test_resource_exhausted_is_retried_after_the_servers_pushback(
        serve: Callable[[Scripted], int]) -> None:
    servicer = Scripted("a", [(grpc.StatusCode.RESOURCE_EXHAUSTED, 400)])
    port = serve(servicer)
    with client(f"127.0.0.1:{port}") as c:
        memory = c.get(MEMORY_ID)
    assert memory.content == "from a" and memory.id == MEMORY_ID
    (first, _), (second, _) = servicer.calls
    assert second - first >= 0.4  # the hint, not the policy's 0.1 s backoff


def test_unavailable_is_retried_and_the_credential_sent_each_time(
        serve: Callable[[Scripted], int]) -> None:
    servicer = Scripted("a", [(grpc.StatusCode.UNAVAILABLE, None)] * 2)
    port = serve(servicer)
    with client(f"127.0.0.1:{port}") as c:
        assert c.get(MEMORY_ID).content == "from a"
    assert [auth for _, auth in servicer.calls] == ["Bearer test-key"] * 3


def test_retries_end_with_the_status_and_the_hint(serve: Callable[[Scripted], int]) -> None:
    servicer = Scripted("a", [(grpc.StatusCode.RESOURCE_EXHAUSTED, 10)] * 10)
    port = serve(servicer)
    with client(f"127.0.0.1:{port}", retry=RetryPolicy(max_attempts=3)) as c:
        with pytest.raises(ResourceExhaustedError) as caught:
            c.get(MEMORY_ID)
    assert len(servicer.calls) == 3
    assert caught.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert caught.value.retry_after_ms == 10
    assert "scripted RESOURCE_EXHAUSTED" in str(caught.value)


def test_other_errors_are_not_retried(serve: Callable[[Scripted], int]) -> None:
    servicer = Scripted("a", [(grpc.StatusCode.INVALID_ARGUMENT, None),
                              (grpc.StatusCode.NOT_FOUND, None)])
    port = serve(servicer)
    with client(f"127.0.0.1:{port}") as c:
        with pytest.raises(InvalidArgumentError):
            c.get(MEMORY_ID)
        with pytest.raises(NotFoundError) as caught:
            c.get(MEMORY_ID)
    assert len(servicer.calls) == 2
    assert isinstance(caught.value, RecallmeshError)


def test_no_retries_policy(serve: Callable[[Scripted], int]) -> None:
    servicer = Scripted("a", [(grpc.StatusCode.UNAVAILABLE, None)])
    port = serve(servicer)
    with client(f"127.0.0.1:{port}", retry=NO_RETRIES) as c:
        with pytest.raises(UnavailableError):
            c.get(MEMORY_ID)
    assert len(servicer.calls) == 1


def test_round_robin_over_every_address_of_the_target(serve: Callable[[Scripted], int]) -> None:
    a, b = Scripted("a"), Scripted("b")
    target = f"ipv4:127.0.0.1:{serve(a)},127.0.0.1:{serve(b)}"
    with client(target) as c:
        answers = {c.get(MEMORY_ID).content for _ in range(10)}
    assert answers == {"from a", "from b"}
    assert len(a.calls) + len(b.calls) == 10 and min(len(a.calls), len(b.calls)) >= 3


def test_no_gateway_is_unavailable_within_the_deadline() -> None:
    started = time.monotonic()
    with Client("127.0.0.1:1", namespace="ns", api_key="k", tls=False, timeout=1) as c:
        with pytest.raises((UnavailableError, RecallmeshError)) as caught:
            c.get(MEMORY_ID)
    assert caught.value.code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
    assert time.monotonic() - started < 5


def test_arguments_checked_before_any_call() -> None:
    with Client("127.0.0.1:1", api_key="k", tls=False) as c:
        with pytest.raises(ValueError, match="namespace"):
            c.get(MEMORY_ID)
        with pytest.raises(ValueError, match="at least one field"):
            c.update(MEMORY_ID, namespace="ns")
        with pytest.raises(ValueError, match="sort_by"):
            c.recall("q", namespace="ns", sort_by="best")
    with pytest.raises(ValueError, match="not both"):
        Client("127.0.0.1:1", api_key="k", token="t", tls=False)


def test_a_write_that_waits_for_indexing_gets_a_deadline_longer_than_its_wait() -> None:
    with Client("127.0.0.1:1", api_key="k", tls=False, timeout=10) as c:
        assert c._timeout(None) == 10
        assert c._timeout(3) == 3  # the caller's own deadline wins
        assert c._timeout(None, wait_indexed=30) == 35
        assert c._timeout(None, wait_indexed=2) == 10
        assert c._timeout(None, wait_indexed=True) == 65  # the server's longest wait + margin
