"""Seeing what a namespace holds at scale (issue 43): List pages, Count and filters at 100,000
and 1,000,000 memories, and a selective filter inside Recall at 100,000.

  python -m benchmarks.performance.listing [--memories 100000,1000000] [--recall-size 100000]
      [--repeats 30] [--questions 50] [--report-to FILE.md] [--json FILE]

Each size gets a stack of its own (embedded Postgres, every service, the shipped defaults) and
one namespace loaded as benchmarks/performance/scale.py loads it (its base texts and pairs: each
memory two real LoCoMo/LongMemEval turns; COPY with the write triggers off, indexes rebuilt,
VACUUM (ANALYZE)). The size that Recall is measured at also gets scale.py's vectors, BM25
postings and HNSW index; the others get neither (List, Count and filters read the memories
table only). Then every memory's fields are set from its position n in creation order, so each
filter's selectivity is known:
  metadata {"user": "u" + n % 1000, "source": chat | email | doc | import (n % 4)}: one user is
  0.1 % of the namespace; tags ["travel", "flagged"] when n % 50 = 0 (2 %), ["travel"] when
  n % 7 = 0, else ["misc"]; importance (37 n mod 100) / 100; thread "thread-" + n / 20;
  category by n % 4; updated_at = created_at + up to a day; valid_to = created_at + 30 days for
  n % 10 = 3 (10 % ended: superseded facts).
Measured through the typed client (recallmesh.client, real gRPC through the gateway), one
client, each call --repeats times (ms, client side): the first page and the page at the very
end of each query (its token made by the gateway's own recallmesh.gateway.listing.PageTokens
from the memory a page before the end), a walk over every page at page_size 1,000, Count, and
the same with the metadata filter once more after dropping its GIN index (does it pay?).
Recall at --recall-size: --questions LoCoMo/LongMemEval questions asked unfiltered and with two
selective filters (one user: 0.1 %; tags all of travel + flagged: 2 %), configurations
interleaved per question; hits returned say whether the filter selects before the top k.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from pgvector.psycopg import register_vector

from benchmarks.harness.script import (
    BENCH_ENV,
    gateway_client,
    log,
    machine_info,
    positive_ints,
    publish,
    start_stack,
)
from benchmarks.harness.stats import latency_summary
from benchmarks.performance.scale import (
    CREATED_STEP,
    DATASETS,
    FIRST_CREATED,
    Timer,
    base_texts,
    base_vectors,
    bm25_tables,
    copy_memories,
    drop_indexes,
    pairs,
)
from benchmarks.performance.vector_leg import load_queries
from recallmesh.client import Client
from recallmesh.embedding_models.manifest import ModelManifest
from recallmesh.gateway.listing import PageTokens
from recallmesh.stack.supervisor import Stack, free_port_env
from recallmesh.wire.filters import Filters
from recallmesh.wire.memory_fields import COLUMNS, StoredMemory
from recallmesh.wire.validation import ListQuery

NAMESPACE = "scale"  # scale.py's loaders write this namespace
USER = "u17"
PAGE = 100
WALK_PAGE = 1000

# Every memory's fields from its position n in creation order (see the docstring).
_FIELDS = """
WITH numbered AS (
    SELECT id, (row_number() OVER (ORDER BY created_at, id) - 1)::int AS n
    FROM memories WHERE namespace = %(ns)s
)
UPDATE memories m SET
    metadata = jsonb_build_object('user', 'u' || (n %% 1000),
                                  'source', (ARRAY['chat', 'email', 'doc', 'import'])[n %% 4 + 1]),
    tags = CASE WHEN n %% 50 = 0 THEN ARRAY['travel', 'flagged']
                WHEN n %% 7 = 0 THEN ARRAY['travel'] ELSE ARRAY['misc'] END,
    importance = ((n::bigint * 37) %% 100) / 100.0,
    thread = 'thread-' || (n / 20),
    category = (ARRAY['fact', 'preference', 'decision', 'note'])[n %% 4 + 1],
    updated_at = m.created_at + make_interval(secs => (n::bigint * 7919) %% 86400),
    valid_to = CASE WHEN n %% 10 = 3 THEN m.created_at + interval '30 days' END
