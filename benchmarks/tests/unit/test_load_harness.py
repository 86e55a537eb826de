"""The load benchmarks' shared helpers (benchmarks/harness/load.py), without a stack."""

from __future__ import annotations

import asyncio
import os
import random

import grpc
import pytest

from benchmarks.harness.load import (
    Outcome,
    Writes,
    choose,
    invoke,
    proc_sample,
    pushback_ms,
    slope,
    summarize,
    verify_writes,
    writes_ok,
)
from recallmesh.v1 import memory_pb2


def error(code: grpc.StatusCode, trailing=()) -> grpc.aio.AioRpcError:
    return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), grpc.aio.Metadata(*trailing), "x")


def test_pushback_hint_is_read_from_the_trailing_metadata():
    assert pushback_ms(error(grpc.StatusCode.RESOURCE_EXHAUSTED,
                             [("grpc-retry-pushback-ms", "250")])) == 250
    assert pushback_ms(error(grpc.StatusCode.RESOURCE_EXHAUSTED)) is None
    assert pushback_ms(error(grpc.StatusCode.RESOURCE_EXHAUSTED,
                             [("grpc-retry-pushback-ms", "soon")])) is None


def test_every_status_code_is_an_outcome():
    async def refuse(request, timeout):
        raise error(grpc.StatusCode.RESOURCE_EXHAUSTED, [("grpc-retry-pushback-ms", "40")])

    async def answer(request, timeout):
        return memory_pb2.RecallResponse(degraded=True)

    shed, response = asyncio.run(invoke("recall", refuse, None, 1.0))
    assert (shed.code, shed.pushback_ms, response) == ("RESOURCE_EXHAUSTED", 40, None)
    ok, response = asyncio.run(invoke("recall", answer, None, 1.0))
    assert ok.code == "OK" and ok.degraded and response is not None


def test_summary_counts_codes_rates_and_answered_latency_only():
    outcomes = [Outcome("recall", "OK", 0.0, 0.010), Outcome("recall", "OK", 0.0, 0.030,
                                                             degraded=True),
                Outcome("recall", "RESOURCE_EXHAUSTED", 0.0, 0.001, pushback_ms=100),
                Outcome("store", "OK", 0.0, 0.005), Outcome("store", "INTERNAL", 0.0, 0.9)]
    s = summarize(outcomes, 2.0)
    assert s["goodput_per_s"] == 1.5 and s["shed_per_s"] == 0.5 and s["errors"] == 1
    assert s["codes"] == {"INTERNAL": 1, "OK": 3, "RESOURCE_EXHAUSTED": 1}
    assert s["codes_by_op"]["store"] == {"INTERNAL": 1, "OK": 1}
    assert s["recall_max_ms"] == pytest.approx(30.0) and s["degraded_share"] == 0.5
    assert s["pushback_hints"] == 1 and s["shed_without_hint"] == 0


def test_choose_follows_the_shares():
    rng = random.Random(1)
    drawn = [choose(rng, (("store", 0.09), ("delete", 0.01))) for _ in range(20000)]
    assert 0.08 < drawn.count("store") / len(drawn) < 0.10
    assert 0.005 < drawn.count("delete") / len(drawn) < 0.015


def test_slope_is_least_squares():
    assert slope([0, 1, 2, 3], [1, 3, 5, 7]) == pytest.approx(2.0)
    assert slope([1], [5]) == 0.0


def test_proc_sample_reads_this_process():
    sample = proc_sample(os.getpid())
    if sample is None:
        pytest.skip("no /proc")
    assert sample["rss_bytes"] > 1024 * 1024 and sample["cpu_s"] >= 0


class FakeStub:
    def __init__(self, rows: dict[str, str], refusals: int) -> None:
        self.rows, self.refusals = rows, refusals

    async def Get(self, request, timeout):
        if self.refusals:
            self.refusals -= 1
            raise error(grpc.StatusCode.RESOURCE_EXHAUSTED, [("grpc-retry-pushback-ms", "0")])
        if request.id not in self.rows:
            raise error(grpc.StatusCode.NOT_FOUND)
        return memory_pb2.GetResponse(memory=memory_pb2.Memory(id=request.id,
                                                               content=self.rows[request.id]))


class FakeGateway:
    def __init__(self, stub: FakeStub) -> None:
        self._stub = stub

    def stub(self, client: int) -> FakeStub:
        return self._stub


