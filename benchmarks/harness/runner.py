"""`python -m benchmarks run`: ingest a benchmark folder through the gateway, run every
query of every configuration through Recall, write OUTDIR/<config>.json."""

from __future__ import annotations

import functools
import json
import os
import platform
import subprocess
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import grpc
import numpy as np
import psycopg

from benchmarks.harness import metrics
from benchmarks.harness.configs import CONFIGS, Config
from benchmarks.harness.data import Dataset, load
from benchmarks.harness.peers import PEERS, Doc, Peer, timed_search
from benchmarks.harness.script import (
    BENCH_ENV,
    dial_internal,
    gateway_client,
    recallmesh_env,
)
from benchmarks.harness.stats import latency_summary, percentile
from recallmesh.client import Client, NewMemory, RecallmeshError, RecallResult
from recallmesh.embedding_models.manifest import ModelManifest
from recallmesh.gateway.settings import ALL_LEGS
from recallmesh.shared.db import redact, resolve_dsn
from recallmesh.shared.settings import default_target
from recallmesh.stack.supervisor import Stack, free_port_env
from recallmesh.v1 import embedder_pb2, embedder_pb2_grpc
from recallmesh.wire.validation import MAX_BUDGET_MS
from tests.helpers import store_batch_indexed

K = 10
# Where a dataset has sessions (LongMemEval), Recall and the peers are asked for this many hits:
# the official session-level recall widens its cut-off until k distinct sessions are in it
# (metrics.session_cut). recallmesh's turn metrics read the top K of the same ranking (the top K
# of a deeper list is the top K list: fusion and context propagation rank by score); a peer is
# asked twice (run_peer).
SESSION_DEPTH = 50
BATCH = 500


def depth(ds: Dataset) -> int:
    """How many hits each of the dataset's questions asks for."""
    return SESSION_DEPTH if any(q.relevant_sessions for q in ds.queries) else K


def ingest(client: Client, ds: Dataset, batch_size: int = BATCH) -> dict:
    """Store every scope's memories, `batch_size` per StoreBatch, each waiting (10 minutes
    at most) until its memories are indexed; refuses a namespace that already holds memories
    (a second ingest would duplicate them: use --skip-ingest or --namespace-tag)."""
    for scope in ds.scopes:
        probe = client.recall("-", namespace=ds.namespace(scope), k=1, sort_by="recency",
                              timeout=30)
        if probe.hits:
            raise SystemExit(f"namespace {ds.namespace(scope)} already holds memories: pass "
                             "--skip-ingest to reuse them or --namespace-tag to load anew")
    started = time.perf_counter()
    for scope, memories in ds.scopes.items():
        for i in range(0, len(memories), batch_size):
            batch = [
                NewMemory(m.content, created_at=m.created_at,
                          thread=m.session_id,  # a conversation's session: its thread
                          metadata={"corpus_id": m.corpus_id}
                          | ({"session_id": m.session_id} if m.session_id else {}))
                for m in memories[i : i + batch_size]]
            stored = store_batch_indexed(client, ds.namespace(scope), batch)
            # Every memory carries its corpus id in its metadata, so the gateway's duplicate
            # rule (a write saying what a stored memory says) never merges two corpus items;
            # if it ever did, recalled memories would map to one corpus id for two: refuse.
            merged = [m.metadata["corpus_id"] for m, same in zip(batch, stored.existing,
                                                                 strict=False) if same]
            if merged:
                raise SystemExit(f"{len(merged)} corpus items were answered by memories already "
                                 f"holding them (first: {merged[0]}): the counts would be wrong")
    seconds = time.perf_counter() - started
    return {"memories": ds.memories_stored, "namespaces": len(ds.scopes), "seconds": seconds,
            "memories_per_s": ds.memories_stored / seconds if seconds else 0.0}


