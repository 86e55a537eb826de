"""`python -m benchmarks run`: ingest a benchmark folder through the gateway, run every
query of every configuration through Recall, write OUTDIR/<config>.json."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import grpc

from benchmarks.common import percentile
from benchmarks.harness import metrics
from benchmarks.harness.configs import CONFIGS, Config
from benchmarks.harness.data import Dataset, load
from recallmesh.v1 import memory_pb2, memory_pb2_grpc
from shared.config import REPO_ROOT
from shared.model_manifest import ModelManifest
from shared.supervisor import Stack, free_port_env
from shared.timestamps import to_proto_timestamp

K = 10
BATCH = 500




def namespace(ds: Dataset, scope: str) -> str:
    return f"bench-{ds.files_sha256[:10]}-{scope}"[:128]


def ingest(stub, ds: Dataset) -> dict:
    started = time.perf_counter()
    for scope, memories in ds.scopes.items():
        for i in range(0, len(memories), BATCH):
            batch = []
            for m in memories[i : i + BATCH]:
                msg = memory_pb2.Memory(content=m.content, metadata={"corpus_id": m.corpus_id})
                if m.session_id:
                    msg.metadata["session_id"] = m.session_id
                if m.created_at is not None:
                    to_proto_timestamp(m.created_at, msg.created_at)
                batch.append(msg)
            response = stub.StoreBatch(memory_pb2.StoreBatchRequest(
                namespace=namespace(ds, scope), memories=batch,
                index_wait=memory_pb2.IndexWait(wait=True, timeout_ms=600_000)), timeout=700)
            if not response.indexed:
                raise SystemExit(f"scope {scope}: stored but not indexed in time")
    seconds = time.perf_counter() - started
    return {"memories": ds.memories_stored, "namespaces": len(ds.scopes), "seconds": seconds,
            "memories_per_s": ds.memories_stored / seconds if seconds else 0.0}


def run_config(stub, ds: Dataset, config: Config) -> tuple[list[dict], list[float]]:
    rows, latencies = [], []
    overrides = config.overrides()
    for q in ds.queries:
        request = memory_pb2.RecallRequest(namespace=namespace(ds, q.scope), query=q.text, k=K,
                                           fusion=overrides)
        start = time.perf_counter()
        response = stub.Recall(request, timeout=30)
        latencies.append((time.perf_counter() - start) * 1000)
        ranked = [h.memory.metadata.get("corpus_id", "") for h in response.hits]
        sessions = [h.memory.metadata.get("session_id", "") for h in response.hits]
        row = {
            "query_id": q.query_id,
            "category": q.category,
            "cluster": q.cluster,
            "ranked_ids": ranked,
            "relevant_ids": sorted(q.relevant),
            "metrics": metrics.per_query(ranked, q.relevant),
            "degraded": response.degraded,
        }
        if q.relevant_sessions:
            row["ranked_sessions"] = sessions
            row["relevant_sessions"] = sorted(q.relevant_sessions)
            row["metrics"]["session_recall_any@5"] = metrics.any_at(
                sessions, q.relevant_sessions, 5)
            row["metrics"]["session_recall_any@10"] = metrics.any_at(
                sessions, q.relevant_sessions, 10)
        rows.append(row)
    return rows, latencies


def git_commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def run(dataset_dir: Path, config_names: list[str], out: Path, limit: int | None,
        target: str | None, skip_ingest: bool = False) -> list[Path]:
    unknown = [n for n in config_names if n not in CONFIGS]
    if unknown:
        raise SystemExit(f"unknown configs {unknown}; known: {', '.join(CONFIGS)}")
    ds = load(dataset_dir, limit)
    out.mkdir(parents=True, exist_ok=True)
    tmp = stack = None
    written = []
    try:
        if target is None:
            tmp = tempfile.TemporaryDirectory(prefix="recallmesh-bench-")
            stack = Stack(env={"RECALLMESH_DATA_DIR": tmp.name, **free_port_env()})
            stack.start()
            target = stack.endpoints["gateway"]
        with grpc.insecure_channel(target) as channel:
            stub = memory_pb2_grpc.MemoryServiceStub(channel)
            ingest_info = {"skipped": True} if skip_ingest else ingest(stub, ds)
            for name in config_names:
                config = CONFIGS[name]
                rows, latencies = run_config(stub, ds, config)
                names = list(metrics.METRICS) + (
                    ["session_recall_any@5", "session_recall_any@10"]
                    if any("session_recall_any@5" in r["metrics"] for r in rows) else [])
                overall, per_category = metrics.summarise(rows, names)
                result = {
                    "config": name,
                    "settings": config.settings(),
                    "gateway_env": {k: v for k, v in os.environ.items()
                                    if k.startswith("RECALLMESH_")},
                    "dataset": {"path": str(ds.path), "name": ds.name,
                                "files_sha256": ds.files_sha256, "queries": len(ds.queries),
                                "limit": limit},
                    "model_id": ModelManifest.load().model_id,
                    "git_commit": git_commit(),
                    "timestamp": datetime.now(UTC).isoformat(),
                    "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                                "python": platform.python_version()},
                    "k": K,
                    "overall": overall,
                    "per_category": per_category,
                    "latency_ms": {"p50": percentile(latencies, 50),
                                   "p95": percentile(latencies, 95),
                                   "p99": percentile(latencies, 99)},
                    "degraded_queries": sum(r["degraded"] for r in rows),
                    "ingest": ingest_info,
                    "queries": rows,
                }
                path = out / f"{name}.json"
                path.write_text(json.dumps(result, indent=1))
                written.append(path)
                print(f"{ds.name} {name}: recall@10 {overall['recall@10']:.3f} "
                      f"ndcg@10 {overall['ndcg@10']:.3f} mrr {overall['mrr']:.3f} "
                      f"(p50 {result['latency_ms']['p50']:.1f} ms)", flush=True)
    finally:
        if stack is not None:
            stack.stop()
        if tmp is not None:
            tmp.cleanup()
    return written
