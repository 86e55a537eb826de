"""Context latency next to plain recall, through the real gateway, in one run.

  python -m benchmarks.performance.context_latency [--n 300] [--target host:port]

Without --target it starts every service on an embedded Postgres in a temporary directory
(free ports) and loads the demo memories, waiting until they are embedded. With --target it
measures a running gateway with the demo loaded (its API key: RECALLMESH_API_KEY, else the
local admin key file).

Each round sends, for the same demo question and in an order that rotates each round, four
calls from one client:

  recall k=10            the plain Recall RPC (raw stub)
  recall k=20            Recall at the depth Context recalls by default (raw stub)
  context                the Context RPC, k=20, max_tokens=1000 (raw stub)
  context (client)       the same through recallmesh.client.Client (typed results)

It prints p50 / p95 / p99 / mean of the client-observed latency per call kind, the paired
difference of the means (context - recall k=20, bootstrap 95% CI over rounds), the mean
tokens and memories packed, and writes benchmarks/reports/context-latency.md and .json.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.harness.script import BENCH_ENV, dial_gateway, gateway_client, publish, start_stack
from benchmarks.harness.stats import paired_bootstrap, percentile
from benchmarks.performance.recall_latency import QUERIES
from recallmesh.client import Client
from recallmesh.client.jsonl import read_jsonl, store_memories
from recallmesh.shared.credentials import client_api_key
from recallmesh.stack.demo import DEMO_FILE, DEMO_NAMESPACE
from recallmesh.stack.supervisor import Stack, free_port_env
from recallmesh.v1 import memory_pb2, memory_pb2_grpc

REPORTS = Path(__file__).resolve().parents[1] / "reports"
KINDS = ("recall k=10", "recall k=20", "context", "context (client)")


def calls(stub: Any, client: Client, namespace: str) -> dict[str, Callable[[str], Any]]:
    return {
        "recall k=10": lambda q: stub.Recall(
            memory_pb2.RecallRequest(namespace=namespace, query=q, k=10), timeout=10),
        "recall k=20": lambda q: stub.Recall(
            memory_pb2.RecallRequest(namespace=namespace, query=q, k=20), timeout=10),
        "context": lambda q: stub.Context(
            memory_pb2.ContextRequest(namespace=namespace, query=q, k=20, max_tokens=1000),
            timeout=10),
        "context (client)": lambda q: client.context(q, k=20, max_tokens=1000),
    }


def measure(stub: Any, client: Client, namespace: str, n: int
            ) -> tuple[dict[str, list[float]], list[int], list[int]]:
    by_kind = calls(stub, client, namespace)
    for query in QUERIES:  # warm-up: connections, plans, caches
        for call in by_kind.values():
            call(query)
    latencies: dict[str, list[float]] = {k: [] for k in KINDS}
    tokens, packed = [], []
    for i in range(n):
        query = QUERIES[i % len(QUERIES)]
        order = KINDS[i % len(KINDS):] + KINDS[:i % len(KINDS)]  # no kind always first
        for kind in order:
            start = time.perf_counter()
            reply = by_kind[kind](query)
            latencies[kind].append((time.perf_counter() - start) * 1000)
            if kind == "context":
                tokens.append(reply.tokens)
                packed.append(len(reply.items))
            if getattr(reply, "degraded", False):
                raise SystemExit(f"{kind} was degraded for {query!r}")
    return latencies, tokens, packed


def report(latencies: dict[str, list[float]], tokens: list[int], packed: list[int], n: int,
           startup_s: float | None, tokenizer: str) -> tuple[str, dict[str, Any]]:
    rows = {k: {"p50_ms": percentile(v, 50), "p95_ms": percentile(v, 95),
                "p99_ms": percentile(v, 99), "mean_ms": statistics.fmean(v)}
            for k, v in latencies.items()}
    diff = paired_bootstrap([c - r for c, r in zip(latencies["context"],
                                                    latencies["recall k=20"], strict=True)])
    lines = [
        "# Context latency next to plain recall",
        "",
        f"`python -m benchmarks context-latency`: {n} rounds, each the four calls below for the "
        "same demo "
        "question (order rotating), one client, sequential; every service its own process on "
        f"an embedded Postgres; {platform.machine()} python {platform.python_version()}; "
        f"tokens counted by `{tokenizer}`.",
        "",
        "| call | p50 ms | p95 ms | p99 ms | mean ms |",
        "|---|---:|---:|---:|---:|",
        *[f"| {k} | {r['p50_ms']:.2f} | {r['p95_ms']:.2f} | {r['p99_ms']:.2f} | "
          f"{r['mean_ms']:.2f} |" for k, r in rows.items()],
        "",
        f"Context minus recall k=20, mean per round: {diff.delta:+.2f} ms "
        f"[{diff.low:+.2f}, {diff.high:+.2f}] (paired bootstrap 95% CI).",
        f"Context packed {statistics.fmean(packed):.1f} memories in "
        f"{statistics.fmean(tokens):.0f} tokens on average (budget 1000).",
    ]
    if startup_s is not None:
        lines.append(f"Stack start-up: {startup_s:.1f} s.")
    data = {"n": n, "rows": rows, "tokenizer": tokenizer,
            "context_minus_recall_k20_ms": {"delta": diff.delta, "low": diff.low,
                                            "high": diff.high},
            "mean_tokens": statistics.fmean(tokens), "mean_packed": statistics.fmean(packed),
            "stack_startup_s": startup_s}
    return "\n".join(lines) + "\n", data


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--target", help="measure an already running gateway (demo loaded)")
    parser.add_argument("--namespace", default=DEMO_NAMESPACE)
    args = parser.parse_args(argv)

    stack = None
    startup_s = None
    tmp = tempfile.TemporaryDirectory(prefix="recallmesh-bench-")
    try:
        if args.target is None:
            stack = Stack(env={**BENCH_ENV, "RECALLMESH_DATA_DIR": tmp.name, **free_port_env()})
            startup_s = start_stack(stack)
            with gateway_client(stack) as client:
                store_memories(client, args.namespace, read_jsonl(DEMO_FILE), 100,
                               wait_index=True)
        target = stack.endpoints["gateway"] if stack else args.target
        key = stack.api_key if stack else client_api_key()
        with (stack.dial() if stack else dial_gateway(target)) as channel, \
                Client(target, namespace=args.namespace, api_key=key) as client:
            stub = memory_pb2_grpc.MemoryServiceStub(channel)
            latencies, tokens, packed = measure(stub, client, args.namespace, args.n)
            tokenizer = client.context(QUERIES[0]).tokenizer
    finally:
        if stack is not None:
            stack.stop()
        tmp.cleanup()
    text, data = report(latencies, tokens, packed, args.n, startup_s, tokenizer)
    publish(text, REPORTS / "context-latency.md", REPORTS / "context-latency.json", data)


if __name__ == "__main__":
    main()
