"""Hybrid recall through the real gateway: latency under concurrency, the gateway's own
overhead, and the latency of a recall while one leg hangs.

  python -m benchmarks.performance.gateway_recall [--memories 5000] [--requests 600]
                                                  [--concurrency 1,8,32] [--legs lexical,vector]
                                                  [--hang-requests 50] [--json PATH]

It starts its own stack (embedded Postgres in a temporary directory, every
service on free ports, plus a "hang" retriever leg served by this process
that never answers in time), loads --memories real texts (LoCoMo turns, then
LongMemEval turns) through StoreBatch with an index wait, and sends real
benchmark questions as Recall requests (k=10, default budget) from N client
threads. For each request it records the client-observed latency, the
gateway's own time (RecallResponse.latency_ms) and each leg's latency, so the
gateway overhead over its slowest leg (fan-out + fusion + hydration) can be
shown per request. The hang phase sends the same questions to a second
gateway whose legs include the hanging one: its latency must sit at the
budget, not beyond. Authentication stays on: every call carries the stack's local admin key
(the gateway) or its internal token (the legs), and the second gateway shares that token.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent import futures
from pathlib import Path

import grpc

from benchmarks.harness.data import content_of
from benchmarks.harness.script import (
    BENCH_ENV,
    gateway_client,
    names,
    positive_ints,
    recallmesh_env,
    start_stack,
)
from benchmarks.harness.stats import percentile
from recallmesh.client import Client, NewMemory
from recallmesh.policy import RecallPolicy
from recallmesh.stack.supervisor import Stack, free_port_env
from recallmesh.v1 import (
    embedder_pb2,
    embedder_pb2_grpc,
    memory_pb2,
    memory_pb2_grpc,
    retriever_pb2,
    retriever_pb2_grpc,
)
from recallmesh.wire.validation import MAX_CONTENT_BYTES
from tests.helpers import store_batch_indexed

DATASETS = Path(__file__).resolve().parents[3] / "shared" / "datasets"  # beside the checkout
NAMESPACE = "bench"


def read_texts(root: Path, limit: int, max_chars: int = MAX_CONTENT_BYTES) -> list[str]:
    """The first `limit` corpus records' contents, as the quality runs store them (so the
    vector store's split vectors are hits here too)."""
    texts: list[str] = []
    for name in ("locomo", "longmemeval", "scifact"):
        path = root / name / "corpus.jsonl"
        if not path.is_file():
            continue
        with open(path) as f:
            for line in f:
                text = content_of(json.loads(line))
                if text != "(empty)":
                    texts.append(text[:max_chars])
                if len(texts) >= limit:
                    return texts
    if len(texts) < limit:
        raise SystemExit(f"only {len(texts)} texts under {root}; lower --memories")
    return texts


def read_queries(root: Path, limit: int) -> list[str]:
    queries: list[str] = []
    for name in ("locomo", "longmemeval", "scifact"):
        path = root / name / "queries.jsonl"
        if path.is_file():
            with open(path) as f:
                queries.extend(json.loads(line)["text"] for line in f)
    if not queries:
        raise SystemExit(f"no queries.jsonl under {root}")
    return queries[:limit]


class HangingLeg(retriever_pb2_grpc.RetrieverServiceServicer):
    """A leg that never answers within any budget (until its caller gives up)."""

    def Search(self, request, context):
        while context.is_active():
            time.sleep(0.005)
        return retriever_pb2.SearchResponse()


def load(client: Client, texts: list[str], batch: int = 500) -> float:
    started = time.perf_counter()
    for i in range(0, len(texts), batch):
        store_batch_indexed(client, NAMESPACE, [NewMemory(t) for t in texts[i : i + batch]])
    return time.perf_counter() - started