def result_row(q, ranked: list[str], sessions: list[str], degraded: bool,
               scores: list[float] | None = None) -> dict:
    """A question's row: the top K of `ranked` and its metrics; where the question has
    relevant sessions, the sessions of the whole ranking (the official session-level recall
    reads past K) and whether it held enough distinct sessions for each cut-off."""
    row = {
        "query_id": q.query_id,
        "category": q.category,
        "cluster": q.cluster,
        "ranked_ids": ranked[:K],
        "scores": [round(s, 4) for s in (scores or [])[:K]],
        "relevant_ids": sorted(q.relevant),
        "metrics": metrics.per_query(ranked[:K], q.relevant),
        "degraded": degraded,
    }
    if q.relevant_sessions:
        row["ranked_sessions"] = sessions
        row["relevant_sessions"] = sorted(q.relevant_sessions)
        row["metrics"] |= metrics.session_metrics(sessions, q.relevant_sessions)
        row["session_cut_short"] = [k for k in metrics.SESSION_KS
                                    if not metrics.session_cut(sessions, k)[1]]
    return row


def gateway_legs(client: Client) -> list[str]:
    """The legs the gateway fans out to (every Recall response lists them all)."""
    return [leg.leg for leg in client.recall("-", namespace="bench-probe", k=1, timeout=30).legs]


def recall(client: Client, ds: Dataset, q: Any, fusion: dict[str, Any],
           **options: Any) -> RecallResult:
    """One of the dataset's questions through Recall (k: `depth`), as the configuration asks
    it."""
    return client.recall(q.text, namespace=ds.namespace(q.scope), k=depth(ds), fusion=fusion,
                         timeout=30, **options,
                         **({"reference_time": q.reference_time}  # relative times read on it
                            if q.reference_time is not None else {}))


def unanswered_rows(client: Client, ds: Dataset, config: Config, legs: list[str]) -> list[dict]:
    """Every unanswerable query (Dataset.unanswerable) through Recall: what came back, with
    its scores (a relevance floor should leave these empty). Not timed, never scored as
    recall."""
    fusion = config.client_fusion(legs)
    rows = []
    for q in ds.unanswerable:
        try:
            response = recall(client, ds, q, fusion)
        except RecallmeshError as exc:
            rows.append({"query_id": q.query_id, "category": q.category,
                         "error": exc.code.name})
            continue
        rows.append({"query_id": q.query_id, "category": q.category,
                     "ranked_ids": [h.memory.metadata.get("corpus_id", "") for h in response.hits],
                     "scores": [round(h.score, 4) for h in response.hits]})
    return rows


def run_config(client: Client, ds: Dataset, config: Config,
               legs: list[str]) -> tuple[list[dict], list[float]]:
    """Every query through Recall. First one untimed recall per namespace (warm-up: the
    graph leg loads a namespace's graph on its first search). A query whose Recall fails
    counts as a miss with its status code in the row (never silently dropped)."""
    rows, latencies = [], []
    fusion = config.client_fusion(legs)
    for scope in sorted({q.scope for q in ds.queries}):
        first = next(q for q in ds.queries if q.scope == scope)
        try:
            # The longest budget a request may have, so the warm-up waits for a graph load
            # (1.6 s on SciFact) instead of giving up at the default 800 ms while it goes on.
            client.recall(first.text, namespace=ds.namespace(scope), k=K, fusion=fusion,
                          budget_ms=MAX_BUDGET_MS, timeout=70)
        except RecallmeshError:
            pass  # the timed pass records it
    for q in ds.queries:
        start = time.perf_counter()
        try:
            response = recall(client, ds, q, fusion)
        except RecallmeshError as exc:
            latencies.append((time.perf_counter() - start) * 1000)
            rows.append(result_row(q, [], [], True) | {"error": exc.code.name})
            continue
        latencies.append((time.perf_counter() - start) * 1000)
        ranked = [h.memory.metadata.get("corpus_id", "") for h in response.hits]
        sessions = [h.memory.metadata.get("session_id", "") for h in response.hits]
        rows.append(result_row(q, ranked, sessions, response.degraded,
                               [h.score for h in response.hits]))
    return rows, latencies


def settle(dsn: str) -> float:
    """VACUUM (ANALYZE) after the load, before anything is timed: otherwise autovacuum works
    through the freshly written rows while the first configurations run, and on 2 cores that
    inflates whichever configuration comes first (seen: +30% p95). Queries are timed in the
    database's steady state; how BM25 behaves before statistics exist is checked apart
    (tests/integration/test_bm25.py; benchmarks/reports/lexical.md). Returns the seconds it
    took."""
    started = time.perf_counter()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE)")
    return time.perf_counter() - started


