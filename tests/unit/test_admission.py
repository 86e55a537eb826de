"""Admission control and error mapping in the bootstrap's interceptor (ServerInterceptor), on a
real grpc.aio server in-process: beyond the concurrency limit a call is refused at once with
RESOURCE_EXHAUSTED and a `grpc-retry-pushback-ms` hint, health checks are never refused, and
database failures are UNAVAILABLE / RESOURCE_EXHAUSTED, never INTERNAL."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
import psycopg
import psycopg_pool
import pytest
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from prometheus_client import REGISTRY

from recallmesh.shared.db import time_left
from recallmesh.shared.errors import PUSHBACK_KEY, Unavailable
from recallmesh.shared.telemetry import (
    PUSHBACK_MAX_MS,
    PUSHBACK_MIN_MS,
    Pushback,
    ServerInterceptor,
)

SERVICE = "test.Admission"
LIMIT = 4


class Served:
    """One grpc.aio server with the bootstrap's interceptor and a service whose methods the
    test defines (raw bytes in and out)."""

    def __init__(self, interceptor: ServerInterceptor,
                 methods: dict[str, Callable[[bytes, Any], Awaitable[bytes]]]) -> None:
        self.interceptor = interceptor
        self.server = grpc.aio.server(interceptors=[interceptor])
        self.server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
            SERVICE, {name: grpc.unary_unary_rpc_method_handler(fn)
                      for name, fn in methods.items()}),))
        self.health = health.aio.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self.server)
        self.port = self.server.add_insecure_port("localhost:0")


@pytest.fixture
async def served_factory() -> AsyncIterator[Callable[..., Awaitable[tuple[Served, Any]]]]:
    made: list[tuple[Served, grpc.aio.Channel]] = []

    async def make(interceptor: ServerInterceptor, **methods: Any) -> tuple[Served, Any]:
        served = Served(interceptor, methods)
        await served.server.start()
        await served.health.set("", health_pb2.HealthCheckResponse.SERVING)
        channel = grpc.aio.insecure_channel(f"localhost:{served.port}")
        made.append((served, channel))
        return served, channel

    yield make
    for served, channel in made:
        await channel.close()
        await served.server.stop(0)


def call(channel: Any, method: str) -> Any:
    return channel.unary_unary(f"/{SERVICE}/{method}")


def shed(reason: str, method: str = "Slow") -> float:
    labels = {"grpc_service": SERVICE, "grpc_method": method, "reason": reason}
    return REGISTRY.get_sample_value("recallmesh_shed_total", labels) or 0.0


async def test_calls_beyond_the_limit_are_refused_at_once_with_a_pushback_hint(
        served_factory: Callable[..., Awaitable[tuple[Served, Any]]]) -> None:
    gate = asyncio.Event()

    async def slow(request: bytes, context: Any) -> bytes:
        await gate.wait()
        return b"done"

    served, channel = await served_factory(ServerInterceptor(max_concurrent=LIMIT), Slow=slow)
    before = shed("concurrency")
    extra = 3
    started = time.monotonic()
    calls = [asyncio.ensure_future(call(channel, "Slow")(b"", timeout=10))
             for _ in range(LIMIT + extra)]
    # the refused ones end while the admitted ones still hold their slots
    while sum(c.done() for c in calls) < extra and time.monotonic() - started < 5:
        await asyncio.sleep(0.01)
    refused = [c for c in calls if c.done()]
    assert len(refused) == extra
    assert time.monotonic() - started < 2  # at once, not after waiting for a slot
    assert served.interceptor.in_flight == LIMIT
    for c in refused:
        error = c.exception()
        assert isinstance(error, grpc.aio.AioRpcError)
        assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "busy" in error.details()
        pushback = dict(error.trailing_metadata())[PUSHBACK_KEY]
        assert PUSHBACK_MIN_MS <= int(pushback) <= PUSHBACK_MAX_MS
    assert shed("concurrency") - before == extra

    # a full server still answers its health checks: busy is not dead
    status = await health_pb2_grpc.HealthStub(channel).Check(
        health_pb2.HealthCheckRequest(service=""), timeout=2)
    assert status.status == health_pb2.HealthCheckResponse.SERVING

    gate.set()
    answered = await asyncio.gather(*(c for c in calls if c not in refused))
    assert answered == [b"done"] * LIMIT
    assert served.interceptor.in_flight == 0
    assert await call(channel, "Slow")(b"", timeout=5) == b"done"  # slots are given back


async def test_no_limit_admits_everything(
        served_factory: Callable[..., Awaitable[tuple[Served, Any]]]) -> None:
    gate = asyncio.Event()

    async def slow(request: bytes, context: Any) -> bytes:
        await gate.wait()
        return b"done"

    _, channel = await served_factory(ServerInterceptor(max_concurrent=0), Slow=slow)
    calls = [asyncio.ensure_future(call(channel, "Slow")(b"", timeout=10)) for _ in range(20)]
    await asyncio.sleep(0.3)
    assert not any(c.done() for c in calls)
    gate.set()
    assert await asyncio.gather(*calls) == [b"done"] * 20


@pytest.mark.parametrize(("raised", "code", "words"), [
    (psycopg.OperationalError("server closed the connection unexpectedly"),
     grpc.StatusCode.UNAVAILABLE, "database unavailable, retry (OperationalError)"),
    (psycopg_pool.PoolTimeout("couldn't get a connection after 2.00 sec"),
     grpc.StatusCode.UNAVAILABLE, "database unavailable, retry (PoolTimeout)"),
    (psycopg.errors.QueryCanceled("canceling statement due to statement timeout"),
     grpc.StatusCode.UNAVAILABLE, "database unavailable, retry (QueryCanceled)"),
    (psycopg.errors.AdminShutdown("terminating connection due to administrator command"),
     grpc.StatusCode.UNAVAILABLE, "database unavailable, retry (AdminShutdown)"),
    (psycopg_pool.TooManyRequests("the pool 'gateway' has already 32 requests waiting"),
     grpc.StatusCode.RESOURCE_EXHAUSTED, "database busy"),
    (Unavailable("no retrieval leg answered"), grpc.StatusCode.UNAVAILABLE,
     "no retrieval leg answered"),
    (ValueError("a bug"), grpc.StatusCode.INTERNAL, "internal error (ref "),
])
async def test_database_failures_are_retryable_statuses_never_internal(
        served_factory: Callable[..., Awaitable[tuple[Served, Any]]], raised: Exception,
        code: grpc.StatusCode, words: str) -> None:
    async def failing(request: bytes, context: Any) -> bytes:
        raise raised

    _, channel = await served_factory(ServerInterceptor(max_concurrent=LIMIT), Fail=failing)
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await call(channel, "Fail")(b"", timeout=5)
    assert info.value.code() == code
    assert info.value.details().startswith(words)
    assert "server closed" not in info.value.details()  # the driver's words stay in the log
    pushback = dict(info.value.trailing_metadata()).get(PUSHBACK_KEY)
    assert (pushback is not None) == (code == grpc.StatusCode.RESOURCE_EXHAUSTED)


async def test_the_calls_deadline_bounds_its_database_waits(
        served_factory: Callable[..., Awaitable[tuple[Served, Any]]]) -> None:
    async def left(request: bytes, context: Any) -> bytes:
        return repr(time_left()).encode()

    _, channel = await served_factory(ServerInterceptor(), Left=left)
    assert await call(channel, "Left")(b"") == b"None"
    seconds = float(await call(channel, "Left")(b"", timeout=3))
    assert 2.0 < seconds <= 3.1  # (gRPC reads its deadline off another clock)


async def test_calls_that_fail_fast_do_not_shrink_the_pushback_hint(
        served_factory: Callable[..., Awaitable[tuple[Served, Any]]]) -> None:
    """Only answered calls teach the hint how long work takes: calls that end at once in an
    error (a database refusal under overload) must not drive it to its floor, or the refused
    come straight back and the overload feeds itself."""
    async def slow(request: bytes, context: Any) -> bytes:
        await asyncio.sleep(0.2)
        return b"done"

    async def refused(request: bytes, context: Any) -> bytes:
        raise psycopg_pool.TooManyRequests("the pool 'gateway' has already 32 requests waiting")

    served, channel = await served_factory(ServerInterceptor(max_concurrent=LIMIT), Slow=slow,
                                           Busy=refused)
    for _ in range(3):
        await asyncio.gather(*(call(channel, "Slow")(b"", timeout=10) for _ in range(LIMIT)))
    learned = served.interceptor.pushback.mean_s
    assert learned > 0.1
    for _ in range(50):
        with pytest.raises(grpc.aio.AioRpcError):
            await call(channel, "Busy")(b"", timeout=10)
    assert served.interceptor.pushback.mean_s == learned


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def run_window(pushback: Pushback, clock: FakeClock, answered: int, refused: int) -> list[int]:
    """One controller window: `answered` OK calls of 100 ms and `refused` refusals; returns
    the refusals' hints."""
    for _ in range(answered):
        pushback.answered(0.1)
    hints = [pushback.refused() for _ in range(refused)]
    clock.now += Pushback.WINDOW_S
    return hints