def run_load(connect: Callable[[], grpc.Channel], queries: list[str], requests: int,
             concurrency: int) -> dict:
    """Send `requests` recalls from `concurrency` threads (each its own channel to the gateway,
    made by `connect`, e.g. `stack.dial`); per-request measurements."""
    results: list[dict] = []
    errors: Counter[str] = Counter()
    lock = threading.Lock()
    counter = iter(range(requests))

    def worker() -> None:
        with connect() as connection:
            stub = memory_pb2_grpc.MemoryServiceStub(connection)
            while True:
                with lock:
                    i = next(counter, None)
                if i is None:
                    return
                request = memory_pb2.RecallRequest(namespace=NAMESPACE, query=queries[i % len(
                    queries)], k=10)
                start = time.perf_counter()
                try:
                    response = stub.Recall(request, timeout=30)
                except grpc.RpcError as error:  # counted, not fatal: a refusal or a late read
                    with lock:
                        errors[error.code().name] += 1
                    continue
                client_ms = (time.perf_counter() - start) * 1000
                legs = {leg.leg: leg for leg in response.legs}
                slowest = max(leg.latency_ms for leg in response.legs)
                with lock:
                    results.append({
                        "client_ms": client_ms,
                        "gateway_ms": response.latency_ms,
                        "slowest_leg_ms": slowest,
                        "overhead_ms": response.latency_ms - slowest,
                        "degraded": response.degraded,
                        "fusion": response.fusion,
                        "legs": {n: (memory_pb2.LegState.Name(leg.state), leg.latency_ms)
                                 for n, leg in legs.items()},
                    })

    started = time.perf_counter()
    with futures.ThreadPoolExecutor(concurrency) as pool:
        for f in [pool.submit(worker) for _ in range(concurrency)]:
            f.result()
    wall = time.perf_counter() - started
    client = [r["client_ms"] for r in results]
    overhead = [r["overhead_ms"] for r in results]
    return {
        "concurrency": concurrency,
        "requests": len(results),
        "errors": dict(errors),  # status code -> recalls that failed (not in any figure)
        "recalls_per_s": len(results) / wall,  # answered OK
        "client_p50_ms": percentile(client, 50),
        "client_p95_ms": percentile(client, 95),
        "client_p99_ms": percentile(client, 99),
        "gateway_p50_ms": percentile([r["gateway_ms"] for r in results], 50),
        "slowest_leg_p50_ms": percentile([r["slowest_leg_ms"] for r in results], 50),
        "overhead_p50_ms": percentile(overhead, 50),
        "overhead_p95_ms": percentile(overhead, 95),
        "overhead_mean_ms": statistics.fmean(overhead),
        "leg_p50_ms": {
            name: percentile([r["legs"][name][1] for r in results if name in r["legs"]], 50)
            for name in sorted({n for r in results for n in r["legs"]})
        },
        "leg_p95_ms": {
            name: percentile([r["legs"][name][1] for r in results if name in r["legs"]], 95)
            for name in sorted({n for r in results for n in r["legs"]})
        },
        "degraded": sum(r["degraded"] for r in results),
        "local_fusion": sum("local" in r["fusion"] for r in results),
    }


