"""Recall latency through the real gateway: the lexical baseline or the hybrid path.

  python -m benchmarks.performance.recall_latency [--legs lexical|lexical,vector] [--n 1000]
                                                  [--target host:port]

With --target it measures a running gateway (the demo loaded), called with the API key in
RECALLMESH_API_KEY, else the local admin key file of `recallmesh up`.

Without --target it starts its own stack (embedded Postgres in a temporary
directory, on free ports): for `--legs lexical` (default) only the lexical leg
and a gateway configured with it; with the vector leg, every service (the
gateway embeds each query once and runs both legs in parallel). It loads the
demo memories (waiting until they are embedded) and measures stack start-up
time too. It then sends --n sequential Recall RPCs
(cycling through a fixed list of demo questions, k=10) from one client and
prints p50 / p95 / p99 / mean / max of the client-observed latency.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import tempfile
import time
from pathlib import Path

import grpc

from benchmarks.harness.script import BENCH_ENV, dial_gateway, gateway_client, names, start_stack
from benchmarks.harness.stats import percentile
from recallmesh.client.jsonl import read_jsonl, store_memories
from recallmesh.stack.demo import DEMO_FILE, DEMO_NAMESPACE
from recallmesh.stack.supervisor import Stack, free_port_env
from recallmesh.v1 import memory_pb2, memory_pb2_grpc

QUERIES = [
    "which frontend framework does Maya like?",
    "peanut allergy",
    "who is Maya's manager",
    "when is the weekly sync",
    "billing service database decision",
    "half marathon training",
    "what is the cat called",
    "residence permit deadline",
    "code review size",
    "Porto trip in July",
    "observability dashboards",
    "coffee order",
]


def measure(channel: grpc.Channel, n: int, namespace: str) -> list[float]:
    """`n` sequential recalls through `channel` (a fresh channel to the gateway) after a
    warm-up; their client-side latencies in ms."""
    stub = memory_pb2_grpc.MemoryServiceStub(channel)
    for query in QUERIES:  # warm-up: connections, plans, caches
        stub.Recall(memory_pb2.RecallRequest(namespace=namespace, query=query), timeout=10)
    latencies = []
    for i in range(n):
        request = memory_pb2.RecallRequest(namespace=namespace, query=QUERIES[i % len(QUERIES)])
        start = time.perf_counter()
        response = stub.Recall(request, timeout=10)
        latencies.append((time.perf_counter() - start) * 1000)
        if response.degraded:
            raise SystemExit(f"recall was degraded: {response.legs}")
    return latencies


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--target", help="measure an already running gateway (demo loaded; "
                        "its API key: RECALLMESH_API_KEY, else the local admin key file)")
    parser.add_argument("--namespace", default=DEMO_NAMESPACE)
    parser.add_argument("--legs", type=names, default="lexical",
                        help="legs of the gateway it starts: lexical (default) or lexical,vector")
    parser.add_argument("--json", type=Path, help="also write the numbers to this JSON file")
    args = parser.parse_args(argv)

    startup_s = None
    stack = None
    tmp = tempfile.TemporaryDirectory(prefix="recallmesh-bench-")
    try:
        if args.target is None:
            legs = args.legs
            # The lexical baseline alone runs only its leg and a gateway configured with it.
            services = None if "vector" in legs else ("lexical", "gateway")
            stack = Stack(env={**BENCH_ENV, "RECALLMESH_DATA_DIR": tmp.name,
                               "RECALLMESH_LEGS": ",".join(legs), **free_port_env()},
                          services=services)
            startup_s = start_stack(stack)
            with gateway_client(stack) as client:
                store_memories(client, args.namespace, read_jsonl(DEMO_FILE), 100,
                               wait_index=services is None)
        with (stack.dial() if stack else dial_gateway(args.target)) as channel:
            latencies = sorted(measure(channel, args.n, args.namespace))
    finally:
        if stack is not None:
            stack.stop()
        tmp.cleanup()

    result = {
        "legs": ",".join(args.legs),
        "n": args.n,
        "p50_ms": percentile(latencies, 50),
        "p95_ms": percentile(latencies, 95),
        "p99_ms": percentile(latencies, 99),
        "mean_ms": statistics.fmean(latencies),
        "max_ms": latencies[-1],
        "stack_startup_s": startup_s,
        "machine": f"{platform.machine()} python {platform.python_version()}",
    }
    print(f"recall latency through the gateway (legs: {result['legs']}), {args.n} sequential "
          "requests, k=10")
    print("| p50 ms | p95 ms | p99 ms | mean ms | max ms | stack start-up s |")
    print("|---:|---:|---:|---:|---:|---:|")
    startup = f"{startup_s:.2f}" if startup_s is not None else "n/a"
    print(f"| {result['p50_ms']:.2f} | {result['p95_ms']:.2f} | {result['p99_ms']:.2f} "
          f"| {result['mean_ms']:.2f} | {result['max_ms']:.2f} | {startup} |")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