def test_lost_writes_are_found_and_shedding_is_retried():
    writes = Writes()
    for i in range(4):
        writes.acknowledged(f"m{i}", f"text {i}")
    gone = writes.take_live(random.Random(0))
    writes.delete_outcome(gone, Outcome("delete", "OK", 0, 0))
    kept = {i: t for i, t in writes.stored.items() if i != gone}
    check = asyncio.run(verify_writes(FakeGateway(FakeStub(kept, refusals=3)), "ns", writes,
                                      concurrency=2))
    assert writes_ok(check) and check["get_retries"] == 3 and check["checked_live"] == 3

    lost = dict(kept)
    lost.pop(next(iter(lost)))
    lost[gone] = "back"
    check = asyncio.run(verify_writes(FakeGateway(FakeStub(lost, refusals=0)), "ns", writes))
    assert not writes_ok(check)
    assert check["lost"] == 1 and check["deleted_but_found"] == 1


def test_a_shed_delete_leaves_the_memory_live():
    writes = Writes()
    writes.acknowledged("a", "x")
    target = writes.take_live(random.Random(0))
    writes.delete_outcome(target, Outcome("delete", "RESOURCE_EXHAUSTED", 0, 0))
    assert writes.expected_live == ["a"] and writes.take_live(random.Random(0)) == "a"
    writes.delete_outcome("a", Outcome("delete", "UNAVAILABLE", 0, 0))
    assert writes.expected_live == []  # unknown outcome: not checked


def test_declared_cache_bytes_sums_the_cache_gauges_of_a_metrics_endpoint():
    from prometheus_client import CollectorRegistry, Gauge, start_http_server

    from benchmarks.harness.load import declared_cache_bytes
    from recallmesh.stack.supervisor import free_port

    registry = CollectorRegistry()
    Gauge("recallmesh_graph_cache_bytes", "x", registry=registry).set(1000)
    Gauge("recallmesh_indexer_concept_cache_bytes", "x", registry=registry).set(24)
    Gauge("recallmesh_other_bytes", "not a cache", registry=registry).set(5)
    port = free_port()
    server, thread = start_http_server(port, addr="127.0.0.1", registry=registry)
    try:
        assert declared_cache_bytes(port) == 1024
    finally:
        server.shutdown()
        thread.join()
    assert declared_cache_bytes(port) is None  # nothing answers
    assert declared_cache_bytes(None) is None


def test_soak_rss_growth_a_declared_cache_explains_is_not_a_leak():
    import argparse

    from benchmarks.performance.soak import fit

    args = argparse.Namespace(flat_mib_per_h=10.0, flat_share_per_h=0.05)
    mib = 1 << 20

    def sample(t_s: float, rss_mib: float, cache_mib: float | None) -> dict:
        return {"t_s": t_s, "services": {"indexer": {
            "pid": 7, "rss_bytes": rss_mib * mib,
            "cache_bytes": None if cache_mib is None else cache_mib * mib}}}

    # +20 MiB in an hour, all of it the cache: flat
    cached = fit([sample(t, 100 + t / 180, t / 180) for t in range(0, 3601, 60)], 0, args)
    assert round(cached["indexer"]["slope_mib_per_h"]) == 20
    assert round(cached["indexer"]["unexplained_slope_mib_per_h"]) == 0
    assert cached["indexer"]["flat"]
    # the same growth with the cache flat, or not reported: a leak
    for cache in (5.0, None):
        leak = fit([sample(t, 100 + t / 180, cache) for t in range(0, 3601, 60)], 0, args)
        assert round(leak["indexer"]["unexplained_slope_mib_per_h"]) == 20
        assert not leak["indexer"]["flat"]


def test_server_latency_reads_the_p99_bucket_and_the_slow_calls_between_two_scrapes():
    from benchmarks.harness.load import server_latency

    inf = float("inf")
    before = {0.1: 10.0, 0.5: 10.0, 1.0: 10.0, 2.5: 10.0, inf: 10.0}
    after = {0.1: 810.0, 0.5: 1000.0, 1.0: 1005.0, 2.5: 1010.0, inf: 1010.0}
    got = server_latency(before, after, over_s=1.05)
    assert got["answered"] == 1000
    assert got["p99_under_s"] == 0.5  # 990 of 1000 within 0.5 s
    assert got["slower_than_s"] == 1.0 and got["slower"] == 5
    assert server_latency({}, {}, 1.05)["answered"] == 0