def test_the_pushback_hint_grows_while_refusals_dominate_and_shrinks_when_they_stop() -> None:
    """Far over its limit a server must spread the refused clients out: one handling time as
    the hint brings them straight back, and refusing them again takes the CPU the admitted
    calls need. The factor doubles per window while refusals outnumber a quarter of the
    answered calls, stays between a twentieth and a quarter, and halves back to 1 below."""
    clock = FakeClock()
    pushback = Pushback(clock=clock)
    pushback.mean_s = 0.1
    first = run_window(pushback, clock, answered=100, refused=400)
    assert all(50 <= h <= 150 for h in first)  # one handling time, jittered x0.5..1.5
    for _ in range(3):
        run_window(pushback, clock, answered=100, refused=400)
    # a window is judged when the next one starts: three judged so far
    assert pushback.factor == 8.0
    hints = run_window(pushback, clock, answered=100, refused=10)  # 0.1: between the bounds
    assert pushback.factor == 16.0  # the fourth window with 400 refused, judged
    assert all(800 <= h <= 2400 for h in hints)
    for _ in range(3):
        run_window(pushback, clock, answered=100, refused=10)
    assert pushback.factor == 16.0  # held while the refusals stay moderate
    for _ in range(10):
        run_window(pushback, clock, answered=100, refused=0)
    assert pushback.factor == 1.0


def test_the_pushback_hint_stays_within_its_bounds() -> None:
    clock = FakeClock()
    pushback = Pushback(clock=clock)
    pushback.mean_s = 2.0
    for _ in range(20):
        hints = run_window(pushback, clock, answered=1, refused=50)
        assert all(PUSHBACK_MIN_MS / 2 <= h <= PUSHBACK_MAX_MS * 1.5 for h in hints)
    # at the cap the hints still spread: the refused do not all come back in one wave
    assert min(hints) < PUSHBACK_MAX_MS * 0.8 and max(hints) > PUSHBACK_MAX_MS * 1.2
    fast = Pushback(clock=clock)
    fast.mean_s = 0.0
    assert all(PUSHBACK_MIN_MS / 2 <= fast.refused() <= PUSHBACK_MIN_MS * 1.5
               for _ in range(20))
