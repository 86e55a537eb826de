"""A million memories (issue 26): load time, table and index sizes, recall latency, HNSW recall.

  python -m benchmarks.performance.scale [--memories 1000000] [--base-texts 10000]
      [--queries 200] [--recall-queries 100] [--ef-sweep 40,100,200,400]
      [--report-to FILE.md] [--json FILE] [--keep-data DIR | --reuse-data DIR --load-json FILE]

How the memories are made. Embedding a million texts is not feasible on 2 CPU cores (the default
model embeds about 15 chat turns a second here: 18 hours), so:
  - base texts: the first --base-texts distinct LoCoMo, then LongMemEval turns (cut to
    --max-chars), embedded for real as documents by the served model in this process, with the
    embedding service's settings (cached under ~/.cache/recallmesh/bench, keyed by the model
    file's sha256 and the texts);
  - each memory joins two different base texts drawn at random (seeded; no pair twice): its
    content is the two texts, one line each (real words and real term statistics for the lexical
    leg), its vector the two base vectors averaged with their token counts as weights, then
    normalised. For a mean-pooled model that is what embedding the joined text would give if
    attention did not cross the line break; it is not the model's vector of the joined text.
    No pair repeats, so no two memories share a vector, unless --corpus-duplicates: then the
    duplicate structure of the real corpus of the same size (`make bench NAME=vector`'s, whose 100k
    run had queries with recall@10 0.00) is copied in: for every group of s identical texts
    among its first --memories texts, s - 1 memories become copies (content and vector) of one
    other; the report says how many groups and their largest size.
Loading (each step timed): a stack of its own (migrations, the vector column, its HNSW index),
then the memories table's and the BM25 postings' indexes are dropped, the memories are copied in
(COPY, binary) with the write triggers off (session_replication_role = replica: no embedding
jobs, the vectors are there already), the lexical leg's BM25 postings and statistics are built
set-based (what the triggers write row by row), every dropped index is rebuilt from its own
definition (maintenance_work_mem --maintenance-mem), then VACUUM (ANALYZE). No concepts are
extracted (the graph leg is not among the default legs).
Measured: table and index sizes; recall through the gateway at one client (k=10, default
budget) for `default`, the lexical leg alone (BM25) and the vector leg alone, every question
asked twice with the query cache on (the shipped default): the first pass includes the query
embedding, the second finds every query vector cached, i.e. the recall without the query
embedding; HNSW recall@10 against exact search, through the vector leg and with its own SQL at
each --ef-sweep value (benchmarks/performance/vector_leg.py); the lexical leg's BM25 statement
itself (issue 44), both ways in the same run, questions interleaved: the full statement (every
posting of every term) and the pruned one the leg runs (the commonest terms' postings read only
for candidates), at the k the gateway asks of the leg (50) with the leg's default k1 and b;
their answers compared id by id and score by score.
--reuse-data DIR measures a database an earlier --keep-data DIR run loaded, without loading it
again (the stack's migrations still run); the report's load table is then that run's, read
from its --json FILE (--load-json), and says so.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import grpc
import numpy as np
import psycopg
from pgvector import HalfVector
from pgvector.psycopg import register_vector

from benchmarks.harness.configs import CONFIGS
from benchmarks.harness.runner import gateway_legs
from benchmarks.harness.script import (
    BENCH_ENV,
    gateway_client,
    log,
    machine_info,
    positive_ints,
    publish,
    recallmesh_env,
    start_stack,
)
from benchmarks.harness.stats import latency_summary
from benchmarks.performance.vector_leg import (
    DEFAULT_DATASETS,
    MAX_CHARS,
    embed_queries,
    load_corpus,
    load_queries,
    measure_recall,
    record_text,
    server_info,
)
from recallmesh.embedding_models.manifest import ModelManifest, sha256_file
from recallmesh.migrations.bm25_index import INDEX_NAME as BM25_INDEX
from recallmesh.migrations.bm25_index import bm25_engine, ensure_bm25_index
from recallmesh.services.embedding.core import OnnxEmbedder
from recallmesh.services.embedding.settings import EmbeddingSettings
from recallmesh.services.lexical.bm25 import PRUNE_MIN_POSTINGS, build_bm25_sql
from recallmesh.services.lexical.bm25_index import (
    INDEX_DEPTH_FACTOR,
    build_bm25_index_sql,
    complete,
    index_query,
)
from recallmesh.services.lexical.rows import LexicalRow
from recallmesh.services.lexical.settings import LexicalSettings
from recallmesh.services.lexical.spelling import BM25_PREPARE, BM25_WORK_MEM
from recallmesh.services.vector.settings import VectorSettings
from recallmesh.shared.cjk import query_terms
from recallmesh.stack.supervisor import Stack, free_port_env
from recallmesh.v1 import memory_pb2, memory_pb2_grpc, retriever_pb2_grpc
from recallmesh.wire.filters import Filters

DATASETS = Path(__file__).resolve().parents[2] / ".." / "shared" / "datasets"
CACHE = Path.home() / ".cache" / "recallmesh" / "bench"
NAMESPACE = "scale"
SEED = 26
FIRST_CREATED = datetime(2025, 1, 1, tzinfo=UTC)
CREATED_STEP = timedelta(seconds=30)  # one memory every 30 s: about a year for a million
QUERY_CACHE_ENV = "RECALLMESH_EMBEDDING_QUERY_CACHE_MB"
CONFIG_NAMES = ("default", "lexical_bm25", "vector")
LEG_K = 50  # what the gateway asks of each leg (leg_depth) for k=10


def base_texts(root: Path, n: int, max_chars: int) -> list[str]:
    """The first n distinct non-blank LoCoMo, then LongMemEval turns."""
    seen: dict[str, None] = {}
    for name in ("locomo", "longmemeval"):
        with (root / name / "corpus.jsonl").open(encoding="utf-8") as f:
            for line in f:
                text = record_text(json.loads(line))[:max_chars].strip() if line.strip() else ""
                if text:
                    seen.setdefault(text)
                if len(seen) >= n:
                    return list(seen)
    raise SystemExit(f"only {len(seen)} distinct texts under {root}; lower --base-texts")


def base_vectors(texts: list[str], manifest: ModelManifest) -> tuple[np.ndarray, np.ndarray]:
    """(unit vectors, token counts) of the base texts as documents, cached."""
    key = hashlib.sha256("\n".join([sha256_file(manifest.onnx), *texts]).encode()).hexdigest()
    path = CACHE / f"scale-base-{key[:16]}.npz"
    if path.is_file():
        saved = np.load(path, allow_pickle=False)
        return saved["vectors"], saved["tokens"]
    settings = EmbeddingSettings.from_env()
    embedder = OnnxEmbedder(manifest, provider=settings.provider,
                            intra_op_threads=settings.intra_op_threads,
                            max_batch=settings.max_batch,
                            max_batch_tokens=settings.max_batch_tokens)
    tokens = np.array([len(e.ids) for e in embedder.tokenizer.encode_batch(texts)], np.float32)
    vectors = np.empty((len(texts), manifest.dimension), np.float32)
    started = time.perf_counter()
    for i in range(0, len(texts), 1000):
        vectors[i:i + 1000] = embedder.embed(texts[i:i + 1000], kind="document").vectors
        log(f"embedded {min(i + 1000, len(texts))} of {len(texts)} base texts "
            f"({(i + 1000) / (time.perf_counter() - started):.1f}/s)")
    CACHE.mkdir(parents=True, exist_ok=True)
    np.savez(path, vectors=vectors, tokens=tokens)
    return vectors, tokens


def pairs(n_base: int, memories: int) -> np.ndarray:
    """`memories` distinct ordered pairs (a, b), a != b, of base text indices, seeded."""
    if memories > n_base * (n_base - 1):
        raise SystemExit("more memories than distinct pairs of base texts: raise --base-texts")
    rng = np.random.default_rng(SEED)
    chosen = np.zeros(0, np.int64)
    while len(chosen) < memories:
        draw = rng.integers(0, n_base * n_base, size=memories - len(chosen) + memories // 50)
        draw = draw[draw // n_base != draw % n_base]
        chosen = np.concatenate([chosen, draw])
        _, first = np.unique(chosen, return_index=True)
        chosen = chosen[np.sort(first)]  # distinct, in draw order
    chosen = chosen[:memories]
    return np.stack([chosen // n_base, chosen % n_base], axis=1)


def corpus_duplicate_groups(root: Path, memories: int) -> list[int]:
    """Sizes of the groups of identical texts (size > 1) among the first `memories` texts of
    the corpus `make bench NAME=vector` loads."""
    records = load_corpus(root, DEFAULT_DATASETS.split(","), memories, MAX_CHARS)
    return sorted((s for s in Counter(r.text for r in records).values() if s > 1), reverse=True)


def with_duplicates(chosen: np.ndarray, groups: list[int]) -> np.ndarray:
    """`chosen` with, for each group size s, s - 1 further rows made copies of one row."""
    if sum(groups) > len(chosen):
        raise SystemExit("the duplicate groups need more memories than there are")
    rng = np.random.default_rng(SEED + 1)
    rows = rng.permutation(len(chosen))
    out = chosen.copy()
    start = 0
    for size in groups:
        block = rows[start:start + size]
        out[block[1:]] = chosen[block[0]]
        start += size
    return out


def memory_vectors(vectors: np.ndarray, tokens: np.ndarray, chunk: np.ndarray) -> np.ndarray:
    """Token-count-weighted mean of each pair's two base vectors, normalised."""
    a, b = chunk[:, 0], chunk[:, 1]
    mixed = vectors[a] * tokens[a, None] + vectors[b] * tokens[b, None]
    return mixed / np.linalg.norm(mixed, axis=1, keepdims=True)