def graph_leg_direct(stack: Stack, queries: list[str]) -> dict:
    """The graph leg's own Search latency: sequential calls with pre-embedded queries."""
    with stack.dial("embedding") as ch:
        embedder = embedder_pb2_grpc.EmbedderServiceStub(ch)
        embedded = [embedder.Embed(embedder_pb2.EmbedRequest(
            texts=[q], kind=embedder_pb2.EMBED_KIND_QUERY), timeout=30) for q in queries]
    latencies, found = [], []
    with stack.dial("graph") as ch:
        graph = retriever_pb2_grpc.RetrieverServiceStub(ch)
        for q, e in zip(queries, embedded, strict=True):
            request = retriever_pb2.SearchRequest(
                namespace=NAMESPACE, query=q, k=50, query_vector=e.embeddings[0].values,
                vector_model=e.model_id)
            graph.Search(request, timeout=30)  # first call may load the namespace graph
            start = time.perf_counter()
            response = graph.Search(request, timeout=30)
            latencies.append((time.perf_counter() - start) * 1000)
            found.append(len(response.candidates))
    return {"searches": len(latencies), "k": 50, "p50_ms": percentile(latencies, 50),
            "p95_ms": percentile(latencies, 95), "p99_ms": percentile(latencies, 99),
            "mean_candidates": statistics.fmean(found)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=5000)
    parser.add_argument("--requests", type=int, default=600, help="recalls per concurrency level")
    parser.add_argument("--concurrency", type=positive_ints, default="1,8,32")
    parser.add_argument("--hang-requests", type=int, default=50, help="0 skips the hang phase")
    parser.add_argument("--legs", type=names, default="lexical,vector",
                        help="the gateway's legs (RECALLMESH_LEGS), e.g. lexical,vector,graph")
    parser.add_argument("--datasets", type=Path, default=DATASETS)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    levels, legs = args.concurrency, ",".join(args.legs)

    texts = read_texts(args.datasets, args.memories)
    queries = read_queries(args.datasets, 2000)
    hang_server = grpc.server(futures.ThreadPoolExecutor(max_workers=64))
    retriever_pb2_grpc.add_RetrieverServiceServicer_to_server(HangingLeg(), hang_server)
    hang_port = hang_server.add_insecure_port("localhost:0")
    hang_server.start()
    tmp = tempfile.TemporaryDirectory(prefix="recallmesh-bench-")
    stack = hang_stack = None
    try:
        env = {**BENCH_ENV, "RECALLMESH_DATA_DIR": tmp.name, "RECALLMESH_LEGS": legs,
               **free_port_env()}
        stack = Stack(env=env)
        startup_s = start_stack(stack)
        budget_ms = int(os.environ.get("RECALLMESH_RECALL_BUDGET_MS", "800"))
        with gateway_client(stack) as client:
            print(f"loading {len(texts)} memories ...", flush=True)
            load_s = load(client, texts)
            for q in queries[:30]:  # warm-up
                client.recall(q, namespace=NAMESPACE, timeout=30)
        graph_direct = None
        if "graph" in args.legs:
            print("graph leg, direct ...", flush=True)
            graph_direct = graph_leg_direct(stack, queries[:300])
        runs = []
        for level in levels:
            print(f"concurrency {level} ...", flush=True)
            runs.append(run_load(stack.dial, queries, args.requests, level))

        # A second gateway on the same legs (with their internal token) plus one that hangs.
        gateway_ports = {
            k: v for k, v in free_port_env().items() if k.startswith("RECALLMESH_GATEWAY")
        }
        hang_env = {
            **env, **gateway_ports,
            "RECALLMESH_LEGS": "lexical,vector,hang",
            "RECALLMESH_HANG_TARGET": f"localhost:{hang_port}",
            "RECALLMESH_LEXICAL_TARGET": stack.endpoints["lexical"],
            "RECALLMESH_VECTOR_TARGET": stack.endpoints["vector"],
            "RECALLMESH_EMBEDDING_TARGET": stack.endpoints["embedding"],
            "RECALLMESH_FUSION_TARGET": stack.endpoints["fusion"],
            "RECALLMESH_INTERNAL_TOKEN": stack.internal_token,
        }
        hang = None
        if args.hang_requests > 0:
            hang_stack = Stack(env=hang_env, services=("gateway",))
            hang_stack.start()
            print("one leg hanging ...", flush=True)
            hang = run_load(hang_stack.dial, queries, args.hang_requests, 1)
    finally:
        for s in (hang_stack, stack):
            if s is not None:
                s.stop()
        hang_server.stop(0)
        tmp.cleanup()

    result = {
        "benchmark": "gateway_recall",
        "memories": len(texts),
        "budget_ms": budget_ms,
        "load_s": load_s,
        "stack_startup_s": startup_s,
        "machine": f"{platform.platform()}, {os.cpu_count()} CPUs, python "
                   f"{platform.python_version()}",
        "settings": recallmesh_env(),
        "legs": legs,
        "runs": runs,
        "one_leg_hanging": hang,
        "graph_leg_direct": graph_direct,
    }
    method = RecallPolicy.from_env().method
    result["fusion_method"] = method
    print(f"\nrecall over legs {legs} ({method} via the fusion service), {len(texts)} "
          "memories, "
          f"k=10, budget {budget_ms} ms; {result['machine']}")
    print("| concurrency | recalls/s | p50 ms | p95 ms | p99 ms | gateway p50 ms "
          "| slowest leg p50 ms | overhead p50 / p95 ms | degraded | failed |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in runs:
        print(f"| {r['concurrency']} | {r['recalls_per_s']:.1f} | {r['client_p50_ms']:.2f} "
              f"| {r['client_p95_ms']:.2f} | {r['client_p99_ms']:.2f} | {r['gateway_p50_ms']:.2f} "
              f"| {r['slowest_leg_p50_ms']:.2f} | {r['overhead_p50_ms']:.2f} / "
              f"{r['overhead_p95_ms']:.2f} | {r['degraded']} | "
              f"{', '.join(f'{c} {n}' for c, n in sorted(r.get('errors', {}).items())) or 0} |")
    print("\nper-leg latency p50 / p95 ms (gateway-measured, query embedding included in the "
          "legs that need a vector): " + "; ".join(
              f"c={r['concurrency']}: " + ", ".join(
                  f"{n} {v:.1f} / {r['leg_p95_ms'][n]:.1f}" for n, v in r["leg_p50_ms"].items())
              for r in runs))
    h = hang
    if h is not None:
        print(f"\none leg hanging (budget {budget_ms} ms, {h['requests']} sequential recalls): "
              f"p50 {h['client_p50_ms']:.1f} ms, p95 {h['client_p95_ms']:.1f} ms, "
              f"p99 {h['client_p99_ms']:.1f} ms; degraded {h['degraded']}/{h['requests']}")
    if graph_direct is not None:
        g = graph_direct
        print(f"\ngraph leg Search, direct gRPC, {g['searches']} sequential pre-embedded queries, "
              f"k=50: p50 {g['p50_ms']:.2f} ms, p95 {g['p95_ms']:.2f} ms, p99 {g['p99_ms']:.2f} ms "
              f"({g['mean_candidates']:.1f} candidates on average)")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
