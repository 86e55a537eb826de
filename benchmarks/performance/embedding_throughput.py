"""Embedding service throughput and query latency, measured through gRPC.

  python -m benchmarks.performance.embedding_throughput [--seconds 10] [--target host:port]

Without --target it starts its own embedding service (plus the embedded
Postgres that Stack.start always brings up) in a temporary directory on free
ports; RECALLMESH_EMBEDDING_* variables in the environment reach the service.
With --target every call carries RECALLMESH_INTERNAL_TOKEN (the service's
internal credential; TLS per RECALLMESH_TLS_*).
Texts come from a dataset corpus (--dataset, JSONL with a "text" field; the
sibling queries.jsonl supplies the query texts) or, when the file is missing,
from a fixed list of synthetic sentences.

Measured, each setting for --seconds of wall time after a short warm-up:
  * DOCUMENT embeddings, sequential Embed calls of --batch-sizes texts each
    (texts/s and per-call latency);
  * DOCUMENT embeddings, --clients concurrent clients each sending one-text
    calls (shows the server's micro-batching coalescing concurrent calls);
  * QUERY latency: --latency-n sequential one-text calls, p50 / p95 / p99.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc

from benchmarks.harness.script import (
    BENCH_ENV,
    dial_internal,
    machine_info,
    positive_ints,
    start_stack,
)
from benchmarks.harness.stats import percentile
from recallmesh.stack.supervisor import Stack, free_port_env
from recallmesh.v1 import embedder_pb2, embedder_pb2_grpc

DEFAULT_DATASET = Path("/work/shared/datasets/locomo/corpus.jsonl")
RPC_TIMEOUT_S = 120.0

SYNTHETIC_DOCUMENTS = [
    "Maya prefers Svelte over React for small frontend projects.",
    "The weekly sync moved to Thursdays at 10:00 after the reorg.",
    "Peanut allergy: never order the satay for the team lunch.",
    "We chose Postgres for the billing service because of transactional outbox support.",
    "Half marathon training plan: three runs a week, long run on Sundays.",
    "The cat is called Miso and she hates the vacuum cleaner.",
    "Residence permit renewal must be filed before the end of March.",
    "Code reviews should stay under four hundred changed lines when possible.",
    "Trip to Porto planned for the second week of July, flights already booked.",
    "Observability dashboards live in Grafana under the platform folder.",
    "Coffee order: oat flat white, no sugar, extra hot.",
    "The on-call rotation changes every Monday at noon UTC.",
    "Jonas is learning Portuguese and practises with a tutor twice a week.",
    "The quarterly planning document is due two weeks before the offsite.",
    "Deployment freezes start on December 18 and end on January 3.",
    "The staging database is refreshed from a masked production snapshot nightly.",
]
SYNTHETIC_QUERIES = [
    "which frontend framework does Maya like?",
    "when is the weekly sync",
    "food allergies of the team",
    "why did we pick Postgres for billing",
    "what is the cat called",
    "when do deployment freezes start",
    "coffee order",
    "who is on call",
]


def read_texts(path: Path, limit: int) -> list[str]:
    """Non-blank "text" values of a JSONL file (title prepended when present), at most limit."""
    texts: list[str] = []
    with path.open(encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            record = json.loads(line)
            text = str(record.get("text") or "").strip()
            title = str(record.get("title") or "").strip()
            if title:
                text = f"{title}. {text}" if text else title
            if text:
                texts.append(text)
            if len(texts) >= limit:
                break
    return texts


def load_texts(dataset: Path, limit: int) -> tuple[list[str], list[str], str]:
    """(documents, queries, source description)."""
    if not dataset.is_file():
        return SYNTHETIC_DOCUMENTS, SYNTHETIC_QUERIES, "synthetic (dataset not found)"
    documents = read_texts(dataset, limit)
    if not documents:
        raise SystemExit(f"error: {dataset} holds no non-blank 'text' field")
    queries_path = dataset.with_name("queries.jsonl")
    queries = read_texts(queries_path, limit) if queries_path.is_file() else []
    source = str(dataset)
    if not queries:
        queries = documents
    else:
        source += f" (+ {queries_path.name})"
    return documents, queries, source


def embed(stub: Any, texts: list[str], kind: int) -> Any:
    return stub.Embed(embedder_pb2.EmbedRequest(texts=texts, kind=kind), timeout=RPC_TIMEOUT_S)


class TextCycle:
    """Hands out texts round-robin (thread-safe), so calls do not repeat the same batch."""

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts
        self.position = 0
        self.lock = threading.Lock()

    def take(self, n: int) -> list[str]:
        with self.lock:
            out = [self.texts[(self.position + i) % len(self.texts)] for i in range(n)]
            self.position = (self.position + n) % len(self.texts)
        return out


def summarise(kind: str, batch: int, clients: int, texts: int, calls: int, elapsed: float,
              latencies_ms: list[float], truncated: int) -> dict[str, Any]:
    latencies_ms = sorted(latencies_ms)
    return {
        "kind": kind,
        "batch_size": batch,
        "clients": clients,
        "calls": calls,
        "texts": texts,
        "seconds": elapsed,
        "texts_per_s": texts / elapsed,
        "calls_per_s": calls / elapsed,
        "call_p50_ms": percentile(latencies_ms, 50),
        "call_p95_ms": percentile(latencies_ms, 95),
        "call_mean_ms": statistics.fmean(latencies_ms),
        "truncated_texts": truncated,
    }


def run_sequential(stub: Any, cycle: TextCycle, batch: int, seconds: float,
                   min_calls: int) -> dict[str, Any]:
    embed(stub, cycle.take(batch), embedder_pb2.EMBED_KIND_DOCUMENT)  # warm-up for this shape
    latencies: list[float] = []
    texts = truncated = 0
    start = time.perf_counter()
    while True:
        chunk = cycle.take(batch)
        t0 = time.perf_counter()
        response = embed(stub, chunk, embedder_pb2.EMBED_KIND_DOCUMENT)
        latencies.append((time.perf_counter() - t0) * 1000)
        if len(response.embeddings) != len(chunk):
            raise SystemExit(f"error: asked for {len(chunk)} embeddings, got "
                             f"{len(response.embeddings)}")
        texts += len(chunk)
        truncated += response.truncated
        if time.perf_counter() - start >= seconds and len(latencies) >= min_calls:
            break
    elapsed = time.perf_counter() - start
    return summarise("document", batch, 1, texts, len(latencies), elapsed, latencies, truncated)


def run_concurrent(connect: Callable[[], grpc.Channel], cycle: TextCycle, batch: int,
                   clients: int, seconds: float, min_calls: int) -> dict[str, Any]:
    """`clients` threads, each with its own channel (made by `connect`), each sending calls
    back to back."""
    channels = [connect() for _ in range(clients)]
    try:
        stubs = [embedder_pb2_grpc.EmbedderServiceStub(c) for c in channels]
        for stub in stubs:  # connect every channel before the clock starts
            embed(stub, cycle.take(batch), embedder_pb2.EMBED_KIND_DOCUMENT)
        barrier = threading.Barrier(clients + 1)
        stop = threading.Event()
        results: list[tuple[int, int, list[float]]] = [(0, 0, [])] * clients
        errors: list[BaseException] = []

        def client(index: int) -> None:
            latencies: list[float] = []
            texts = truncated = 0
            try:
                barrier.wait()
                while not stop.is_set() or len(latencies) < min_calls:
                    chunk = cycle.take(batch)
                    t0 = time.perf_counter()
                    response = embed(stubs[index], chunk, embedder_pb2.EMBED_KIND_DOCUMENT)
                    latencies.append((time.perf_counter() - t0) * 1000)
                    texts += len(response.embeddings)
                    truncated += response.truncated
            except BaseException as exc:  # reported by the main thread
                errors.append(exc)
            results[index] = (texts, truncated, latencies)

        threads = [threading.Thread(target=client, args=(i,), daemon=True)
                   for i in range(clients)]
        for t in threads:
            t.start()
        barrier.wait()
        start = time.perf_counter()
        time.sleep(seconds)
        stop.set()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - start
        if errors:
            raise errors[0]
    finally:
        for c in channels:
            c.close()
    texts = sum(r[0] for r in results)
    truncated = sum(r[1] for r in results)
    latencies = [x for r in results for x in r[2]]
    return summarise("document", batch, clients, texts, len(latencies), elapsed, latencies,
                     truncated)


def run_query_latency(stub: Any, queries: list[str], n: int, warmup: int) -> dict[str, Any]:
    for i in range(warmup):
        embed(stub, [queries[i % len(queries)]], embedder_pb2.EMBED_KIND_QUERY)
    latencies = []
    for i in range(n):
        t0 = time.perf_counter()
        embed(stub, [queries[(warmup + i) % len(queries)]], embedder_pb2.EMBED_KIND_QUERY)
        latencies.append((time.perf_counter() - t0) * 1000)
    latencies.sort()
    return {
        "kind": "query",
        "n": n,
        "warmup": warmup,
        "p50_ms": percentile(latencies, 50),
        "p95_ms": percentile(latencies, 95),
        "p99_ms": percentile(latencies, 99),
        "mean_ms": statistics.fmean(latencies),
        "min_ms": latencies[0],
        "max_ms": latencies[-1],
    }


def print_report(result: dict[str, Any]) -> None:
    info, m = result["model"], result["machine"]
    print(f"model: {info['model_id']} (dim {info['dimension']}, max_tokens {info['max_tokens']}, "
          f"precision {info['precision']}, pooling {info['pooling']}), "
          f"provider {info['provider']}"
          + (f" - note: {info['provider_note']}" if info["provider_note"] else ""))
    print(f"machine: {m['platform']}, {m['cpu_count']} CPUs ({m['cpus_usable']} usable), "
          f"python {m['python']}, {m['onnxruntime']} (benchmark side)")
    s = result["settings"]
    print(f"texts: {s['text_source']}, {s['documents']} documents "
          f"(mean {s['document_mean_chars']:.0f} chars), {s['queries']} queries; "
          f"{s['seconds']:.0f} s per setting; target {s['target']}")
    if s["service_env"] is None:
        service_env = "unknown (external service)"
    else:
        service_env = ", ".join(f"{k}={v}" for k, v in s["service_env"].items()) or "defaults"
    print(f"embedding service settings: {service_env}")
    print()
    print("DOCUMENT throughput (texts/s through gRPC)")
    print("| batch | clients | calls | texts | texts/s | call p50 ms | call p95 ms | truncated |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in result["throughput"]:
        print(f"| {r['batch_size']} | {r['clients']} | {r['calls']} | {r['texts']} "
              f"| {r['texts_per_s']:.1f} | {r['call_p50_ms']:.2f} | {r['call_p95_ms']:.2f} "
              f"| {r['truncated_texts']} |")
    q = result["query_latency"]
    print()
    print(f"QUERY latency, {q['n']} sequential one-text calls (after {q['warmup']} warm-up)")
    print("| p50 ms | p95 ms | p99 ms | mean ms | min ms | max ms |")
    print("|---:|---:|---:|---:|---:|---:|")
    print(f"| {q['p50_ms']:.2f} | {q['p95_ms']:.2f} | {q['p99_ms']:.2f} | {q['mean_ms']:.2f} "
          f"| {q['min_ms']:.2f} | {q['max_ms']:.2f} |")
    if result["stack_startup_s"] is not None:
        print(f"\nstack start-up (Postgres + embedding service): {result['stack_startup_s']:.2f} s")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", help="measure an already running embedding service "
                        "(called with RECALLMESH_INTERNAL_TOKEN)")
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET,
                        help="JSONL corpus with a 'text' field (default: %(default)s)")
    parser.add_argument("--texts", type=int, default=5000,
                        help="at most this many corpus texts are read and cycled through")
    parser.add_argument("--batch-sizes", type=positive_ints, default=[1, 8, 32, 128],
                        help="sequential DOCUMENT batch sizes (default: 1,8,32,128)")
    parser.add_argument("--clients", type=int, default=8,
                        help="concurrent clients for the coalescing run (0 skips it)")
    parser.add_argument("--concurrent-batch", type=int, default=1,
                        help="texts per call of each concurrent client")
    parser.add_argument("--seconds", type=float, default=10.0,
                        help="wall time of each throughput setting")
    parser.add_argument("--min-calls", type=int, default=3,
                        help="each throughput setting makes at least this many calls")
    parser.add_argument("--latency-n", type=int, default=300, help="timed QUERY calls")
    parser.add_argument("--latency-warmup", type=int, default=30)
    parser.add_argument("--json", type=Path, help="also write the numbers to this JSON file")
    args = parser.parse_args(argv)
    if args.texts < 1 or args.latency_n < 1 or args.seconds <= 0 or args.clients < 0:
        parser.error("--texts and --latency-n must be >= 1, --seconds > 0, --clients >= 0")

    documents, queries, source = load_texts(args.dataset, args.texts)
    startup_s = None
    stack = None
    tmp = tempfile.TemporaryDirectory(prefix="recallmesh-bench-")
    try:
        target = args.target
        connect: Callable[[], grpc.Channel]
        if target is None:
            stack = Stack(env={**BENCH_ENV, "RECALLMESH_DATA_DIR": tmp.name, **free_port_env()},
                          services=("embedding",))
            startup_s = start_stack(stack)
            target = stack.endpoints["embedding"]
            connect = functools.partial(stack.dial, "embedding")
        else:
            connect = functools.partial(dial_internal, target)
        with connect() as channel:
            try:
                grpc.channel_ready_future(channel).result(timeout=10)
            except grpc.FutureTimeoutError:
                raise SystemExit(f"error: no gRPC server answers at {target}") from None
            stub = embedder_pb2_grpc.EmbedderServiceStub(channel)
            info = stub.ModelInfo(embedder_pb2.ModelInfoRequest(), timeout=10)
            max_texts = info.max_texts_per_call or 256
            too_big = [b for b in args.batch_sizes + [args.concurrent_batch] if b > max_texts]
            if too_big:
                raise SystemExit(f"error: batch sizes {too_big} exceed the service's "
                                 f"max_texts_per_call ({max_texts})")
            cycle = TextCycle(documents)
            throughput = []
            for batch in args.batch_sizes:
                print(f"... DOCUMENT batch {batch}, sequential", file=sys.stderr, flush=True)
                throughput.append(run_sequential(stub, cycle, batch, args.seconds,
                                                 args.min_calls))
            if args.clients:
                print(f"... DOCUMENT batch {args.concurrent_batch}, {args.clients} clients",
                      file=sys.stderr, flush=True)
                throughput.append(run_concurrent(connect, cycle, args.concurrent_batch,
                                                 args.clients, args.seconds, args.min_calls))
            print("... QUERY latency", file=sys.stderr, flush=True)
            query_latency = run_query_latency(stub, queries, args.latency_n,
                                              args.latency_warmup)
        if stack is not None and stack.check_alive():
            raise SystemExit(f"error: services exited during the run: {stack.check_alive()}")
    except grpc.RpcError as exc:
        raise SystemExit(f"error: Embed failed: {exc.code().name}: {exc.details()}") from None
    finally:
        if stack is not None:
            stack.stop()
        tmp.cleanup()

    result = {
        "benchmark": "embedding_throughput",
        "model": {
            "model_id": info.model_id,
            "dimension": info.dimension,
            "max_tokens": info.max_tokens,
            "provider": info.provider,
            "precision": info.precision,
            "pooling": info.pooling,
            "max_texts_per_call": info.max_texts_per_call,
            "provider_note": info.provider_note,
        },
        "machine": machine_info(),
        "settings": {
            "target": args.target or "own stack (embedding service only)",
            "text_source": source,
            "documents": len(documents),
            "document_mean_chars": statistics.fmean(len(t) for t in documents),
            "queries": len(queries),
            "batch_sizes": args.batch_sizes,
            "clients": args.clients,
            "concurrent_batch": args.concurrent_batch,
            "seconds": args.seconds,
            "min_calls": args.min_calls,
            "latency_n": args.latency_n,
            "latency_warmup": args.latency_warmup,
            # Only meaningful for the own stack: the service inherits these.
            "service_env": None if args.target else {
                k: v for k, v in sorted(os.environ.items()) if k.startswith("RECALLMESH_EMBEDDING_")
            },
        },
        "throughput": throughput,
        "query_latency": query_latency,
        "stack_startup_s": startup_s,
    }
    print_report(result)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