class Timer:
    def __init__(self) -> None:
        self.steps: list[tuple[str, float]] = []

    def step(self, name: str, fn: Any, *args: Any) -> Any:
        log(f"{name} ...")
        started = time.perf_counter()
        result = fn(*args)
        self.steps.append((name, time.perf_counter() - started))
        log(f"{name}: {self.steps[-1][1]:.0f} s")
        return result


def drop_indexes(conn: psycopg.Connection) -> list[tuple[str, str]]:
    """Drop the indexes that slow a bulk load (memories' secondary ones, the postings' primary
    key); returns how to recreate each: (name, SQL)."""
    recreate: list[tuple[str, str]] = []
    for name, definition in conn.execute(
            "SELECT i.indexname, i.indexdef FROM pg_indexes i WHERE i.tablename = 'memories' "
            "AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = "
            "(quote_ident(i.schemaname) || '.' || quote_ident(i.indexname))::regclass)"
            ).fetchall():
        conn.execute(f'DROP INDEX "{name}"')
        recreate.append((name, definition))
    for name, definition in conn.execute(
            "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint "
            "WHERE conrelid = 'memory_lexemes'::regclass AND contype = 'p'").fetchall():
        conn.execute(f'ALTER TABLE memory_lexemes DROP CONSTRAINT "{name}"')
        recreate.append((name, f'ALTER TABLE memory_lexemes ADD CONSTRAINT "{name}" {definition}'))
    return recreate


