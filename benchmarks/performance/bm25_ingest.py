"""Writes with and without the BM25 index: 8 concurrent writers through the stack, in turns
(docs/decisions/0018-bm25-index.md).

  python -m benchmarks.performance.bm25_ingest [--writers 8] [--batch 20] [--per-turn 1500]
      [--turns 6] [--report-to FILE.md] [--json FILE]

A stack of its own on an embedded Postgres with pg_textsearch, every service but the indexer
(the write path alone: a Store is acknowledged when its memory, its postings and statistics and
its index entry are written; embedding follows in the indexer, which would share these two
cores with the writers). Real texts (LoCoMo, LongMemEval, SciFact corpus records), each stored
once. In each turn, both ways one after the other, their order alternating from turn to turn:
`index` (memories_bm25_idx there: every write also inserts into pg_textsearch's memtable,
under its lock) and `no index` (the index dropped: today's write path). --writers threads, a
channel each, send StoreBatch calls of --batch memories to one namespace until --per-turn
memories are acknowledged; memories per second from the first call to the last answer, and
each call's latency. Before an `index` turn the index is made again over what is stored (not
timed). Then a VACUUM of the table after deleting a tenth of the memories, timed with the index
and its size before and after.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import grpc
import psycopg

from benchmarks.harness.script import BENCH_ENV, log, machine_info, publish, start_stack
from benchmarks.harness.stats import latency_summary
from benchmarks.performance.gateway_recall import read_texts
from recallmesh.migrations.bm25_index import INDEX_NAME, bm25_engine, ensure_bm25_index
from recallmesh.shared.services import BY_NAME
from recallmesh.stack.supervisor import Stack, free_port_env
from recallmesh.v1 import memory_pb2, memory_pb2_grpc

DATASETS = Path("../shared/datasets")
NAMESPACE = "bm25-ingest"


def write(stack: Stack, texts: list[str], writers: int, batch: int) -> dict[str, Any]:
    """`texts` stored by `writers` threads in StoreBatch calls of `batch`; the rate and each
    call's latency."""
    calls = [texts[i:i + batch] for i in range(0, len(texts), batch)]
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()

    def writer(mine: list[list[str]]) -> None:
        with stack.dial() as channel:
            stub = memory_pb2_grpc.MemoryServiceStub(channel)
            for chunk in mine:
                started = time.perf_counter()
                try:
                    stub.StoreBatch(memory_pb2.StoreBatchRequest(
                        namespace=NAMESPACE, memories=[memory_pb2.Memory(content=t)
                                                       for t in chunk]), timeout=60)
                except grpc.RpcError as exc:
                    with lock:
                        errors.append(exc.code().name)
                    continue
                with lock:
                    latencies.append((time.perf_counter() - started) * 1000)

    threads = [threading.Thread(target=writer, args=(calls[i::writers],))
               for i in range(writers)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - started
    return {"memories": len(texts), "seconds": seconds, "per_s": len(texts) / seconds,
            "call_ms": latency_summary(latencies), "errors": errors}


def run(args: argparse.Namespace) -> dict[str, Any]:
    texts = read_texts(args.datasets, args.per_turn * args.turns * 2 + 1000)
    with tempfile.TemporaryDirectory(prefix="recallmesh-bm25-ingest-") as tmp:
        # the embedded server with pg_textsearch (off by default: decision 0020)
        stack = Stack(env={**BENCH_ENV, "RECALLMESH_DATA_DIR": tmp, **free_port_env(),
                           "RECALLMESH_EMBEDDED_BM25_INDEX": "on"},
                      services=tuple(s for s in BY_NAME if s != "indexer"))
        start_stack(stack)
        try:
            with psycopg.connect(stack.dsn, autocommit=True) as conn:
                engine = bm25_engine(conn)
                if not engine:
                    raise SystemExit("this Postgres has no pg_textsearch: nothing to compare")
                write(stack, texts[:1000], args.writers, args.batch)  # warm-up
                turns: list[dict[str, Any]] = []
                at = 1000
                for turn in range(args.turns):
                    for way in (("index", "no index") if turn % 2 == 0 else
                                ("no index", "index")):
                        if way == "index":
                            ensure_bm25_index(conn)
                        else:
                            conn.execute(f"DROP INDEX IF EXISTS {INDEX_NAME}")
                        chunk = texts[at:at + args.per_turn]
                        at += args.per_turn
                        result = write(stack, chunk, args.writers, args.batch)
                        log(f"turn {turn + 1} {way}: {result['per_s']:.0f} memories/s")
                        turns.append({"turn": turn + 1, "way": way, **result})
                ensure_bm25_index(conn)
                vacuum = vacuum_after_deletes(conn)
        finally:
            stack.stop()
    return {"engine": engine, "writers": args.writers, "batch": args.batch,
            "per_turn": args.per_turn, "turns": turns, "vacuum": vacuum}


def vacuum_after_deletes(conn: psycopg.Connection) -> dict[str, Any]:
    """A tenth of the memories deleted (purged: the rows go), then VACUUM, timed; the index's size
    before and after."""
    def size() -> int:
        row = conn.execute("SELECT pg_relation_size(%s)", (INDEX_NAME,)).fetchone()
        return int(row[0]) if row else 0

    before = size()
    deleted = conn.execute(
        "DELETE FROM memories WHERE id IN (SELECT id FROM memories WHERE namespace = %s "
        "ORDER BY id LIMIT (SELECT count(*) / 10 FROM memories WHERE namespace = %s))",
        (NAMESPACE, NAMESPACE)).rowcount
    started = time.perf_counter()
    conn.execute("VACUUM memories")
    seconds = time.perf_counter() - started
    left = conn.execute("SELECT count(*) FROM memories m WHERE m.namespace = %s "
                        "AND m.deleted_at IS NULL", (NAMESPACE,)).fetchone()
    return {"deleted": deleted, "vacuum_s": seconds, "index_bytes_before": before,
            "index_bytes_after": size(), "left": left[0] if left else 0}


def report(r: dict[str, Any], argv: list[str]) -> str:
    mib = 2 ** 20
    lines = [
        "# Writes with and without the BM25 index (8 concurrent writers through the stack)", "",
        f"Generated by `python -m benchmarks.performance.bm25_ingest {' '.join(argv)}`. What "
        "is written and timed: the script's docstring. Engine: " + r["engine"] + ".",
        "",
        "- Machine: " + ", ".join(f"{k} {v}" for k, v in machine_info().items()),
        "",
        f"| turn | way | memories | memories/s | StoreBatch of {r['batch']} p50 / p95 ms | "
        "errors |", "|---:|---|---:|---:|---|---:|",
    ]
    for t in r["turns"]:
        lines.append(f"| {t['turn']} | {t['way']} | {t['memories']:,} | {t['per_s']:.0f} | "
                     f"{t['call_ms']['p50']:.1f} / {t['call_ms']['p95']:.1f} | "
                     f"{len(t['errors'])} |")
    # the table grows from turn to turn and writes slow down with it: each turn's two ways are
    # compared with each other
    ratios = [next(t["per_s"] for t in r["turns"] if t["turn"] == n and t["way"] == "index")
              / next(t["per_s"] for t in r["turns"] if t["turn"] == n and t["way"] == "no index")
              for n in sorted({t["turn"] for t in r["turns"]})]
    lines += ["", "Within each turn, memories/s with the index over memories/s without: "
              + ", ".join(f"{x:.3f}" for x in ratios)
              + f"; **median {statistics.median(ratios):.3f}**.", ""]
    v = r["vacuum"]
    lines.append(f"VACUUM after deleting {v['deleted']:,} of the memories: {v['vacuum_s']:.2f} s; "
                 f"the index {v['index_bytes_before'] / mib:.1f} MiB before, "
                 f"{v['index_bytes_after'] / mib:.1f} MiB after.")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--batch", type=int, default=20)
    parser.add_argument("--per-turn", type=int, default=1500)
    parser.add_argument("--turns", type=int, default=6)
    parser.add_argument("--datasets", type=Path, default=DATASETS)
    parser.add_argument("--report-to", type=Path)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    result = run(args)
    publish(report(result, argv), args.report_to, args.json, result)


if __name__ == "__main__":
    main()
