"""Speed (issue 26): latency against the peers, concurrency, ingest and the per-stage breakdown,
through the real stack, per model, in one run.

  python -m benchmarks.performance.speed [--models nomic-embed-text-v1.5,...] [--memories 5000]
      [--rounds 300] [--configs default,lexical_bm25,vector] [--peers ...] [--clients 8,32]
      [--report-to FILE.md] [--json FILE]

For each model (a catalogue name, served through RECALLMESH_EMBEDDING_MANIFEST; every other
setting the shipped default, the query cache off: BENCH_ENV) a stack of its own is started and
  1. ingest: loaded with --memories real texts (LoCoMo then LongMemEval turns, one namespace)
     by StoreBatch with index_wait, 500 a call: the clock stops when every memory has its vector
     and its concepts (the indexer extracts them in the same job), so the rate is what a client
     sees end to end. Beside it, the same model in this process (OnnxEmbedder with the
     embedding service's own settings) embeds every --ingest-every'th of those texts as
     documents: the model's own rate, with nothing of the service around it.
  2. stages: --stage-recalls recalls one after another (k=10, default budget), every service's
     Prometheus histograms read before and after (benchmarks/performance/recall_stages.py).
  3. latency: --rounds real questions; each round asks every configuration (through the gateway)
     and every peer (over the memories the stack stored, with the vectors it stored, the query
     embedded by the same embedding service) one question, in an order that rotates each round,
     so drift and caches favour nobody. Peers: LanceDB hybrid (in process) and the single-SQL
     pgvector hybrid (in the stack's Postgres), benchmarks/harness/peers.py.
  4. concurrency: for each of --clients, that many closed-loop clients (a thread and a channel
     each) send --concurrency-requests recalls: recalls/s answered, client p50/p95/p99, degraded
     answers (a leg missed the budget: the vector leg when the query embedding queued), errors.
  5. repeated questions: the embedding service is restarted with the query cache on
     (RECALLMESH_EMBEDDING_QUERY_CACHE_MB, the shipped default), --repeat questions are asked
     twice: the second pass finds every query vector cached.
Latency compares only within one model's stack of one run; the models run one after another on
the same texts and questions.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from pgvector.psycopg import register_vector

from benchmarks.harness.configs import CONFIGS
from benchmarks.harness.load import loaded_stack
from benchmarks.harness.peers import PEERS, Doc, K, timed_search
from benchmarks.harness.runner import gateway_legs
from benchmarks.harness.script import gateway_client, machine_info, names, positive_ints, publish
from benchmarks.harness.stats import latency_summary
from benchmarks.performance.gateway_recall import NAMESPACE, read_texts, run_load
from benchmarks.performance.recall_stages import snapshot, stage_rows, stage_table
from recallmesh.embedding_models.manifest import DEFAULT_MODEL, ModelManifest, model_cache_dir
from recallmesh.services.embedding.core import OnnxEmbedder
from recallmesh.services.embedding.settings import EmbeddingSettings
from recallmesh.v1 import embedder_pb2, embedder_pb2_grpc, memory_pb2, memory_pb2_grpc

DATASETS = Path(__file__).resolve().parents[2] / ".." / "shared" / "datasets"
QUERY_CACHE_ENV = "RECALLMESH_EMBEDDING_QUERY_CACHE_MB"
# Issue 26's reference points: the README's 32-client run before this work, and the targets.
BASELINE_32_CLIENTS_PER_S = 55.0
TARGET_P95_MS, TARGET_PEER_RATIO, TARGET_32_P95_MS, TARGET_INGEST_SHARE = 25.0, 1.2, 250.0, 0.8


def manifest_path(model: str) -> Path:
    return model_cache_dir() / model / "manifest.json"


def in_process_rate(model: str, texts: list[str]) -> dict[str, float]:
    """The model's own document rate in this process, with the embedding service's settings
    (its execution provider too: RECALLMESH_EMBEDDING_PROVIDER)."""
    settings = EmbeddingSettings.from_env()
    embedder = OnnxEmbedder(ModelManifest.load(manifest_path(model)), provider=settings.provider,
                            intra_op_threads=settings.intra_op_threads,
                            max_batch=settings.max_batch,
                            max_batch_tokens=settings.max_batch_tokens)
    embedder.warm_up()
    started = time.perf_counter()
    embedder.embed(texts, kind="document")
    seconds = time.perf_counter() - started
    return {"texts": len(texts), "seconds": seconds, "per_s": len(texts) / seconds}


def stored_docs(dsn: str) -> list[Doc]:
    """What the stack stored in the namespace: id, content, vector (read back from Postgres)."""
    with psycopg.connect(dsn) as conn:
        register_vector(conn)
        rows = conn.execute("SELECT id::text, content, embedding FROM memories "
                            "WHERE namespace = %s AND deleted_at IS NULL ORDER BY created_at, id",
                            (NAMESPACE,)).fetchall()
    return [Doc(i, content, None if e is None else np.asarray(e.to_list(), dtype=np.float32))
            for i, content, e in rows]


def timed_recall(stub: Any, query: str, overrides: Any) -> float:
    started = time.perf_counter()
    stub.Recall(memory_pb2.RecallRequest(namespace=NAMESPACE, query=query, k=K,
                                         fusion=overrides), timeout=30)
    return (time.perf_counter() - started) * 1000


def latency_rounds(loaded: Any, questions: list[str], configs: list[str],
                   peers: list[str], workdir: str) -> dict[str, dict]:
    """Each question asked of every configuration and peer, the order rotating per round."""
    stack = loaded.stack
    docs = stored_docs(stack.dsn)
    latencies: dict[str, list[float]] = {name: [] for name in [*configs, *peers]}
    builds: dict[str, float] = {}
    with (stack.dial() as channel, stack.dial("embedding") as embedding_channel):
        stub = memory_pb2_grpc.MemoryServiceStub(channel)
        embedder = embedder_pb2_grpc.EmbedderServiceStub(embedding_channel)
        with gateway_client(stack) as client:
            legs = gateway_legs(client)
        overrides = {name: CONFIGS[name].overrides(legs) for name in configs}

        def embed(text: str) -> np.ndarray:
            response = embedder.Embed(embedder_pb2.EmbedRequest(
                texts=[text], kind=embedder_pb2.EMBED_KIND_QUERY), timeout=30)
            return np.asarray(response.embeddings[0].values, dtype=np.float32)

        with contextlib.ExitStack() as built:  # the peers' indexes last until the rounds end
            indexes = {}
            for name in peers:
                builder = built.enter_context(PEERS[name].builder(workdir, stack.dsn))
                started = time.perf_counter()
                indexes[name] = builder.build(docs)
                builds[name] = time.perf_counter() - started
            for name in [*configs, *peers]:  # one untimed call each
                run_one(name, questions[0], stub, overrides, indexes, embed)
            order = [*configs, *peers]
            for r, question in enumerate(questions):
                for name in order[r % len(order):] + order[:r % len(order)]:
                    latencies[name].append(run_one(name, question, stub, overrides, indexes,
                                                   embed))
    return {name: {**latency_summary(values), "n": len(values),
                   **({"index_build_s": builds[name]} if name in builds else {})}
            for name, values in latencies.items()}


def run_one(name: str, question: str, stub: Any, overrides: dict, indexes: dict,
            embed: Any) -> float:
    if name in overrides:
        return timed_recall(stub, question, overrides[name])
    return timed_search(indexes[name], question, embed if PEERS[name].needs_vectors else None,
                        K)[1]


def stages(loaded: Any, questions: list[str]) -> dict[str, Any]:
    stack = loaded.stack
    with stack.dial() as channel:
        stub = memory_pb2_grpc.MemoryServiceStub(channel)
        before = snapshot(stack.metrics)
        client = [timed_recall(stub, q, None) for q in questions]
        after = snapshot(stack.metrics)
    return {"recalls": len(questions), "client_ms": latency_summary(client),
            "rows": [{"stage": s, "mean_ms": v, "what": w}
                     for s, v, w in stage_rows(before, after, len(questions))]}


def repeated(loaded: Any, questions: list[str]) -> dict[str, Any]:
    """The embedding service restarted with the query cache on; the questions asked twice."""
    stack = loaded.stack
    stack.stop_service("embedding")
    stack.env.pop(QUERY_CACHE_ENV, None)  # the shipped default
    stack.start_service("embedding")
    passes = []
    with stack.dial() as channel:
        stub = memory_pb2_grpc.MemoryServiceStub(channel)
        for _ in range(2):
            passes.append(latency_summary([timed_recall(stub, q, None) for q in questions]))
    return {"questions": len(questions), "first": passes[0], "second": passes[1]}


def run_model(model: str, args: argparse.Namespace) -> dict[str, Any]:
    env = {}
    if model != DEFAULT_MODEL:
        env["RECALLMESH_EMBEDDING_MANIFEST"] = str(manifest_path(model))
    print(f"{model}: starting a stack, loading {args.memories} memories ...", flush=True)
    out: dict[str, Any] = {"model": model}
    with loaded_stack("speed", args.datasets, args.memories, env) as loaded, \
            tempfile.TemporaryDirectory(prefix="recallmesh-speed-peers-") as workdir:
        texts = read_texts(args.datasets, loaded.memories)
        out["ingest"] = {"memories": loaded.memories, "seconds": loaded.load_s,
                         "per_s": loaded.memories / loaded.load_s,
                         "in_process": in_process_rate(model, texts[::args.ingest_every])}
        print(f"{model}: ingest {out['ingest']['per_s']:.1f}/s through the stack, "
              f"{out['ingest']['in_process']['per_s']:.1f}/s in process", flush=True)
        questions = loaded.queries[30:]  # the first 30 warmed the stack up
        out["stages"] = stages(loaded, questions[:args.stage_recalls])
        out["latency"] = latency_rounds(loaded, questions[:args.rounds], args.configs,
                                        args.peers, workdir)
        print(f"{model}: " + ", ".join(f"{n} p95 {v['p95']:.1f}"
                                       for n, v in out["latency"].items()), flush=True)
        out["concurrency"] = []
        for clients in args.clients:
            result = run_load(loaded.stack.dial, questions, args.concurrency_requests, clients)
            out["concurrency"].append(result)
            print(f"{model}: {clients} clients {result['recalls_per_s']:.1f}/s p95 "
                  f"{result['client_p95_ms']:.0f} ms", flush=True)
        out["repeated"] = repeated(loaded, questions[:args.repeat])
    return out


def report(results: list[dict], args: argparse.Namespace, argv: list[str]) -> str:
    first = results[0]
    lines = [
        "# Speed: latency against the peers, concurrency, ingest, stages",
        "",
        f"Generated by `python -m benchmarks.performance.speed {' '.join(argv)}` "
        f"({datetime.now(UTC):%Y-%m-%d %H:%M} UTC); how it is measured: the script's docstring.",
        "",
        f"- {first['ingest']['memories']} memories (LoCoMo then LongMemEval turns, one "
        "namespace), real benchmark questions; a stack of its own per model, every other "
        "setting the shipped default (authentication on; the query cache off except in the "
        "repeated-questions table: BENCH_ENV).",
        "- Machine: " + ", ".join(f"{k} {v}" for k, v in machine_info().items()),
        "- Targets (issue 26): `default` p95 ≤ "
        f"{TARGET_P95_MS:.0f} ms at one client and ≥ {TARGET_PEER_RATIO}x faster at p95 than "
        f"each peer; 32 clients ≥ 3x {BASELINE_32_CLIENTS_PER_S:.0f} recalls/s at p95 ≤ "
        f"{TARGET_32_P95_MS:.0f} ms; ingest ≥ {TARGET_INGEST_SHARE:.0%} of the in-process rate.",
        "",
        f"## Latency, one client ({args.rounds} questions, every system each round, order "
        "rotating; ms, client side)",
        "",
        "| model | system | p50 | p95 | p99 | mean | its p95 / default's p95 |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        base = r["latency"]["default"]["p95"] if "default" in r["latency"] else None
        for name, v in r["latency"].items():
            ratio = f"{v['p95'] / base:.2f}x" if base else "—"
            lines.append(f"| {r['model']} | {name} | {v['p50']:.1f} | {v['p95']:.1f} | "
                         f"{v['p99']:.1f} | {v['mean']:.1f} | {ratio} |")
    lines += ["", "Peers: " + "; ".join(f"`{p}`: {PEERS[p].description}" for p in args.peers)
              + ". Their query vector comes from the same embedding service (one gRPC call, "
              "as the gateway's).", "",
              "## Concurrency (closed-loop clients, a thread and a channel each)", "",
              "| model | clients | recalls/s answered | p50 ms | p95 ms | p99 ms | degraded | "
              "errors | vs 55/s |",
              "|---|---:|---:|---:|---:|---:|---:|---|---:|"]
    for r in results:
        for c in r["concurrency"]:
            errors = ", ".join(f"{k} {v}" for k, v in sorted(c["errors"].items())) or "none"
            lines.append(f"| {r['model']} | {c['concurrency']} | {c['recalls_per_s']:.1f} | "
                         f"{c['client_p50_ms']:.0f} | {c['client_p95_ms']:.0f} | "
                         f"{c['client_p99_ms']:.0f} | {c['degraded']} of {c['requests']} | "
                         f"{errors} | {c['recalls_per_s'] / BASELINE_32_CLIENTS_PER_S:.2f}x |")
    lines += ["", "## Ingest (graph extraction included) against the model's own rate", "",
              "Through the stack, the memories' vectors come from the vector store (BENCH_ENV) "
              "wherever an earlier run stored them, and concept names the store does not hold "
              "are embedded by the model: the stack's rate is the write path's with that much "
              "model work, the in-process rate the model's alone.", "",
              "| model | through the stack, memories/s | in process, texts/s | stack / in "
              "process | load s |", "|---|---:|---:|---:|---:|"]
    for r in results:
        i = r["ingest"]
        lines.append(f"| {r['model']} | {i['per_s']:.1f} | {i['in_process']['per_s']:.1f} "
                     f"({i['in_process']['texts']} texts) | "
                     f"{i['per_s'] / i['in_process']['per_s']:.0%} | {i['seconds']:.0f} |")
    lines += ["", "## Repeated questions (the query cache on, the shipped default)", "",
              "| model | questions | first pass p50 / p95 ms | second pass p50 / p95 ms |",
              "|---|---:|---|---|"]
    for r in results:
        p = r["repeated"]
        lines.append(f"| {r['model']} | {p['questions']} | {p['first']['p50']:.1f} / "
                     f"{p['first']['p95']:.1f} | {p['second']['p50']:.1f} / "
                     f"{p['second']['p95']:.1f} |")
    lines += ["", f"## Where a recall's time goes ({first['stages']['recalls']} recalls one "
              "after another; mean ms per recall; indented rows are inside the row above, legs "
              "run in parallel)", ""]
    lines += stage_table([(r["model"], r["stages"]["client_ms"]["mean"], r["stages"]["rows"])
                          for r in results])
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=names, default=DEFAULT_MODEL)
    parser.add_argument("--memories", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--stage-recalls", type=int, default=200)
    parser.add_argument("--configs", type=names, default="default,lexical_bm25,vector")
    parser.add_argument("--peers", type=names, default="peer_lancedb_hybrid,peer_pgvector_hybrid")
    parser.add_argument("--clients", type=positive_ints, default="8,32")
    parser.add_argument("--concurrency-requests", type=int, default=1500)
    parser.add_argument("--repeat", type=int, default=100)
    parser.add_argument("--ingest-every", type=int, default=5)
    parser.add_argument("--datasets", type=Path, default=DATASETS)
    parser.add_argument("--report-to", type=Path)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    unknown = [c for c in args.configs if c not in CONFIGS] + \
        [p for p in args.peers if p not in PEERS]
    if unknown or "default" not in args.configs:
        raise SystemExit(f"unknown configurations {unknown}, or no `default` among --configs")
    results = [run_model(model, args) for model in args.models]
    publish(report(results, args, argv), args.report_to, args.json, results, indent=1)


if __name__ == "__main__":
    main()