def stored_docs(dsn: str, ds: Dataset) -> dict[str, list[Doc]]:
    """What recallmesh stored per scope: content and embedding, read back from Postgres."""
    import psycopg
    from pgvector.psycopg import register_vector

    docs: dict[str, list[Doc]] = {}
    with psycopg.connect(dsn) as conn:
        register_vector(conn)
        for scope in ds.scopes:
            rows = conn.execute(
                "SELECT metadata->>'corpus_id', content, embedding FROM memories "
                "WHERE namespace = %s AND deleted_at IS NULL ORDER BY created_at, id",
                (ds.namespace(scope),)).fetchall()
            docs[scope] = [Doc(cid, content, None if emb is None
                               else np.asarray(emb.to_list(), dtype=np.float32))
                           for cid, content, emb in rows]
    return docs


def run_peer(peer: Peer, ds: Dataset, docs: dict[str, list[Doc]], channel: grpc.Channel,
             workdir: str, dsn: str | None = None) -> tuple[list[dict], list[float], dict]:
    """`peer` over the stored `docs`, queries embedded through `channel` (to the embedding
    service; the caller closes it). `dsn`: the stack's Postgres, for a peer that builds its
    index there (peer_pgvector_hybrid)."""
    session_of = {m.corpus_id: m.session_id for ms in ds.scopes.values() for m in ms}
    stub = embedder_pb2_grpc.EmbedderServiceStub(channel)

    def embed(text: str) -> np.ndarray:
        response = stub.Embed(embedder_pb2.EmbedRequest(
            texts=[text], kind=embedder_pb2.EMBED_KIND_QUERY), timeout=30)
        return np.asarray(response.embeddings[0].values, dtype=np.float32)

    rows, latencies, indexes = [], [], {}
    started = time.perf_counter()
    with peer.builder(workdir, dsn) as builder:
        for scope, scope_docs in docs.items():
            indexes[scope] = builder.build(scope_docs)
        build_s = time.perf_counter() - started
        for q in ds.queries:
            ranked, ms = timed_search(indexes[q.scope], q.text,
                                      embed if peer.needs_vectors else None, K)
            latencies.append(ms)
            deeper = ranked
            if depth(ds) > K:
                # A peer's candidate lists follow k (LanceDB's hybrid limits each side to it),
                # so its top K is asked for as such and timed; the deeper list, asked apart
                # and not timed, only gives the session-level recall its sessions.
                deeper, _ = timed_search(indexes[q.scope], q.text,
                                         embed if peer.needs_vectors else None, depth(ds))
            rows.append(result_row(q, ranked, [session_of.get(i, "") for i in deeper], False))
    return rows, latencies, {"index_build_s": build_s, "namespaces": len(indexes),
                             **builder.info}


