"""Reads from a streaming replica (issue 44): what they cost a recall and a waiting write, and how
far the replica falls behind under a write load.

  python -m benchmarks.performance.replica_reads [--memories 2000] [--queries 200]
      [--writes 60] [--async] [--report-to FILE.md]

One real primary and one real streaming hot standby on this machine
(tests/replication.py; synchronous replication as the production overlay declares
unless --async), two gateways with their own lexical and vector legs on the same database:
`replica` with RECALLMESH_READ_DSN naming the standby, `primary` without (every read on the
primary), sharing one embedding, fusion and indexer process. Measured in one run, the two taken
in turns per request so drift on the shared machine falls on both:
- recall latency (client side, k=10, the query vector cached: a first pass warms the cache);
- Store latency with IndexWait (the `replica` gateway also waits for the standby to replay the
  write, recallmesh/shared/replicas.py), each write followed by a recall that must find it first;
- the standby's lag as the lexical leg measures it (recallmesh_db_replica_lag_seconds, sampled
  every 100 ms) while StoreBatch calls of 100 memories run back to back;
- where the reads went (recallmesh_db_reads_total by target).
Both replica and primary run on the same two cores here: this measures the routing's cost and
the replica's lag, not the capacity a replica adds on its own machine.
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
import urllib.request
import uuid
from datetime import UTC, datetime
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from benchmarks.harness.script import (
    BENCH_ENV,
    log,
    machine_info,
    publish,
)
from benchmarks.harness.stats import latency_summary
from benchmarks.performance.gateway_recall import DATASETS, read_queries, read_texts
from recallmesh.client import NO_RETRIES, NewMemory
from recallmesh.stack.supervisor import Stack, free_port_env
from tests.helpers import store_batch_indexed
from tests.replication import cluster

NAMESPACE = "replica-bench"


def metric(port: int, name: str, **labels: str) -> float:
    text = urllib.request.urlopen(f"http://localhost:{port}/metrics", timeout=5).read().decode()
    return sum(s.value for family in text_string_to_metric_families(text) for s in family.samples
               if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()))


def timed(call, *args, **kwargs):  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    result = call(*args, **kwargs)
    return result, (time.perf_counter() - started) * 1000


def row(name: str, values: list[float]) -> str:
    s = latency_summary(values)
    return f"| {name} | {len(values)} | {s['p50']:.1f} | {s['p95']:.1f} | {s['p99']:.1f} |"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--writes", type=int, default=60)
    parser.add_argument("--batches", type=int, default=20, help="StoreBatch calls of 100 "
                        "memories while the lag is sampled")
    parser.add_argument("--async", dest="synchronous", action="store_false")
    parser.add_argument("--datasets", type=Path, default=DATASETS)
    parser.add_argument("--report-to", type=Path)
    args = parser.parse_args(argv)

    texts = read_texts(args.datasets, args.memories + args.writes + args.batches * 100)
    queries = read_queries(args.datasets, args.queries)
    with tempfile.TemporaryDirectory(prefix="replica-bench-") as tmp, \
            cluster(Path(tmp) / "pg", synchronous=args.synchronous) as c:
        # documents' vectors from the on-disk store (BENCH_ENV), the query cache on as shipped
        vectors = {k: v for k, v in BENCH_ENV.items() if "QUERY_CACHE" not in k}
        base = {**vectors, "RECALLMESH_DATA_DIR": str(Path(tmp) / "stack"), **free_port_env()}
        shared = Stack(env={**base, "RECALLMESH_DSN": c.primary.dsn(),
                            "RECALLMESH_READ_DSN": c.replicas[0].dsn()})
        log("starting the stack (replica reads) and a second gateway (primary reads)")
        shared.start(timeout_s=120)
        plain_env = {**free_port_env(), "RECALLMESH_DATA_DIR": str(Path(tmp) / "plain"),
                     "RECALLMESH_DSN": c.primary.dsn(),
                     "RECALLMESH_INTERNAL_TOKEN": shared.internal_token,
                     **{f"RECALLMESH_{n.upper()}_TARGET": shared.endpoints[n]
                        for n in ("embedding", "fusion")}}
        plain = Stack(env=plain_env, services=("lexical", "vector", "gateway"))
        try:
            plain.start(timeout_s=120)
            on = {"replica": shared.client(retry=NO_RETRIES),
                  "primary": plain.client(retry=NO_RETRIES)}
            log(f"loading {args.memories} memories")
            for i in range(0, args.memories, 500):
                store_batch_indexed(on["primary"], NAMESPACE,
                                    [NewMemory(t) for t in texts[i:i + 500]])
            for q in queries:  # the query vectors cached, both gateways share the embedder
                on["primary"].recall(q, namespace=NAMESPACE)
            recall_ms: dict[str, list[float]] = {"replica": [], "primary": []}
            for i, q in enumerate(queries):
                order = ("replica", "primary") if i % 2 == 0 else ("primary", "replica")
                for name in order:
                    recall_ms[name].append(timed(on[name].recall, q, namespace=NAMESPACE)[1])
            write_ms: dict[str, list[float]] = {"replica": [], "primary": []}
            found_first = {"replica": 0, "primary": 0}
            writes = texts[args.memories:args.memories + args.writes]
            for i, text in enumerate(writes):
                name = ("replica", "primary")[i % 2]
                ns = f"{NAMESPACE}-w{uuid.uuid4().hex[:8]}"
                stored, ms = timed(on[name].store, text, namespace=ns, wait_indexed=30)
                write_ms[name].append(ms)
                hits = on[name].recall(text, namespace=ns).hits
                found_first[name] += bool(hits) and hits[0].memory.id == stored.memory.id
            lexical_port = shared.metrics["lexical"]
            samples: list[float] = []
            done = threading.Event()

            def sample() -> None:
                while not done.is_set():
                    samples.append(metric(lexical_port, "recallmesh_db_replica_lag_seconds"))
                    time.sleep(0.1)

            sampler = threading.Thread(target=sample)
            sampler.start()
            burst = texts[args.memories + args.writes:]
            started = time.perf_counter()
            for i in range(0, len(burst), 100):
                on["primary"].store_batch([NewMemory(t) for t in burst[i:i + 100]],
                                          namespace=f"{NAMESPACE}-burst")
            burst_s = time.perf_counter() - started
            time.sleep(1.0)
            done.set()
            sampler.join()
            reads = {target: sum(metric(shared.metrics[s], "recallmesh_db_reads_total",
                                        target=target) for s in ("gateway", "lexical", "vector"))
                     for target in ("replica", "primary")}
            for client in on.values():
                client.close()
        finally:
            plain.stop()
            shared.stop()

    mode = "synchronous" if args.synchronous else "asynchronous"
    lag = latency_summary(samples)
    lines = [
        "# Reads from a streaming replica: recall, a waiting write, lag",
        "",
        f"Generated by `python -m benchmarks replica` ({datetime.now(UTC):%Y-%m-%d %H:%M} UTC). "
        "How it is measured: benchmarks/performance/replica_reads.py's docstring. One primary and "
        f"one streaming hot standby on this machine, {mode} replication; the `replica` gateway "
        "and its legs read from the standby (RECALLMESH_READ_DSN), the `primary` gateway's from "
        "the primary; requests alternate between them.",
        "",
        f"- Machine: {', '.join(f'{k} {v}' for k, v in machine_info().items())}",
        f"- {args.memories} LoCoMo/LongMemEval turns loaded; {len(queries)} questions, k=10, "
        "the query vectors cached",
        "",
        "| requests | n | p50 ms | p95 ms | p99 ms |",
        "|---|---:|---:|---:|---:|",
        row("Recall, reads on the replica", recall_ms["replica"]),
        row("Recall, reads on the primary", recall_ms["primary"]),
        row("Store + IndexWait, waits for the replica too", write_ms["replica"]),
        row("Store + IndexWait, primary only", write_ms["primary"]),
        "",
        f"Each write was followed by a recall of its own text through the same gateway: found "
        f"first {found_first['replica']} of {len(write_ms['replica'])} (replica), "
        f"{found_first['primary']} of {len(write_ms['primary'])} (primary).",
        "",
        f"Lag while {len(burst) // 100} StoreBatch calls of 100 memories ran back to back "
        f"({burst_s:.1f} s; {len(samples)} samples of the lexical leg's "
        f"recallmesh_db_replica_lag_seconds, every 100 ms, its own check once a second): "
        f"p50 {lag['p50']:.2f} s, p95 {lag['p95']:.2f} s, max {lag['max']:.2f} s.",
        "",
        f"Reads of the replica stack's gateway and legs: {reads['replica']:.0f} on the replica, "
        f"{reads['primary']:.0f} on the primary.",
        "",
    ]
    publish("\n".join(lines), args.report_to)


if __name__ == "__main__":
    main()
