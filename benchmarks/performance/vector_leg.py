"""Vector leg at growing corpus sizes: indexing throughput, search latency, HNSW recall.

  python -m benchmarks.performance.vector_leg [--sizes 5000,100000] [--json PATH]

Starts its own stack (embedded Postgres in a temporary directory, every
service, free ports; RECALLMESH_* variables in the environment reach the
services, e.g. RECALLMESH_VECTOR_EF_SEARCH or RECALLMESH_HNSW_M). For each
size in --sizes, in increasing order, it
  (a) adds memories until the namespace holds that many, from real corpus
      texts (the --datasets corpora concatenated in order, each text cut to
      --max-chars), through the gateway's StoreBatch with index_wait, and
      reports end-to-end indexing throughput (first StoreBatch until every
      vector is in the database, checked with SQL);
  (b) measures the vector leg's RetrieverService.Search latency, called
      directly, for each k in --ks, with query vectors embedded beforehand
      (realistic questions from the datasets' queries.jsonl);
  (c) measures HNSW recall@k against exact search (the same SQL filters, the
      index disabled with SET LOCAL enable_indexscan / enable_bitmapscan =
      off): once through the vector leg (its configured ef_search), and for
      each --ef-sweep value with the vector leg's own SQL run directly.
      Recall is reported by id and tie-aware (an approximate hit counts when
      its distance is within the exact k-th distance; the corpora hold
      duplicate texts, whose identical vectors make id-recall arbitrary);
  and reports table and HNSW index sizes.

The 100k default needs all three corpora (about 108k texts). Embedding them
dominates the run time: a 2-core CPU machine indexed about 20 memories/s with
the default embedding settings (100k: well over an hour) and about 50/s with
RECALLMESH_EMBEDDING_MAX_BATCH=4 (less padding of short texts to long ones);
use e.g. --sizes 500,2000 to check the script quickly, --keep-data to keep the
database and service logs for inspection.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import numpy as np
import psycopg

from benchmarks.harness.data import content_of, load
from benchmarks.harness.script import (
    BENCH_ENV,
    log,
    machine_info,
    names,
    positive_ints,
    recallmesh_env,
    start_stack,
)
from benchmarks.harness.stats import latency_summary, percentile
from recallmesh.gateway.write_keys import normalised_content
from recallmesh.migrations.vector_schema import INDEX_NAME, vector_literal
from recallmesh.services.vector.core import COUNT_TTL_S, build_search_sql, plan_settings
from recallmesh.services.vector.settings import DEFAULT_EF_SEARCH
from recallmesh.stack.supervisor import Stack, free_port_env
from recallmesh.v1 import (
    embedder_pb2,
    embedder_pb2_grpc,
    memory_pb2,
    memory_pb2_grpc,
    retriever_pb2,
    retriever_pb2_grpc,
)
from recallmesh.wire.filters import Filters
from recallmesh.wire.validation import MAX_CONTENT_BYTES, MAX_INDEX_WAIT_MS

DATASETS_ROOT = Path("/work/shared/datasets")
DEFAULT_DATASETS = "longmemeval,locomo,scifact"
INDEX_WAIT_MS = MAX_INDEX_WAIT_MS  # the server's maximum
STORE_TIMEOUT_S = INDEX_WAIT_MS / 1000 + 60
EMBED_ALL_TIMEOUT_S = 600  # after the last StoreBatch, until every memory has its vector
TIE_EPSILON = 1e-6
MAX_QUERY_CHARS = 4000
MAX_CHARS = MAX_CONTENT_BYTES  # each corpus text cut to this (--max-chars)


def latency_summary_ms(latencies_ms: list[float]) -> dict[str, float]:
    return {f"{k}_ms": v for k, v in latency_summary(latencies_ms).items()}


# --------------------------------------------------------------------- inputs


@dataclass(frozen=True)
class Record:
    source: str
    text: str


def record_text(record: dict[str, Any]) -> str:
    """A corpus record's memory content, as the quality runs store it (so the vectors that
    `python -m benchmarks embed-store` keeps for the dev splits are hits here too)."""
    return content_of(record)


def load_corpus(root: Path, datasets: list[str], n: int, max_chars: int) -> list[Record]:
    """The first n distinct memory contents (distinct as the gateway's duplicate rule sees
    them) of the datasets as the quality runs store them
    (benchmarks.harness.data.load, scopes in order), concatenated in dataset order: the texts
    whose vectors `python -m benchmarks embed-store` keeps."""
    records: list[Record] = []
    seen: set[str] = set()
    for name in datasets:
        path = root / name
        if not (path / "corpus.jsonl").is_file():
            raise SystemExit(f"error: corpus not found: {path / 'corpus.jsonl'}")
        data = load(path, unanswerable=True)
        for memories in data.scopes.values():
            for memory in memories:
                text = memory.content[:max_chars].strip()
                said = normalised_content(text)  # the gateway would merge equal ones
                if text and said not in seen:
                    seen.add(said)
                    records.append(Record(name, text))
                if len(records) >= n:
                    return records
    if len(records) < n:
        raise SystemExit(
            f"error: the corpora ({', '.join(datasets)}) hold only {len(records)} distinct "
            f"texts, fewer than the largest size {n}"
        )
    return records


def load_queries(root: Path, datasets: list[str], n: int) -> list[str]:
    """Up to n distinct query texts, taken round-robin from the datasets' queries.jsonl."""
    per_dataset: list[list[str]] = []
    for name in datasets:
        path = root / name / "queries.jsonl"
        if not path.is_file():
            continue
        texts = []
        with path.open(encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    text = record_text(json.loads(line))[:MAX_QUERY_CHARS].strip()
                    if text:
                        texts.append(text)
        per_dataset.append(texts)
    queries: list[str] = []
    seen: set[str] = set()
    for i in range(max((len(t) for t in per_dataset), default=0)):
        for texts in per_dataset:
            if i < len(texts) and texts[i] not in seen:
                seen.add(texts[i])
                queries.append(texts[i])
    if not queries:
        raise SystemExit(f"error: no queries.jsonl with texts under {root} for {datasets}")
    return queries[:n]


# ------------------------------------------------------------------- database


def db_stats(conn: psycopg.Connection, namespace: str) -> dict[str, Any]:
    row = conn.execute(
        "SELECT count(*), count(embedding), count(DISTINCT embedding_model) "
        "FROM memories WHERE namespace = %s AND deleted_at IS NULL",
        (namespace,),
    ).fetchone()
    pending = conn.execute("SELECT count(*) FROM embedding_jobs").fetchone()[0]
    failing = conn.execute(
        "SELECT count(*), max(last_error) FROM embedding_jobs WHERE last_error IS NOT NULL"
    ).fetchone()
    return {"memories": row[0], "embedded": row[1], "models": row[2], "pending_jobs": pending,
            "failing_jobs": failing[0], "last_error": failing[1]}


def storage_stats(conn: psycopg.Connection) -> dict[str, Any]:
    row = conn.execute(
        "SELECT pg_relation_size('memories'), pg_total_relation_size('memories'), "
        "pg_relation_size(%s::regclass), "
        "(SELECT n_live_tup FROM pg_stat_user_tables WHERE relname = 'memories'), "
        "(SELECT n_dead_tup FROM pg_stat_user_tables WHERE relname = 'memories')",
        (INDEX_NAME,),
    ).fetchone()
    return {"table_bytes": row[0], "total_relation_bytes": row[1], "hnsw_index_bytes": row[2],
            "live_tuples": row[3], "dead_tuples": row[4]}


def server_info(conn: psycopg.Connection) -> dict[str, Any]:
    version = conn.execute("SHOW server_version").fetchone()[0]
    pgvector = conn.execute(
        "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
    ).fetchone()
    options = conn.execute(
        "SELECT reloptions FROM pg_class WHERE relname = %s", (INDEX_NAME,)
    ).fetchone()
    return {"postgres": version, "pgvector": pgvector[0] if pgvector else None,
            "hnsw_index_options": list(options[0] or []) if options else None}


def wait_all_embedded(conn: psycopg.Connection, namespace: str, want: int,
                      timeout_s: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        stats = db_stats(conn, namespace)
        if stats["embedded"] >= want:
            return stats
        if time.monotonic() > deadline:
            raise SystemExit(
                f"error: only {stats['embedded']} of {want} memories have a vector after "
                f"{timeout_s:.0f}s ({stats['pending_jobs']} jobs pending; last indexer error: "
                f"{stats['last_error']})"
            )
        time.sleep(0.2)


# --------------------------------------------------------------------- ingest


def ingest(stub: Any, conn: psycopg.Connection, namespace: str, records: list[Record],
           start: int, end: int, batch: int, total_want: int) -> dict[str, Any]:
    """Store records[start:end]; return timings once every memory of the namespace is embedded."""
    began = time.perf_counter()
    not_indexed = 0
    call_seconds = []
    last_log = began
    for offset in range(start, end, batch):
        chunk = records[offset : min(end, offset + batch)]
        request = memory_pb2.StoreBatchRequest(
            namespace=namespace,
            memories=[memory_pb2.Memory(content=r.text, category=r.source) for r in chunk],
            index_wait=memory_pb2.IndexWait(wait=True, timeout_ms=INDEX_WAIT_MS),
        )
        t0 = time.perf_counter()
        try:
            response = stub.StoreBatch(request, timeout=STORE_TIMEOUT_S)
        except grpc.RpcError as exc:
            raise SystemExit(
                f"error: StoreBatch of memories {offset}..{offset + len(chunk) - 1} failed: "
                f"{exc.code().name}: {exc.details()}"
            ) from None
        call_seconds.append(time.perf_counter() - t0)
        if not response.indexed:
            not_indexed += len(chunk)
        now = time.perf_counter()
        if now - last_log >= 30 or offset + batch >= end:
            done = offset + len(chunk) - start
            log(f"ingested {offset + len(chunk)}/{end} ({done / (now - began):.1f} memories/s)")
            last_log = now
    stats = wait_all_embedded(conn, namespace, total_want, timeout_s=EMBED_ALL_TIMEOUT_S)
    seconds = time.perf_counter() - began
    return {
        "added": end - start,
        "batches": len(call_seconds),
        "seconds": seconds,
        "memories_per_s": (end - start) / seconds,
        "mean_store_batch_s": statistics.fmean(call_seconds),
        "batches_not_indexed_at_answer": not_indexed,
        "db": stats,
    }


# -------------------------------------------------------------- query vectors


def embed_queries(channel: grpc.Channel, queries: list[str]) -> tuple[list[list[float]], str]:
    """Every query's QUERY embedding through `channel` (to the embedding service), and the
    model that made them."""
    vectors: list[list[float]] = []
    model = ""
    stub = embedder_pb2_grpc.EmbedderServiceStub(channel)
    for start in range(0, len(queries), 64):
        response = stub.Embed(
            embedder_pb2.EmbedRequest(texts=queries[start : start + 64],
                                      kind=embedder_pb2.EMBED_KIND_QUERY),
            timeout=300,
        )
        model = response.model_id
        vectors.extend(list(e.values) for e in response.embeddings)
    return vectors, model


# -------------------------------------------------------------------- search


def leg_search(stub: Any, namespace: str, query: str, vector: list[float], model: str,
               k: int) -> Any:
    return stub.Search(
        retriever_pb2.SearchRequest(namespace=namespace, query=query, query_vector=vector,
                                    k=k, vector_model=model),
        timeout=30,
    )


def measure_latency(stub: Any, namespace: str, queries: list[str], vectors: list[list[float]],
                    model: str, k: int, n: int, warmup: int, expect: int) -> dict[str, Any]:
    for i in range(warmup):
        j = i % len(queries)
        leg_search(stub, namespace, queries[j], vectors[j], model, k)
    latencies = []
    short = 0
    for i in range(n):
        j = (warmup + i) % len(queries)
        t0 = time.perf_counter()
        response = leg_search(stub, namespace, queries[j], vectors[j], model, k)
        latencies.append((time.perf_counter() - t0) * 1000)
        if len(response.candidates) < min(k, expect):
            short += 1
    return {"k": k, "n": n, "warmup": warmup, **latency_summary_ms(latencies),
            "short_answers": short}


EXACT_SQL = """
SELECT id::text, embedding <=> %(vector)s::halfvec AS distance
FROM memories
WHERE namespace = %(ns)s AND deleted_at IS NULL
  AND embedding IS NOT NULL AND embedding_model = %(model)s
ORDER BY distance, id
LIMIT %(k)s
"""


def exact_search(conn: psycopg.Connection, namespace: str, literal: str, model: str,
                 k: int) -> list[tuple[str, float]]:
    with conn.transaction():
        conn.execute("SET LOCAL enable_indexscan = off")
        conn.execute("SET LOCAL enable_bitmapscan = off")
        rows = conn.execute(
            EXACT_SQL, {"ns": namespace, "vector": literal, "model": model, "k": k}
        ).fetchall()
    return [(r[0], float(r[1])) for r in rows]


def sql_search(conn: psycopg.Connection, namespace: str, literal: str, model: str, k: int,
               ef_search: int, iterative_scan: str) -> list[tuple[str, float]]:
    """The vector leg's own statement and settings, with the given ef_search."""
    sql, params = build_search_sql(Filters())
    params.update(ns=namespace, vector=literal, model=model, k=k)
    with conn.transaction():
        conn.execute(
            "SELECT set_config('hnsw.ef_search', %s, true), "
            "set_config('hnsw.iterative_scan', %s, true)",
            (str(max(ef_search, k)), iterative_scan),
        )
        rows = conn.execute(sql, params).fetchall()
    return [(r[0], 1.0 - float(r[1])) for r in rows]


PLANS = ("planner", "exact", "hnsw")  # the planner's own choice; the leg's two plans


def measure_plans(conn: psycopg.Connection, namespace: str, vectors: list[list[float]],
                  model: str, k: int, n: int, ef_search: int,
                  iterative_scan: str) -> dict[str, Any]:
    """The vector leg's statement timed in turns on the same query vectors under three plans:
    what Postgres's planner picks by itself (ef_search set, nothing else: the leg before
    issue 41), the leg's exact plan and its HNSW plan (plan_settings), and whether each
    took the HNSW index."""
    sql, _ = build_search_sql(Filters())
    settings = {"planner": [("hnsw.ef_search", str(max(ef_search, k))),
                            ("hnsw.iterative_scan", iterative_scan)],
                "exact": plan_settings("exact", ef_search, iterative_scan, k),
                "hnsw": plan_settings("hnsw", ef_search, iterative_scan, k)}
    timings: dict[str, list[float]] = {plan: [] for plan in PLANS}

    def run(plan: str, literal: str) -> None:
        with conn.transaction():
            conn.execute("SELECT " + ", ".join("set_config(%s, %s, true)"
                                               for _ in settings[plan]),
                         [x for pair in settings[plan] for x in pair])
            conn.execute(sql, {"ns": namespace, "vector": literal, "model": model,
                               "k": k}).fetchall()

    for i in range(n + 20):
        literal = vector_literal(np.asarray(vectors[i % len(vectors)], dtype=np.float32))
        for plan in PLANS[i % 3:] + PLANS[:i % 3]:
            t0 = time.perf_counter()
            run(plan, literal)
            if i >= 20:
                timings[plan].append((time.perf_counter() - t0) * 1000)
    literal = vector_literal(np.asarray(vectors[0], dtype=np.float32))
    params = {"ns": namespace, "vector": literal, "model": model, "k": k}
    return {"k": k, "n": n, "ef_search": ef_search,
            "uses_hnsw_index": {plan: plan_uses_index(
                conn, sql, params, [f"SET LOCAL {name} = '{value}'"
                                    for name, value in settings[plan]]) for plan in PLANS},
            **{plan: latency_summary_ms(ms) for plan, ms in timings.items()}}


def plan_uses_index(conn: psycopg.Connection, sql: str, params: dict[str, Any],
                    settings: list[str]) -> bool:
    with conn.transaction():
        for statement in settings:
            conn.execute(statement)
        rows = conn.execute("EXPLAIN " + sql, params).fetchall()
    return any(INDEX_NAME in r[0] for r in rows)


def recall_of(approx: list[tuple[str, float]], exact: list[tuple[str, float]],
              k: int) -> tuple[float, float]:
    """(id recall, tie-aware recall) of approx against exact, both out of min(k, len(exact))."""
    want = min(k, len(exact))
    if want == 0:
        return 1.0, 1.0
    exact_ids = {i for i, _ in exact[:want]}
    by_id = sum(1 for i, _ in approx[:want] if i in exact_ids) / want
    kth = exact[want - 1][1]
    by_distance = min(want, sum(1 for _, d in approx[:want] if d <= kth + TIE_EPSILON)) / want
    return by_id, by_distance


def measure_recall(stub: Any, conn: psycopg.Connection, namespace: str, queries: list[str],
                   vectors: list[list[float]], model: str, k: int, ef_sweep: list[int],
                   iterative_scan: str, leg_ef: int) -> dict[str, Any]:
    literals = [vector_literal(v) for v in vectors]
    exact: list[list[tuple[str, float]]] = []
    exact_ms = []
    for literal in literals:
        t0 = time.perf_counter()
        exact.append(exact_search(conn, namespace, literal, model, k))
        exact_ms.append((time.perf_counter() - t0) * 1000)

    sql, params = build_search_sql(Filters())
    params.update(ns=namespace, vector=literals[0], model=model, k=k)

    def uses_index(ef: int) -> bool:
        # pgvector's cost estimate depends on ef_search: on small tables the
        # planner prefers an exact sequential scan for the larger values.
        return plan_uses_index(conn, sql, params, [
            f"SET LOCAL hnsw.ef_search = {max(ef, k)}",
            f"SET LOCAL hnsw.iterative_scan = {iterative_scan}",
        ])

    rows = []
    leg_results = []
    leg_ms = []
    for query, vector in zip(queries, vectors, strict=True):
        t0 = time.perf_counter()
        response = leg_search(stub, namespace, query, vector, model, k)
        leg_ms.append((time.perf_counter() - t0) * 1000)
        leg_results.append([(c.memory_id, 1.0 - c.score) for c in response.candidates])
    rows.append(_recall_row("vector leg (gRPC)", leg_ef, leg_results, exact, k, leg_ms,
                            uses_index(leg_ef)))

    for ef in ef_sweep:
        results, ms = [], []
        for literal in literals:
            t0 = time.perf_counter()
            results.append(sql_search(conn, namespace, literal, model, k, ef, iterative_scan))
            ms.append((time.perf_counter() - t0) * 1000)
        rows.append(_recall_row("SQL", ef, results, exact, k, ms, uses_index(ef)))

    exact_indexed = plan_uses_index(
        conn, EXACT_SQL, {"ns": namespace, "vector": literals[0], "model": model, "k": k},
        ["SET LOCAL enable_indexscan = off", "SET LOCAL enable_bitmapscan = off"],
    )
    return {
        "k": k,
        "queries": len(queries),
        "exact_search": {**latency_summary_ms(exact_ms), "plan_uses_hnsw_index": exact_indexed},
        "rows": rows,
    }


def _recall_row(source: str, ef: int, results: list[list[tuple[str, float]]],
                exact: list[list[tuple[str, float]]], k: int, ms: list[float],
                plan_uses_hnsw_index: bool) -> dict[str, Any]:
    pairs = [recall_of(a, e, k) for a, e in zip(results, exact, strict=True)]
    return {
        "source": source,
        "ef_search": max(ef, k),
        "recall_ids": statistics.fmean(p[0] for p in pairs),
        "recall_ties": statistics.fmean(p[1] for p in pairs),
        "min_recall_ties": min(p[1] for p in pairs),
        "mean_ms": statistics.fmean(ms),
        "p95_ms": percentile(sorted(ms), 95),
        "plan_uses_hnsw_index": plan_uses_hnsw_index,
    }


# --------------------------------------------------------------------- report


def mib(n: int) -> str:
    return f"{n / 2**20:.1f}"


def print_report(result: dict[str, Any]) -> None:
    m, s, srv, model = result["machine"], result["settings"], result["server"], result["model"]
    print(f"machine: {m['platform']}, {m['cpu_count']} CPUs ({m['cpus_usable']} usable), "
          f"python {m['python']}, {m['onnxruntime']}")
    print(f"database: PostgreSQL {srv['postgres']}, pgvector {srv['pgvector']}, "
          f"HNSW options {srv['hnsw_index_options']}")
    print(f"model: {model['model_id']} ({model['provider']}, {model['precision']}); "
          f"vector leg ef_search {s['leg_ef_search']}, iterative_scan {s['iterative_scan']}")
    print(f"corpus: {s['datasets']} (texts cut to {s['max_chars']} chars), namespace "
          f"{s['namespace']!r}, StoreBatch of {s['batch']} with index_wait; "
          f"ANALYZE before searching: {s['analyze']}")
    env = ", ".join(f"{k}={v}" for k, v in s["service_env"].items()) or "defaults"
    print(f"service settings: {env}")
    print()
    print("(a) indexing throughput (first StoreBatch until every vector is stored)")
    print("| size | added | seconds | memories/s | s per StoreBatch | embedded | pending jobs |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for r in result["sizes"]:
        i = r["ingest"]
        print(f"| {r['size']} | {i['added']} | {i['seconds']:.1f} | {i['memories_per_s']:.1f} "
              f"| {i['mean_store_batch_s']:.2f} | {i['db']['embedded']} "
              f"| {i['db']['pending_jobs']} |")
    print()
    print("storage")
    print("| size | table MiB | HNSW index MiB | table+indexes+toast MiB | live tuples "
          "| dead tuples |")
    print("|---:|---:|---:|---:|---:|---:|")
    for r in result["sizes"]:
        st = r["storage"]
        print(f"| {r['size']} | {mib(st['table_bytes'])} | {mib(st['hnsw_index_bytes'])} "
              f"| {mib(st['total_relation_bytes'])} | {st['live_tuples']} "
              f"| {st['dead_tuples']} |")
    print()
    print(f"(b) vector leg Search latency (direct gRPC, sequential, "
          f"{s['searches']} timed searches per k)")
    print("| size | k | p50 ms | p95 ms | p99 ms | mean ms | max ms | short answers |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in result["sizes"]:
        for lat in r["latency"]:
            print(f"| {r['size']} | {lat['k']} | {lat['p50_ms']:.2f} | {lat['p95_ms']:.2f} "
                  f"| {lat['p99_ms']:.2f} | {lat['mean_ms']:.2f} | {lat['max_ms']:.2f} "
                  f"| {lat['short_answers']} |")
    print()
    print(f"(c) HNSW recall@{s['recall_k']} against exact search "
          f"({s['recall_queries']} queries; ids / tie-aware)")
    print("| size | searched by | ef_search | recall (ids) | recall (ties) | min (ties) "
          "| mean ms | p95 ms | HNSW in plan |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---|")
    for r in result["sizes"]:
        rec = r.get("recall")
        if rec is None:
            continue
        for row in rec["rows"]:
            used = "yes" if row["plan_uses_hnsw_index"] else "no (exact scan plan)"
            print(f"| {r['size']} | {row['source']} | {row['ef_search']} "
                  f"| {row['recall_ids']:.4f} | {row['recall_ties']:.4f} "
                  f"| {row['min_recall_ties']:.2f} | {row['mean_ms']:.2f} | {row['p95_ms']:.2f} "
                  f"| {used} |")
        ex = rec["exact_search"]
        used = "YES (not exact!)" if ex["plan_uses_hnsw_index"] else "no"
        print(f"| {r['size']} | exact (SQL, no index) | - | 1 | 1 | 1 | {ex['mean_ms']:.2f} "
              f"| {ex['p95_ms']:.2f} | {used} |")
    print()
    print("(d) the vector leg's statement under three plans, SQL timed in turns on the same "
          "query vectors (k=10): what the planner picks by itself (ef_search set: the leg "
          "before issue 41), the leg's exact plan (index scans off; for namespaces of at most "
          "RECALLMESH_VECTOR_EXACT_MAX vectors) and its HNSW plan (sorting priced out)")
    print("| size | planner p50 / p95 ms | exact p50 / p95 ms | HNSW p50 / p95 ms "
          "| HNSW index taken (planner / exact / HNSW) |")
    print("|---:|---:|---:|---:|---|")
    for r in result["sizes"]:
        p = r.get("plans")
        if p is None:
            continue
        used = " / ".join("yes" if p["uses_hnsw_index"][plan] else "no" for plan in PLANS)
        print(f"| {r['size']} | " + " | ".join(
            f"{p[plan]['p50_ms']:.2f} / {p[plan]['p95_ms']:.2f}" for plan in PLANS)
            + f" | {used} |")
    print(f"\nstack start-up {result['stack_startup_s']:.1f} s, total {result['total_s']:.1f} s")


# ----------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=positive_ints, default=[5000, 100_000],
                        help="corpus sizes to measure at, ingested incrementally")
    parser.add_argument("--datasets", type=names, default=DEFAULT_DATASETS,
                        help="corpora concatenated in this order (default: %(default)s)")
    parser.add_argument("--datasets-root", type=Path, default=DATASETS_ROOT)
    parser.add_argument("--max-chars", type=int, default=MAX_CHARS, help="cut each text to this")
    parser.add_argument("--namespace", default="bench")
    parser.add_argument("--batch", type=int, default=500, help="memories per StoreBatch")
    parser.add_argument("--ks", type=positive_ints, default=[10, 50], help="k values for latency")
    parser.add_argument("--searches", type=int, default=500, help="timed searches per k")
    parser.add_argument("--warmup", type=int, default=50, help="untimed searches per k")
    parser.add_argument("--recall-queries", type=int, default=200)
    parser.add_argument("--recall-k", type=int, default=10)
    parser.add_argument("--recall-sizes", choices=("all", "largest"), default="all",
                        help="sizes at which recall is measured (exact search is a full scan)")
    parser.add_argument("--ef-sweep", type=positive_ints, default=[20, 40, 100, 200],
                        help="ef_search values for the SQL-side recall sweep")
    parser.add_argument("--no-analyze", dest="analyze", action="store_false",
                        help="skip ANALYZE memories after each ingest step")
    parser.add_argument("--tmp-dir", type=Path, default=None,
                        help="parent of the temporary data directory (default: system temp)")
    parser.add_argument("--keep-data", action="store_true",
                        help="keep the temporary data directory (database, service logs)")
    parser.add_argument("--json", type=Path, help="also write the numbers to this JSON file")
    parser.add_argument("--report-to", type=Path, help="also write the report to this file")
    args = parser.parse_args(argv)
    sizes = sorted(set(args.sizes))
    datasets = args.datasets
    if args.batch < 1 or args.batch > 1000:
        parser.error("--batch must be within 1..1000 (the gateway's batch limit)")
    if args.searches < 1 or args.recall_queries < 1 or args.max_chars < 1:
        parser.error("--searches, --recall-queries and --max-chars must be >= 1")
    if args.recall_k > 1000 or max(args.ks) > 1000:
        parser.error("k values must be within 1..1000 (the vector leg's limit)")

    began = time.perf_counter()
    log(f"reading corpora {datasets} (up to {sizes[-1]} texts)")
    records = load_corpus(args.datasets_root, datasets, sizes[-1], args.max_chars)
    queries = load_queries(args.datasets_root, datasets, max(args.searches, args.recall_queries))
    recall_queries = queries[: args.recall_queries]
    leg_ef = int(os.environ.get("RECALLMESH_VECTOR_EF_SEARCH", "").strip() or DEFAULT_EF_SEARCH)
    iterative_scan = (os.environ.get("RECALLMESH_VECTOR_ITERATIVE_SCAN", "").strip()
                      or "relaxed_order")

    if args.tmp_dir is not None:
        args.tmp_dir.mkdir(parents=True, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="recallmesh-bench-", dir=args.tmp_dir)
    stack = Stack(env={**BENCH_ENV, "RECALLMESH_DATA_DIR": tmp, **free_port_env()})
    results: list[dict[str, Any]] = []
    conn: psycopg.Connection | None = None
    try:
        log("starting the stack")
        startup_s = start_stack(stack)
        conn = psycopg.connect(stack.dsn, autocommit=True)
        server = server_info(conn)

        with stack.dial("embedding") as channel:
            info = embedder_pb2_grpc.EmbedderServiceStub(channel).ModelInfo(
                embedder_pb2.ModelInfoRequest(), timeout=10)
            log(f"embedding {len(queries)} queries")
            vectors, model = embed_queries(channel, queries)

        gateway = stack.dial()
        vector = stack.dial("vector")
        try:
            memory_stub = memory_pb2_grpc.MemoryServiceStub(gateway)
            leg_stub = retriever_pb2_grpc.RetrieverServiceStub(vector)
            have = 0
            for size in sizes:
                log(f"size {size}: ingesting memories {have}..{size - 1}")
                ingest_result = ingest(memory_stub, conn, args.namespace, records, have, size,
                                       args.batch, size)
                have = size
                stored_models = ingest_result["db"]["models"]
                if stored_models != 1:
                    raise SystemExit(f"error: namespace holds vectors of {stored_models} models")
                if args.analyze:
                    conn.execute("ANALYZE memories")
                # The leg reads a namespace's size at most once per COUNT_TTL_S to pick its
                # plan: let it see this size before timing it.
                log(f"size {size}: waiting {COUNT_TTL_S:.0f} s for the leg's namespace count")
                time.sleep(COUNT_TTL_S)
                dead = stack.check_alive()
                if dead:
                    raise SystemExit(f"error: services exited during ingest: {dead}")
                size_result: dict[str, Any] = {
                    "size": size,
                    "ingest": ingest_result,
                    "storage": storage_stats(conn),
                    "latency": [],
                }
                for k in args.ks:
                    log(f"size {size}: {args.searches} searches at k={k}")
                    size_result["latency"].append(measure_latency(
                        leg_stub, args.namespace, queries, vectors, model, k, args.searches,
                        args.warmup, size))
                log(f"size {size}: exact scan against HNSW, {args.searches} searches each")
                size_result["plans"] = measure_plans(conn, args.namespace, vectors, model, 10,
                                                     args.searches, leg_ef, iterative_scan)
                if args.recall_sizes == "all" or size == sizes[-1]:
                    log(f"size {size}: recall@{args.recall_k} over {len(recall_queries)} queries")
                    size_result["recall"] = measure_recall(
                        leg_stub, conn, args.namespace, recall_queries,
                        vectors[: len(recall_queries)], model, args.recall_k, args.ef_sweep,
                        iterative_scan, leg_ef)
                results.append(size_result)
        finally:
            gateway.close()
            vector.close()
        dead = stack.check_alive()
        if dead:
            raise SystemExit(f"error: services exited during the run: {dead}")
    except grpc.RpcError as exc:
        raise SystemExit(f"error: {exc.code().name}: {exc.details()}") from None
    finally:
        if conn is not None:
            conn.close()
        stack.stop()
        if args.keep_data:
            log(f"kept the data directory (service logs under logs/): {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)

    result = {
        "benchmark": "vector_leg",
        "machine": machine_info(),
        "server": server,
        "model": {"model_id": info.model_id, "dimension": info.dimension,
                  "provider": info.provider, "precision": info.precision,
                  "query_vector_model": model},
        "settings": {
            "sizes": sizes,
            "datasets": datasets,
            "max_chars": args.max_chars,
            "namespace": args.namespace,
            "batch": args.batch,
            "index_wait_ms": INDEX_WAIT_MS,
            "ks": args.ks,
            "searches": args.searches,
            "warmup": args.warmup,
            "queries_available": len(queries),
            "recall_queries": len(recall_queries),
            "recall_k": args.recall_k,
            "recall_sizes": args.recall_sizes,
            "ef_sweep": args.ef_sweep,
            "leg_ef_search": leg_ef,
            "iterative_scan": iterative_scan,
            "analyze": args.analyze,
            "service_env": {k: v for k, v in sorted(recallmesh_env().items())
                            if k != "RECALLMESH_DSN"},
        },
        "sizes": results,
        "stack_startup_s": startup_s,
        "total_s": time.perf_counter() - began,
    }
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        print(f"# Vector leg by namespace size\n\nGenerated by `python -m "
              f"benchmarks.performance.vector_leg {' '.join(argv or sys.argv[1:])}` "
              f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}); how it is measured: "
              "the script's docstring.\n")
        print_report(result)
    print(text.getvalue(), end="")
    if args.report_to:
        args.report_to.write_text(text.getvalue())
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