@functools.cache
def git_commit() -> str:
    """The commit the run's code was loaded from (read once: a commit made while a long run
    goes on must not relabel its later configurations)."""
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(__file__).resolve().parents[2],
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def run(dataset_dir: Path, config_names: list[str], out: Path, limit: int | None,
        target: str | None, skip_ingest: bool = False, dsn: str | None = None,
        embedder: str | None = None, namespace_tag: str = "",
        ingest_batch: int = BATCH, api_key: str | None = None,
        internal_token: str | None = None, unanswerable: bool = False,
        corpus_sample: int | None = None) -> list[Path]:
    """Run configurations (recallmesh through the gateway) and peers (side by side, on what
    the stack stored) over one benchmark folder; write OUTDIR/<name>.json for each.

    With `target` (a running gateway, called with `api_key`: default RECALLMESH_API_KEY or the
    local admin key file), peers read the stored memories from `dsn` (default:
    RECALLMESH_DSN or the embedded Postgres) and embed queries with `embedder` (default:
    the configured embedding service; called with `internal_token`, default
    RECALLMESH_INTERNAL_TOKEN)."""
    unknown = [n for n in config_names if n not in CONFIGS and n not in PEERS]
    if unknown:
        raise SystemExit(f"unknown configs {unknown}; known: {', '.join([*CONFIGS, *PEERS])}")
    git_commit()  # pinned before any configuration runs
    ds = load(dataset_dir, limit, unanswerable, corpus_sample)
    ds.namespace_tag = namespace_tag
    out.mkdir(parents=True, exist_ok=True)
    tmp = stack = None
    written = []
    try:
        tmp = tempfile.TemporaryDirectory(prefix="recallmesh-bench-")
        if target is None:
            stack = Stack(env={**BENCH_ENV, "RECALLMESH_DATA_DIR": tmp.name,
                               "RECALLMESH_LEGS": ALL_LEGS, **free_port_env()})
            stack.start()
        docs = peer_dsn = None
        with gateway_client(stack, target, api_key) as client:
            legs = gateway_legs(client)
            for name in config_names:
                if name in CONFIGS:
                    CONFIGS[name].overrides(legs)  # fail now, not after the ingest
            ingest_info = ({"skipped": True} if skip_ingest
                           else ingest(client, ds, ingest_batch))
            settle_dsn = stack.dsn if stack else dsn  # a --target gateway: only if told
            if not skip_ingest and settle_dsn:
                ingest_info["settle_s"] = settle(settle_dsn)
            for name in config_names:
                extra, unanswered = {}, None
                if name in CONFIGS:
                    settings = CONFIGS[name].settings()
                    rows, latencies = run_config(client, ds, CONFIGS[name], legs)
                    if ds.unanswerable:
                        unanswered = unanswered_rows(client, ds, CONFIGS[name], legs)
                else:
                    if docs is None:  # the database peers read from (and build in)
                        peer_dsn = stack.dsn if stack else dsn or resolve_dsn()
                        docs = stored_docs(peer_dsn, ds)
                    settings = PEERS[name].settings()
                    with (stack.dial("embedding") if stack else dial_internal(
                            embedder or default_target("embedding"), internal_token)) as peer_ch:
                        rows, latencies, extra = run_peer(PEERS[name], ds, docs, peer_ch,
                                                          tmp.name, peer_dsn)
                path = out / f"{name}.json"
                result = result_file(name, settings, ds, limit, rows, latencies, ingest_info,
                                     extra)
                if unanswered is not None:
                    result["unanswerable"] = unanswered
                path.write_text(json.dumps(result, indent=1))
                written.append(path)
                overall = metrics.summarise(rows, metrics.METRICS)[0]
                print(f"{ds.name} {name}: recall@10 {overall['recall@10']:.3f} "
                      f"ndcg@10 {overall['ndcg@10']:.3f} mrr {overall['mrr']:.3f} "
                      f"(p50 {percentile(latencies, 50):.1f} ms)", flush=True)
    finally:
        if stack is not None:
            stack.stop()
        if tmp is not None:
            tmp.cleanup()
    return written


def result_file(name: str, settings: dict, ds: Dataset, limit: int | None, rows: list[dict],
                latencies: list[float], ingest_info: dict, extra: dict) -> dict:
    names = list(metrics.METRICS) + list(metrics.LONGMEMEVAL_METRICS) + (
        list(metrics.SESSION_METRICS)
        if any("session_recall_any@5" in r["metrics"] for r in rows) else [])
    overall, per_category = metrics.summarise(rows, names)
    return {
        "config": name,
        "settings": settings,
        "gateway_env": {k: redact(v) if k == "RECALLMESH_DSN" else v
                        for k, v in recallmesh_env().items()},
        "dataset": {"path": str(ds.path), "name": ds.name, "files_sha256": ds.files_sha256,
                    "queries": len(ds.queries), "limit": limit,
                    "unanswerable": len(ds.unanswerable),
                    "memories": ds.memories_stored},
        "model_id": ModelManifest.load().model_id,
        "git_commit": git_commit(),
        "timestamp": datetime.now(UTC).isoformat(),
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                    "python": platform.python_version()},
        "k": K,
        "overall": overall,
        "per_category": per_category,
        "latency_ms": latency_summary(latencies),
        "degraded_queries": sum(r["degraded"] for r in rows),
        "failed_queries": sum("error" in r for r in rows),
        "ingest": ingest_info,
        **({"peer": extra} if extra else {}),
        "queries": rows,
    }