FROM numbered WHERE m.id = numbered.id
"""


def copy_plain(conn: psycopg.Connection, texts: list[str], chosen: np.ndarray) -> None:
    """The memories without vectors (List, Count and filters never read them)."""
    conn.execute("SET session_replication_role = replica")
    with conn.cursor() as cur, cur.copy(
            "COPY memories (namespace, content, created_at, updated_at) FROM STDIN") as copy:
        for j, (a, b) in enumerate(chosen):
            created = FIRST_CREATED + CREATED_STEP * j
            copy.write_row((NAMESPACE, f"{texts[a]}\n{texts[b]}", created, created))
            if j % 200_000 == 199_999:
                log(f"copied {j + 1} memories")
    conn.execute("SET session_replication_role = origin")


def set_fields(conn: psycopg.Connection) -> None:
    conn.execute("SET session_replication_role = replica")
    conn.execute(_FIELDS, {"ns": NAMESPACE})
    conn.execute("SET session_replication_role = origin")


def timed(fn: Callable[[], Any], repeats: int) -> tuple[dict[str, float], Any]:
    """latency_summary of `repeats` calls of fn (after one untimed warm-up), and its result."""
    result = fn()
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        result = fn()
        times.append((time.perf_counter() - started) * 1000)
    return latency_summary(times), result


def end_token(conn: psycopg.Connection, query: ListQuery, clause: str, params: dict[str, Any],
              order: str) -> str:
    """The page token that asks for the last page of `query` (the memory a page before the
    end is the last one of the page before it), made by the gateway's own rule."""
    rows = conn.execute(
        f"SELECT {COLUMNS} FROM memories m WHERE m.namespace = %(ns)s AND {clause} "
        f"ORDER BY {order} LIMIT 1 OFFSET {PAGE}", params | {"ns": NAMESPACE}).fetchall()
    if not rows:
        return ""  # one page
    (secret,) = conn.execute(
        "SELECT secret FROM server_secrets WHERE name = 'page_token'").fetchone() or (b"",)
    return PageTokens(bytes(secret)).make(query, StoredMemory.from_row(rows[0]))


# name, client options, the ListQuery the gateway makes of them, SQL of the same rows (in the
# reverse of the listed order: the end), that order
def queries(as_of: datetime) -> list[tuple[str, dict[str, Any], ListQuery, str, str]]:
    current = "m.deleted_at IS NULL AND (m.valid_to IS NULL OR m.valid_to > now())"
    user = Filters(metadata=(("user", (USER,)),))
    flagged = Filters(tags_all=("travel", "flagged"))
    at = Filters(as_of=as_of)
    return [
        ("newest first", {}, ListQuery(NAMESPACE), current, "m.created_at, m.id"),
        ("by importance", {"order_by": "importance"},
         ListQuery(NAMESPACE, order_by="importance"), current, "m.importance, m.id"),
        ("by last update", {"order_by": "updated"}, ListQuery(NAMESPACE, order_by="updated_at"),
         current, "m.updated_at, m.id"),
        ("one user (metadata, 0.1 %)", {"metadata": {"user": USER}},
         ListQuery(NAMESPACE, user), f"{current} AND m.metadata @> '{{\"user\": \"{USER}\"}}'",
         "m.created_at, m.id"),
        ("tags all of travel, flagged (2 %)", {"tags_all": ["travel", "flagged"]},
         ListQuery(NAMESPACE, flagged), f"{current} AND m.tags @> ARRAY['travel', 'flagged']",
         "m.created_at, m.id"),
        ("as of the middle", {"as_of": as_of}, ListQuery(NAMESPACE, at),
         "m.deleted_at IS NULL AND m.created_at <= %(at)s AND (m.valid_to IS NULL OR "
         "m.valid_to > %(at)s)", "m.created_at, m.id"),
    ]