def copy_memories(conn: psycopg.Connection, texts: list[str], vectors: np.ndarray,
                  tokens: np.ndarray, chosen: np.ndarray, model_id: str) -> None:
    conn.execute("SET session_replication_role = replica")  # no write triggers: see docstring
    with conn.cursor() as cur, cur.copy(
            "COPY memories (namespace, content, created_at, updated_at, embedding, "
            "embedding_model) FROM STDIN WITH (FORMAT BINARY)") as copy:
        copy.set_types(["text", "text", "timestamptz", "timestamptz", "halfvec", "text"])
        for start in range(0, len(chosen), 10_000):
            chunk = chosen[start:start + 10_000]
            for j, (a, b), vector in zip(range(start, start + len(chunk)), chunk,
                                         memory_vectors(vectors, tokens, chunk), strict=True):
                created = FIRST_CREATED + CREATED_STEP * j
                copy.write_row((NAMESPACE, f"{texts[a]}\n{texts[b]}", created, created,
                                HalfVector(vector), model_id))
            if (start // 10_000) % 10 == 9:
                log(f"copied {start + len(chunk)} memories")
    conn.execute("SET session_replication_role = origin")


def bm25_tables(conn: psycopg.Connection) -> None:
    """The lexical leg's postings and statistics of the namespace, set-based (what the write
    triggers of migrations 0004 and 0006 keep current row by row)."""
    conn.execute(
        "INSERT INTO memory_lexemes (namespace, lexeme, memory_id, tf, dl) "
        "SELECT m.namespace, u.lexeme, m.id, coalesce(array_length(u.positions, 1), 1), "
        "recallmesh_tsvector_length(m.search_vector) "
        "FROM memories m, unnest(m.search_vector) u "
        "WHERE m.namespace = %(ns)s AND m.deleted_at IS NULL", {"ns": NAMESPACE})
    conn.execute(
        "INSERT INTO lexeme_stats (namespace, lexeme, df) SELECT namespace, lexeme, count(*) "
        "FROM memory_lexemes WHERE namespace = %(ns)s GROUP BY namespace, lexeme",
        {"ns": NAMESPACE})
    conn.execute(
        "INSERT INTO namespace_stats (namespace, docs, total_len) "
        "SELECT namespace, count(*), sum(recallmesh_tsvector_length(search_vector)) "
        "FROM memories WHERE namespace = %(ns)s AND deleted_at IS NULL GROUP BY namespace",
        {"ns": NAMESPACE})


def sizes(conn: psycopg.Connection) -> list[dict[str, Any]]:
    rows = conn.execute(
        "SELECT c.relname, c.relkind, pg_relation_size(c.oid), pg_total_relation_size(c.oid) "
        "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = 'public' AND c.relkind IN ('r', 'i') "
        "AND pg_total_relation_size(c.oid) > 1048576 ORDER BY pg_total_relation_size(c.oid) DESC"
    ).fetchall()
    return [{"name": r[0], "kind": "table" if r[1] == "r" else "index", "bytes": r[2],
             "total_bytes": r[3]} for r in rows]


def recall_passes(stack: Stack, questions: list[str]) -> dict[str, dict[str, Any]]:
    """Each configuration asked each question twice (the second time the query vector is in
    the embedding service's cache); configurations interleaved per question."""
    out: dict[str, dict[str, list[float]]] = {c: {"first": [], "second": []}
                                             for c in CONFIG_NAMES}
    degraded = dict.fromkeys(CONFIG_NAMES, 0)
    failed: dict[str, Counter[str]] = {c: Counter() for c in CONFIG_NAMES}
    slowest: dict[str, list[str]] = {c: [] for c in CONFIG_NAMES}
    with stack.dial() as channel:
        stub = memory_pb2_grpc.MemoryServiceStub(channel)
        with gateway_client(stack) as client:
            legs = gateway_legs(client)
        overrides = {c: CONFIGS[c].overrides(legs) for c in CONFIG_NAMES}
        for p in ("first", "second"):
            for i, question in enumerate(questions):
                order = CONFIG_NAMES[i % 3:] + CONFIG_NAMES[:i % 3]
                for c in order:
                    started = time.perf_counter()
                    try:
                        response = stub.Recall(memory_pb2.RecallRequest(
                            namespace=NAMESPACE, query=question, k=10, fusion=overrides[c]),
                            timeout=30)
                        degraded[c] += response.degraded
                    except grpc.RpcError as exc:  # counted by code, its time kept
                        failed[c][exc.code().name] += 1
                        if len(slowest[c]) < 5:
                            slowest[c].append(question)
                    out[c][p].append((time.perf_counter() - started) * 1000)
    return {c: {p: latency_summary(v) for p, v in passes.items()}
            | {"degraded": degraded[c], "failed": dict(failed[c]), "failed_questions": slowest[c],
               "n": len(questions)} for c, passes in out.items()}


def bm25_statements(conn: psycopg.Connection, questions: list[str]) -> dict[str, Any]:
    """The lexical leg's BM25 statement for each question, three ways (the order rotates per
    question), at k LEG_K with the leg's default k1 and b: the full statement at the server's
    work_mem (what the leg ran before issue 44), the full one and the pruned one at the leg's
    BM25_WORK_MEM; latency (ms, the statement alone) and whether the pruned answer is the full
    one (ids in order, tiers, scores)."""
    settings = LexicalSettings()
    full = build_bm25_sql(Filters(), "relevance", prune=False)
    pruned = build_bm25_sql(Filters(), "relevance")
    ways = {"full, server work_mem (before)": (full, None),
            f"full, work_mem {BM25_WORK_MEM}": (full, BM25_WORK_MEM),
            f"pruned, work_mem {BM25_WORK_MEM}": (pruned, BM25_WORK_MEM)}
    names = list(ways)
    times: dict[str, list[float]] = {name: [] for name in ways}
    as_run: list[float] = []  # the leg's choice: pruned from PRUNE_MIN_POSTINGS postings
    same_ids = same_scores = 0
    max_rel = 0.0
    differing: list[str] = []
    for i, question in enumerate(questions):
        rows = {}
        terms = query_terms(question)
        for name in names[i % 3:] + names[:i % 3]:
            (sql, params), work_mem = ways[name]
            conn.execute("RESET work_mem" if work_mem is None else
                         f"SET work_mem = '{work_mem}'")
            started = time.perf_counter()
            rows[name] = conn.execute(sql, params | {
                "ns": NAMESPACE, "query": terms, "k": LEG_K,
                "k1": settings.bm25_k1, "b": settings.bm25_b}).fetchall()
            times[name].append((time.perf_counter() - started) * 1000)
        row = conn.execute(BM25_PREPARE, {"ns": NAMESPACE, "query": terms,
                                           "work_mem": BM25_WORK_MEM,
                                           "spelling": settings.spelling_similarity}).fetchone()
        as_run.append(times[names[2] if row and row[1] >= PRUNE_MIN_POSTINGS else names[1]][-1])
        full_rows, pruned_rows = rows[names[1]], rows[names[2]]
        if [(r[0], r[3]) for r in full_rows] == [(r[0], r[3]) for r in pruned_rows]:
            same_ids += 1
        elif len(differing) < 5:
            differing.append(question)
        if [r[1] for r in full_rows] == [r[1] for r in pruned_rows]:
            same_scores += 1
        for a, b in zip(full_rows, pruned_rows, strict=False):
            max_rel = max(max_rel, abs(a[1] - b[1]) / max(abs(a[1]), 1e-300))
    conn.execute("RESET work_mem")
    return {"n": len(questions), "k": LEG_K, "k1": settings.bm25_k1, "b": settings.bm25_b,
            "latency": {name: latency_summary(v) for name, v in times.items()}
            | {f"as the leg runs it (pruned from {PRUNE_MIN_POSTINGS:,} postings)":
               latency_summary(as_run)},
            "same_ids": same_ids, "same_scores": same_scores, "max_rel_score_diff": max_rel,
            "differing_questions": differing}


INDEX_MODE_ENV = "RECALLMESH_LEXICAL_BM25_INDEX"
BM25_WAYS = {"index": "auto", "SQL": "off"}  # the lexical leg's setting for each way


def bm25_index_statements(conn: psycopg.Connection, questions: list[str]) -> dict[str, Any]:
    """The lexical leg's two BM25 statements for each question, in turns (the order alternates
    per question), at k LEG_K with the leg's default k1 and b and its BM25_WORK_MEM, as the leg
    picks them (the SQL one pruned from PRUNE_MIN_POSTINGS postings; the index one from the same
    count, falling back to the SQL one when it finds fewer than its depth): latency (ms, the
    statements alone) and whether they answer alike (ids in order, scores)."""
    settings = LexicalSettings()
    index_sql, _ = build_bm25_index_sql(Filters(), "relevance")
    times: dict[str, list[float]] = {way: [] for way in BM25_WAYS}
    same_ids = same_scores = same_top10 = by_index = 0
    for i, question in enumerate(questions):
        terms = query_terms(question)
        with conn.transaction():
            row = conn.execute(BM25_PREPARE, {"ns": NAMESPACE, "query": terms,
                                               "work_mem": BM25_WORK_MEM,
                                               "spelling": settings.spelling_similarity}
                               ).fetchone()
        postings = int(row[1]) if row else 0
        params = {"ns": NAMESPACE, "query": terms, "k": LEG_K, "k1": settings.bm25_k1,
                  "b": settings.bm25_b}
        rows: dict[str, list[Any]] = {}
        for way in (("index", "SQL") if i % 2 == 0 else ("SQL", "index")):
            started = time.perf_counter()
            with conn.transaction():
                conn.execute("SELECT set_config('work_mem', %s, true)", (BM25_WORK_MEM,))
                found: list[Any] = []
                if way == "index" and postings >= PRUNE_MIN_POSTINGS:
                    found = conn.execute(index_sql, params | {
                        "depth": LEG_K * INDEX_DEPTH_FACTOR,
                        "index_query": index_query(terms, {})}).fetchall()
                    if found and not complete(LexicalRow(*found[0]), LEG_K * INDEX_DEPTH_FACTOR):
                        found = []
                    by_index += bool(found)
                if not found:
                    sql, extra = build_bm25_sql(Filters(), "relevance",
                                                prune=postings >= PRUNE_MIN_POSTINGS)
                    found = conn.execute(sql, params | extra).fetchall()
            times[way].append((time.perf_counter() - started) * 1000)
            rows[way] = found
        same_ids += [r[0] for r in rows["index"]] == [r[0] for r in rows["SQL"]]
        same_top10 += {r[0] for r in rows["index"][:10]} == {r[0] for r in rows["SQL"][:10]}
        same_scores += [r[1] for r in rows["index"]] == [r[1] for r in rows["SQL"]]
    return {"n": len(questions), "k": LEG_K, "by_index": by_index,
            "latency": {way: latency_summary(v) for way, v in times.items()},
            "same_ids": same_ids, "same_top10": same_top10, "same_scores": same_scores}


def bm25_index_passes(stack: Stack, questions: list[str], turns: int) -> dict[str, Any]:
    """`default` and the lexical leg alone through the gateway, the lexical leg serving BM25 each
    way in turn (restarted with its setting; the order of the ways alternates per turn); every
    query vector cached first (one pass of `default` before the turns, not counted)."""
    names = ("default", "lexical_bm25")
    times: dict[str, dict[str, list[float]]] = {w: {c: [] for c in names} for w in BM25_WAYS}
    degraded: dict[str, dict[str, int]] = {w: dict.fromkeys(names, 0) for w in BM25_WAYS}
    failed: dict[str, Counter[str]] = {w: Counter() for w in BM25_WAYS}
    with gateway_client(stack) as client:
        legs = gateway_legs(client)
    overrides = {c: CONFIGS[c].overrides(legs) for c in names}

    def ask(stub: Any, config: str, question: str) -> tuple[float, bool, str]:
        started = time.perf_counter()
        try:
            response = stub.Recall(memory_pb2.RecallRequest(
                namespace=NAMESPACE, query=question, k=10, fusion=overrides[config]), timeout=30)
            return (time.perf_counter() - started) * 1000, response.degraded, ""
        except grpc.RpcError as exc:
            return (time.perf_counter() - started) * 1000, False, exc.code().name

    with stack.dial() as channel:
        stub = memory_pb2_grpc.MemoryServiceStub(channel)
        for question in questions:  # the query vectors into the embedding service's cache
            ask(stub, "default", question)
    for turn in range(turns):
        for way in (list(BM25_WAYS) if turn % 2 == 0 else list(BM25_WAYS)[::-1]):
            stack.stop_service("lexical")
            stack.env[INDEX_MODE_ENV] = BM25_WAYS[way]
            stack.start_service("lexical")
            log(f"turn {turn + 1}: BM25 by {way}")
            with stack.dial() as channel:
                stub = memory_pb2_grpc.MemoryServiceStub(channel)
                # until the gateway reaches the restarted leg again (not counted)
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline:
                    _, was_degraded, error = ask(stub, "default", questions[0])
                    if not error and not was_degraded:
                        break
                    time.sleep(0.5)
                for i, question in enumerate(questions):
                    for config in (names if i % 2 == 0 else names[::-1]):
                        ms, was_degraded, error = ask(stub, config, question)
                        times[way][config].append(ms)
                        degraded[way][config] += was_degraded
                        if error:
                            failed[way][error] += 1
    stack.env.pop(INDEX_MODE_ENV, None)
    return {"n": len(questions), "turns": turns,
            "latency": {w: {c: latency_summary(v) for c, v in by.items()}
                        for w, by in times.items()},
            "degraded": degraded, "failed": {w: dict(c) for w, c in failed.items()}}


def run(args: argparse.Namespace) -> dict[str, Any]:
    manifest = ModelManifest.load()
    timer = Timer()
    texts = base_texts(args.datasets, args.base_texts, args.max_chars)
    vectors, tokens = timer.step(f"embed {len(texts)} base texts (or read the cache)",
                                 base_vectors, texts, manifest)
    chosen = pairs(len(texts), args.memories)
    groups = corpus_duplicate_groups(args.datasets, args.memories) \
        if args.corpus_duplicates else []
    chosen = with_duplicates(chosen, groups)
    result: dict[str, Any] = {"memories": args.memories, "base_texts": len(texts),
                              "model_id": manifest.model_id,
                              "duplicate_groups": len(groups),
                              "duplicate_copies": sum(groups) - len(groups),
                              "largest_group": max(groups, default=1),
                              "env": recallmesh_env()}
    data_dir = Path(args.keep_data or args.reuse_data) if args.keep_data or args.reuse_data \
        else None
    if args.reuse_data:
        loaded = json.loads(args.load_json.read_text(encoding="utf-8"))
        if loaded["memories"] != args.memories:
            raise SystemExit(f"{args.load_json} loaded {loaded['memories']} memories, "
                             f"not --memories {args.memories}")
        result["loaded_by"] = {"json": str(args.load_json), "server": loaded["server"],
                               "startup_s": loaded.get("startup_s")}
    with tempfile.TemporaryDirectory(prefix="recallmesh-scale-") as tmp:
        # the embedded server with pg_textsearch, for both engines side by side (it is off
        # by default: decision 0020)
        env = {**BENCH_ENV, "RECALLMESH_DATA_DIR": str(data_dir or tmp), **free_port_env(),
               "RECALLMESH_EMBEDDED_BM25_INDEX": "on"}
        env.pop(QUERY_CACHE_ENV)  # the shipped default: the second pass finds its vectors
        stack = Stack(env=env)
        try:
            result["startup_s"] = start_stack(stack)
            with psycopg.connect(stack.dsn, autocommit=True) as conn:
                register_vector(conn)
                result["server"] = server_info(conn)
                if args.reuse_data:
                    count = conn.execute("SELECT count(*) FROM memories WHERE namespace = %s",
                                         (NAMESPACE,)).fetchone()
                    if not count or count[0] != args.memories:
                        raise SystemExit(f"{args.reuse_data} holds {count} memories in "
                                         f"{NAMESPACE!r}, not {args.memories}")
                    result["load_steps"] = loaded["load_steps"]
                else:
                    recreate = timer.step("drop indexes", drop_indexes, conn)
                    timer.step(f"COPY {args.memories} memories", copy_memories, conn, texts,
                               vectors, tokens, chosen, manifest.model_id)
                    timer.step("BM25 postings and statistics", bm25_tables, conn)
                    conn.execute(f"SET maintenance_work_mem = '{args.maintenance_mem}'")
                    for name, statement in recreate:
                        timer.step(f"index {name}", conn.execute, statement)
                    timer.step("VACUUM (ANALYZE)", conn.execute, "VACUUM (ANALYZE)")
                    result["load_steps"] = [{"step": s, "seconds": t} for s, t in timer.steps]
                result["sizes"] = sizes(conn)
                questions = load_queries(args.datasets, ["locomo", "longmemeval"],
                                         max(args.queries, args.recall_queries,
                                             args.bm25_queries))
                if args.reuse_data and bm25_engine(conn):
                    # the index over the loaded memories, timed (the stack's start made it
                    # already when the data had none: made again here, on its own)
                    conn.execute(f"SET maintenance_work_mem = '{args.maintenance_mem}'")
                    conn.execute(f"DROP INDEX {BM25_INDEX}")
                    started = time.perf_counter()
                    ensure_bm25_index(conn)
                    result["bm25_index_build_s"] = time.perf_counter() - started
                    result["sizes"] = sizes(conn)
                result["bm25_engine"] = bm25_engine(conn) or "sql"
                if args.bm25_queries and result["bm25_engine"] != "sql":
                    log("BM25 by the index and by SQL: the statements ...")
                    conn.execute("VACUUM (ANALYZE) memories")
                    asked = questions[:args.bm25_queries]
                    result["bm25_index_statement"] = bm25_index_statements(conn, asked)
                    log("BM25 by the index and by SQL: through the gateway ...")
                    result["bm25_index_latency"] = bm25_index_passes(stack, asked,
                                                                     args.bm25_turns)
                if args.queries:  # --queries 0: the HNSW recall only
                    log("BM25 statement, full and pruned ...")
                    result["bm25_statement"] = bm25_statements(conn, questions[:args.queries])
                    log("recall latency ...")
                    result["latency"] = recall_passes(stack, questions[:args.queries])
                log("HNSW recall against exact search ...")
                with stack.dial("embedding") as embedding, stack.dial("vector") as vector:
                    asked = questions[:args.recall_queries]
                    query_vectors, model = embed_queries(embedding, asked)
                    settings = VectorSettings.from_env()
                    result["hnsw_recall"] = measure_recall(
                        retriever_pb2_grpc.RetrieverServiceStub(vector), conn, NAMESPACE, asked,
                        query_vectors, model, 10, args.ef_sweep, settings.iterative_scan,
                        settings.ef_search)
        finally:
            stack.stop()
    return result


def report(r: dict[str, Any], argv: list[str]) -> str:
    mib = 2 ** 20
    load_s = sum(s["seconds"] for s in r["load_steps"][1:])  # the first made the vectors
    lines = [
        f"# {r['memories']:,} memories: load, sizes, recall latency, HNSW recall",
        "",
        f"Generated by `python -m benchmarks.performance.scale {' '.join(argv)}` "
        f"({datetime.now(UTC):%Y-%m-%d %H:%M} UTC). How the memories are made and how each "
        "number is measured: the script's docstring. In short: real text, each memory two "
        f"real LoCoMo/LongMemEval turns out of {r['base_texts']:,} embedded for real by "
        f"{r['model_id']}; each memory's vector is its two turns' vectors averaged (token-"
        "count weights) and normalised, not the model's vector of the joined text.",
        "",
        (f"- Duplicates: the real corpus's, copied in: {r['duplicate_groups']:,} groups of "
         f"identical memories (content and vector), {r['duplicate_copies']:,} copies, the "
         f"largest group {r['largest_group']} memories." if r["duplicate_groups"] else
         "- No two memories share a text or a vector."),
        "- Machine: " + ", ".join(f"{k} {v}" for k, v in machine_info().items()),
        "- Settings from the environment: " + (", ".join(
            f"{k}={v}" for k, v in sorted(r.get("env", {}).items())) or "none (the defaults)"),
        f"- Postgres {r['server']['postgres']}, pgvector {r['server']['pgvector']}, HNSW "
        f"{', '.join(r['server']['hnsw_index_options'] or [])}; one namespace.",
        "",
        f"## Load: {r['memories']:,} memories in {load_s / 60:.1f} min (the steps after the "
        "first)",
        "",
        *([f"This run measured a database loaded by an earlier run (--reuse-data); the load "
           f"steps are that run's ({r['loaded_by']['json']}).", ""] if "loaded_by" in r else []),
        "| step | s |",
        "|---|---:|",
    ]
    lines += [f"| {s['step']} | {s['seconds']:.0f} |" for s in r["load_steps"]]
    lines += ["", "## Sizes (relations over 1 MiB)", "", "| relation | kind | MiB | with its "
              "indexes and TOAST, MiB |", "|---|---|---:|---:|"]
    lines += [f"| {s['name']} | {s['kind']} | {s['bytes'] / mib:,.0f} | "
              f"{s['total_bytes'] / mib:,.0f} |" for s in r["sizes"]]
    n = next(iter(r.get("latency", {"-": {"n": 0}}).values()))["n"]
    lines += ["", f"## Recall latency, one client ({n} questions, k=10; ms, client side)", "",
              "| configuration | first pass (the query embedded) p50 / p95 / p99 | second pass "
              "(the query vector cached) p50 / p95 / p99 | degraded | failed |",
              "|---|---|---|---:|---|"]
    for name, v in r.get("latency", {}).items():
        f, s = v["first"], v["second"]
        lines.append(f"| {name} | {f['p50']:.1f} / {f['p95']:.1f} / {f['p99']:.1f} | "
                     f"{s['p50']:.1f} / {s['p95']:.1f} / {s['p99']:.1f} | {v['degraded']} of "
                     f"{2 * v['n']} | "
                     + (", ".join(f"{k} {n}" for k, n in sorted(v["failed"].items())) or "none")
                     + " |")
    if "bm25_statement" in r:
        st = r["bm25_statement"]
        lines += ["", f"## The lexical leg's BM25 statement, before and after issue 44 "
                  f"({st['n']} questions, k={st['k']}, k1={st['k1']}, b={st['b']}; ms, the "
                  "statement alone, every way in this run, questions interleaved)", "",
                  "| statement | p50 / p95 / p99 | mean | max |", "|---|---|---:|---:|"]
        lines += [f"| {name} | {v['p50']:.1f} / {v['p95']:.1f} / {v['p99']:.1f} | "
                  f"{v['mean']:.1f} | {v['max']:.1f} |" for name, v in st["latency"].items()]
        lines += ["", f"The pruned statement's answer was the full one's for {st['same_ids']} "
                  f"of {st['n']} questions (ids in order and tiers); scores identical to the "
                  f"last bit for {st['same_scores']}, at most {st['max_rel_score_diff']:.1e} "
                  "apart (relative) otherwise."]
    if "bm25_index_statement" in r:
        st, gw = r["bm25_index_statement"], r["bm25_index_latency"]
        lines += ["", f"## BM25 by the pg_textsearch index and by SQL, side by side "
                  f"({r['bm25_engine']}; {st['n']} questions)", "",
                  f"The lexical leg's statement alone (k={st['k']}, as the leg picks it; the "
                  "two ways in turns per question; ms):", "",
                  "| way | p50 / p95 / p99 | mean | max |", "|---|---|---:|---:|"]
        lines += [f"| {way} | {v['p50']:.1f} / {v['p95']:.1f} / {v['p99']:.1f} | "
                  f"{v['mean']:.1f} | {v['max']:.1f} |" for way, v in st["latency"].items()]
        if "bm25_index_build_s" in r:
            lines += ["", f"The index built over the loaded memories in "
                      f"{r['bm25_index_build_s']:.1f} s (its size: the sizes table)."]
        lines += ["", f"The index statement answered {st['by_index']} of {st['n']} questions "
                  "(the others had too few postings, or it found fewer candidates than its "
                  f"depth, and went to SQL). The same {st['k']} ids in order: {st['same_ids']}; "
                  f"the same first 10: {st['same_top10']}; the same scores: "
                  f"{st['same_scores']}.", "",
                  f"Through the gateway, one client, k=10, every query vector cached "
                  f"({gw['turns']} turns of each way, the lexical leg restarted with "
                  f"{INDEX_MODE_ENV}=auto or off; ms, client side):", "",
                  "| way | configuration | p50 / p95 / p99 | degraded | failed |",
                  "|---|---|---|---:|---|"]
        for way, by in gw["latency"].items():
            for config, v in by.items():
                lines.append(f"| {way} | {config} | {v['p50']:.1f} / {v['p95']:.1f} / "
                             f"{v['p99']:.1f} | {gw['degraded'][way][config]} | "
                             + (", ".join(f"{k} {n}" for k, n in
                                          sorted(gw["failed"][way].items())) or "none")
                             + " |")
    h = r["hnsw_recall"]
    lines += ["", f"## HNSW recall@{h['k']} against exact search ({h['queries']} questions)", "",
              "| searched by | ef_search | recall@10 | tie-aware | worst query | mean ms | "
              "p95 ms |", "|---|---:|---:|---:|---:|---:|---:|"]
    lines += [f"| {row['source']} | {row['ef_search']} | {row['recall_ids']:.4f} | "
              f"{row['recall_ties']:.4f} | {row['min_recall_ties']:.2f} | {row['mean_ms']:.1f} | "
              f"{row['p95_ms']:.1f} |" for row in h["rows"]]
    e = h["exact_search"]
    lines.append(f"| exact scan (no index) | - | 1 | 1 | 1 | {e['mean_ms']:.0f} | "
                 f"{e['p95_ms']:.0f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=1_000_000)
    parser.add_argument("--base-texts", type=int, default=10_000)
    parser.add_argument("--max-chars", type=int, default=500)
    parser.add_argument("--queries", type=int, default=200,
                        help="questions for the latency table; 0 skips it")
    parser.add_argument("--recall-queries", type=int, default=100)
    parser.add_argument("--ef-sweep", type=positive_ints, default="40,100,200,400")
    parser.add_argument("--bm25-queries", type=int, default=200,
                        help="questions for BM25 by the index against BM25 by SQL (0: skip)")
    parser.add_argument("--bm25-turns", type=int, default=2,
                        help="turns of each way through the gateway")
    parser.add_argument("--maintenance-mem", default="8GB")
    parser.add_argument("--corpus-duplicates", action="store_true",
                        help="copy in the real corpus's duplicate groups (see the docstring)")
    parser.add_argument("--datasets", type=Path, default=DATASETS)
    parser.add_argument("--keep-data", help="a directory for the database, kept afterwards")
    parser.add_argument("--reuse-data", help="measure the database an earlier --keep-data run "
                        "left in this directory, without loading it again (needs --load-json)")
    parser.add_argument("--load-json", type=Path,
                        help="that run's --json: the load steps the report shows")
    parser.add_argument("--report-to", type=Path)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    if args.reuse_data and (args.keep_data or not args.load_json):
        parser.error("--reuse-data needs --load-json and excludes --keep-data")
    result = run(args)
    publish(report(result, argv), args.report_to, args.json, result, indent=1)


if __name__ == "__main__":
    main()