def measure_lists(client: Client, conn: psycopg.Connection, size: int, repeats: int,
                  only: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    as_of = FIRST_CREATED + CREATED_STEP * (size // 2)
    rows = []
    for name, options, query, clause, order in queries(as_of):
        if only and name not in only:
            continue
        log(f"list: {name}")
        token = end_token(conn, query, clause, {"at": as_of}, order)
        first, page = timed(lambda o=options: client.list(page_size=PAGE, **o), repeats)
        last, end = timed(lambda o=options, t=token: client.list(page_size=PAGE, page_token=t,
                                                                 **o), repeats)
        counted, n = timed(lambda o=options: client.count(**o), max(repeats // 3, 3))
        rows.append({"query": name, "first_page": first, "last_page": last, "count": counted,
                     "matching": n, "first_page_size": len(page.memories),
                     "last_page_size": len(end.memories),
                     "last_page_is_last": end.next_page_token == ""})
    return rows


def walk(client: Client) -> dict[str, Any]:
    """Every page of the namespace at WALK_PAGE, each page timed."""
    times, token, seen = [], "", 0
    started = time.perf_counter()
    while True:
        t0 = time.perf_counter()
        page = client.list(page_size=WALK_PAGE, page_token=token, include_ended=True)
        times.append((time.perf_counter() - t0) * 1000)
        seen += len(page.memories)
        if not (token := page.next_page_token):
            break
    return {"pages": len(times), "memories": seen, "seconds": time.perf_counter() - started,
            "page_ms": latency_summary(times), "first_ms": times[0], "last_ms": times[-1]}


def measure_recall(client: Client, questions: list[str]) -> dict[str, Any]:
    variants: dict[str, dict[str, Any]] = {
        "no filter": {}, "one user (metadata, 0.1 %)": {"metadata": {"user": USER}},
        "tags all of travel, flagged (2 %)": {"tags_all": ["travel", "flagged"]}}
    names = list(variants)
    times: dict[str, list[float]] = {n: [] for n in names}
    hits: dict[str, list[int]] = {n: [] for n in names}
    wrong = dict.fromkeys(names, 0)
    for i, question in enumerate(questions):
        for name in names[i % 3:] + names[:i % 3]:
            started = time.perf_counter()
            result = client.recall(question, k=10, min_score=0, **variants[name])
            times[name].append((time.perf_counter() - started) * 1000)
            hits[name].append(len(result.hits))
            if name.startswith("one user"):
                wrong[name] += sum(h.memory.metadata.get("user") != USER for h in result.hits)
            elif name.startswith("tags"):
                wrong[name] += sum(not {"travel", "flagged"} <= set(h.memory.tags)
                                   for h in result.hits)
    return {n: {"latency": latency_summary(times[n]), "mean_hits": float(np.mean(hits[n])),
                "min_hits": min(hits[n]), "outside_filter": wrong[n]} for n in names}


def run_size(size: int, args: argparse.Namespace, texts: list[str], manifest: ModelManifest,
             recall: bool) -> dict[str, Any]:
    timer = Timer()
    result: dict[str, Any] = {"memories": size, "recall": recall}
    with tempfile.TemporaryDirectory(prefix="recallmesh-listing-") as tmp:
        env = {**BENCH_ENV, "RECALLMESH_DATA_DIR": tmp, **free_port_env()}
        stack = Stack(env=env)
        try:
            result["startup_s"] = start_stack(stack)
            with psycopg.connect(stack.dsn, autocommit=True) as conn:
                register_vector(conn)
                recreate = timer.step("drop indexes", drop_indexes, conn)
                chosen = pairs(len(texts), size)
                if recall:
                    vectors, tokens = base_vectors(texts, manifest)
                    timer.step(f"COPY {size} memories with vectors", copy_memories, conn,
                               texts, vectors, tokens, chosen, manifest.model_id)
                else:
                    recreate = [r for r in recreate if "hnsw" not in r[0]]
                    timer.step(f"COPY {size} memories", copy_plain, conn, texts, chosen)
                timer.step("set the fields", set_fields, conn)
                if recall:
                    timer.step("BM25 postings and statistics", bm25_tables, conn)
                conn.execute(f"SET maintenance_work_mem = '{args.maintenance_mem}'")
                for name, statement in recreate:
                    timer.step(f"index {name}", conn.execute, statement)
                timer.step("VACUUM (ANALYZE)", conn.execute, "VACUUM (ANALYZE)")
                result["load_steps"] = [{"step": s, "seconds": t} for s, t in timer.steps]
                with gateway_client(stack) as client:
                    client.namespace = NAMESPACE
                    if recall:
                        log("recall with and without filters ...")
                        questions = load_queries(args.datasets, ["locomo", "longmemeval"],
                                                 args.questions)
                        result["recall_rows"] = measure_recall(client, questions)
                    result["lists"] = measure_lists(client, conn, size, args.repeats)
                    log("walk every page ...")
                    result["walk"] = walk(client)
                    conn.execute("DROP INDEX memories_metadata_idx")
                    conn.execute("ANALYZE memories")
                    result["without_gin"] = measure_lists(
                        client, conn, size, args.repeats, only=("one user (metadata, 0.1 %)",))
        finally:
            stack.stop()
    return result


def run(args: argparse.Namespace) -> dict[str, Any]:
    manifest = ModelManifest.load()
    texts = base_texts(args.datasets, 10_000, 500)
    return {"sizes": [run_size(size, args, texts, manifest, size == args.recall_size)
                      for size in args.memories],
            "repeats": args.repeats, "questions": args.questions}


def _lat(s: dict[str, float]) -> str:
    return f"{s['p50']:.1f} / {s['p95']:.1f}"


def report(r: dict[str, Any], argv: list[str]) -> str:
    lines = [
        "# Seeing what a namespace holds: List, Count and filters at scale",
        "",
        f"Generated by `python -m benchmarks.performance.listing {' '.join(argv)}` "
        f"({datetime.now(UTC):%Y-%m-%d %H:%M} UTC). How the memories and their fields are made "
        "and how each number is measured: the script's docstring. Latencies in ms, client side "
        f"(typed client, real gRPC through the gateway), p50 / p95 of {r['repeats']} calls "
        "(Count: a third as many); one client; each size on a stack of its own.",
        "",
        "- Machine: " + ", ".join(f"{k} {v}" for k, v in machine_info().items()),
        "",
    ]
    for s in r["sizes"]:
        load_s = sum(x["seconds"] for x in s["load_steps"])
        lines += [f"## {s['memories']:,} memories (loaded in {load_s / 60:.1f} min)", "",
                  f"Pages of {PAGE}: the first, and the very last (a token a page before the "
                  "end); Count; how many memories match.", "",
                  "| query | first page | last page | count | matching |",
                  "|---|---:|---:|---:|---:|"]
        for row in s["lists"]:
            last = _lat(row["last_page"]) if row["matching"] > PAGE else "(one page)"
            lines.append(f"| {row['query']} | {_lat(row['first_page'])} | {last} | "
                         f"{_lat(row['count'])} | {row['matching']:,} |")
        for row in s["without_gin"]:
            last = _lat(row["last_page"]) if row["matching"] > PAGE else "(one page)"
            lines.append(f"| {row['query']}, without the GIN on metadata | "
                         f"{_lat(row['first_page'])} | {last} | {_lat(row['count'])} | "
                         f"{row['matching']:,} |")
        w = s["walk"]
        lines += ["", f"Every page at {WALK_PAGE} (current and ended memories): {w['pages']:,} "
                  f"pages, {w['memories']:,} memories in {w['seconds']:.1f} s; a page p50 / "
                  f"p95 / max {w['page_ms']['p50']:.1f} / {w['page_ms']['p95']:.1f} / "
                  f"{w['page_ms']['max']:.1f} ms, the first {w['first_ms']:.1f}, the last "
                  f"{w['last_ms']:.1f}.", ""]
        if s.get("recall_rows"):
            lines += [f"Recall (default configuration, k=10, relevance floor off so every "
                      f"answer is full; {r['questions']} questions):", "",
                      "| filter | p50 / p95 ms | hits (mean, min) | hits outside the filter |",
                      "|---|---:|---:|---:|"]
            for name, v in s["recall_rows"].items():
                lines.append(f"| {name} | {_lat(v['latency'])} | {v['mean_hits']:.1f}, "
                             f"{v['min_hits']} | {v['outside_filter']} |")
            lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=positive_ints, default="100000,1000000")
    parser.add_argument("--recall-size", type=int, default=100_000,
                        help="the size Recall is measured at (needs vectors, BM25, HNSW)")
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--questions", type=int, default=50)
    parser.add_argument("--maintenance-mem", default="4GB")
    parser.add_argument("--datasets", type=Path, default=DATASETS)
    parser.add_argument("--report-to", type=Path)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    result = run(args)
    publish(report(result, argv), args.report_to, args.json, result, indent=1)


if __name__ == "__main__":
    main()
