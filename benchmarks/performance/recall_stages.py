"""Where a recall's time goes: a per-stage breakdown through the real stack, per model.

  python -m benchmarks.performance.recall_stages [--models nomic-embed-text-v1.5,...]
      [--memories 5000] [--requests 500] [--report-to FILE.md] [--json FILE]

For each model (a catalogue name: the embedding service serves it through
RECALLMESH_EMBEDDING_MANIFEST; every other setting is the shipped default) a stack of its own is
started and loaded with --memories real texts (LoCoMo turns, then LongMemEval turns, one
namespace: benchmarks/performance/gateway_recall.py), then --requests real benchmark questions are
sent as Recall (k=10, default budget) one after another from one client. Every service's
Prometheus histograms are read before and after; the difference of their sums and counts gives
the mean time per recall of each stage, as the gateway sees it and as the service that did the
work sees it:

  client                      the client's wall time per recall (p50 / p95 too)
  gateway, whole RPC          grpc_server_handling_seconds{Recall}: authentication, validation,
                              the recall, the response message
  recall                      recallmesh_recall_seconds: fan-out, fusion, hydration, context
  fan_out / fusion /          recallmesh_recall_stage_seconds{stage}
  hydration / context
  query embedding (gateway)   recallmesh_gateway_query_embedding_seconds: the Embed call
  embedding service           its grpc_server_handling_seconds{Embed} and, inside, the
                              batcher's queue + model time (recallmesh_embedding_request_seconds)
  <leg> (gateway)             recallmesh_leg_latency_seconds{leg}: includes the wait for the
                              query vector for legs that need one
  <leg> service               the leg's own grpc_server_handling_seconds{Search}
  fusion service              its grpc_server_handling_seconds{Fuse}

What a hop costs (connection, serialization, the event loops) is the gateway's view minus the
service's own; "beyond the query embedding" is the client's wall time less the query embedding
as the gateway waits for it (issue 68's target for the hops). Every column has a stack of its
own, all started and loaded first, then asked in turns (question 1 to each column, question 2
to each, ...), so a machine whose speed drifts during the run slows every column alike; means
come from histogram sums, so they are exact, not bucket estimates.

  --graphs FILES   adds a column of the default model served from each other ONNX graph (a
                   path: e.g. the fused graph `python -m benchmarks.performance.query_levers
                   fused` writes, benchmarks/results/graphs/model-fused.onnx)
  --settings N=V   adds a column of the default model per setting, its services started with
                   that environment variable too (e.g. RECALLMESH_EMBEDDING_THREADS=1)
  --baseline REV   adds a column of the same stack at commit REV (a git worktree of it; every
                   service runs REV's code: PYTHONPATH and PYTHONSAFEPATH), for the default
                   model: the before and after of a change in one run.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from benchmarks.harness.load import loaded_stack, scrape
from benchmarks.harness.script import machine_info, names, publish
from benchmarks.harness.stats import latency_summary
from benchmarks.performance.gateway_recall import NAMESPACE
from recallmesh.embedding_models.manifest import DEFAULT_MODEL, model_cache_dir
from recallmesh.v1 import memory_pb2, memory_pb2_grpc

DATASETS = Path(__file__).resolve().parents[2] / ".." / "shared" / "datasets"
SERVICES = ("gateway", "embedding", "lexical", "vector", "graph", "fusion")


def sums(text: str | None) -> dict[tuple[str, tuple], tuple[float, float]]:
    """(histogram name, sorted labels) -> (sum, count) of every histogram in an exposition."""
    out: dict[tuple[str, tuple], list[float]] = {}
    if text is None:
        return {}
    for family in text_string_to_metric_families(text):
        if family.type != "histogram":
            continue
        for sample in family.samples:
            if sample.name.endswith("_sum") or sample.name.endswith("_count"):
                key = (family.name, tuple(sorted(sample.labels.items())))
                slot = out.setdefault(key, [0.0, 0.0])
                slot[0 if sample.name.endswith("_sum") else 1] = sample.value
    return {k: (v[0], v[1]) for k, v in out.items()}


def snapshot(metrics: dict[str, int]) -> dict[str, dict]:
    return {name: sums(scrape(port, timeout_s=5.0)) for name, port in metrics.items()
            if name in SERVICES}


def mean_ms(before: dict, after: dict, service: str, name: str, per: float,
            **labels: str) -> float | None:
    """Total seconds the histogram `name` (with `labels` among its labels) gained on `service`
    between two snapshots, per recall (`per` recalls), in ms; None when nothing was observed."""
    total, seen = 0.0, 0.0
    for (hist, lbls), (s_after, c_after) in after.get(service, {}).items():
        if hist != name or any(dict(lbls).get(k) != v for k, v in labels.items()):
            continue
        s_before, c_before = before.get(service, {}).get((hist, lbls), (0.0, 0.0))
        total += s_after - s_before
        seen += c_after - c_before
    return total / per * 1000 if seen else None


def stage_rows(before: dict, after: dict, recalls: int) -> list[tuple[str, float | None, str]]:
    """(stage, mean ms per recall, what it is) in report order."""
    def m(service: str, name: str, **labels: str) -> float | None:
        return mean_ms(before, after, service, name, recalls, **labels)

    handling = "grpc_server_handling_seconds"
    rows = [
        ("gateway: whole Recall RPC", m("gateway", handling, grpc_method="Recall",
                                         grpc_code="OK"),
         "authentication, validation, the recall, the response"),
        ("gateway: recall", m("gateway", "recallmesh_recall_seconds"),
         "fan-out + fusion + hydration + context"),
    ]
    for stage, what in (("fan_out", "the legs and the query embedding, in parallel"),
                        ("fusion", "fusion service call (or in-process fusion)"),
                        ("hydration", "the reads after fusion"),
                        ("context", "context propagation")):
        rows.append((f"  {stage}", m("gateway", "recallmesh_recall_stage_seconds", stage=stage),
                     what))
    rows += [
        ("    query embedding (gateway's view)",
         m("gateway", "recallmesh_gateway_query_embedding_seconds", state="OK"),
         "the Embed call as the gateway waits for it"),
        ("      embedding service: Embed", m("embedding", handling, grpc_method="Embed"),
         "its own handling time"),
        ("        batcher queue + model", m("embedding", "recallmesh_embedding_request_seconds",
                                            kind="query"),
         "tokenising, queueing, the model run, pooling"),
    ]
    for leg in ("lexical", "vector", "graph"):
        seen = m("gateway", "recallmesh_leg_latency_seconds", leg=leg, state="OK")
        if seen is None:
            continue
        rows.append((f"    {leg} leg (gateway's view)", seen,
                     "includes the wait for the query vector" if leg == "vector" else
                     "the Search call"))
        rows.append((f"      {leg} service: Search", m(leg, handling, grpc_method="Search"),
                     "its own handling time"))
    rows.append(("    fusion service: Fuse", m("fusion", handling, grpc_method="Fuse"),
                 "its own handling time"))
    return rows


REPO = Path(__file__).resolve().parents[2]


@dataclass
class Column:
    """One stack of the run: a model, on this checkout's code or on commit `rev`'s."""

    model: str
    rev: str = ""  # "" this checkout
    graph: str = ""  # another ONNX graph of the model to serve ("" the manifest's)
    setting: str = ""  # NAME=VALUE: one more environment setting of its services
    latencies: list[float] = field(default_factory=list)
    degraded: int = 0

    @property
    def label(self) -> str:
        label = f"{self.model} @ {self.rev}" if self.rev else self.model
        extra = ", ".join(x for x in (self.graph, self.setting) if x)
        return f"{label} ({extra})" if extra else label


@contextlib.contextmanager
def worktree(rev: str) -> Iterator[Path]:
    """A detached git worktree of `rev`, removed on the way out."""
    path = Path(tempfile.mkdtemp(prefix="recallmesh-baseline-"))
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "--force", str(path),
                    rev], check=True, capture_output=True)
    try:
        yield path
    finally:
        subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(path)],
                       check=False, capture_output=True)


def graph_manifest(model: str, graph: str) -> Path:
    """A manifest of `model` that serves `graph` (a path, or a file of its folder), in a folder
    of its own, by absolute paths; every other field the cached manifest's."""
    folder = model_cache_dir() / model
    raw = json.loads((folder / "manifest.json").read_text())
    onnx = Path(graph) if Path(graph).is_file() else folder / graph
    raw["onnx"], raw["tokenizer"] = str(onnx.resolve()), str(folder / raw["tokenizer"])
    raw["sha256"] = {}  # the cached manifest's verify stands for these files
    out = Path(tempfile.mkdtemp(prefix="recallmesh-graph-")) / "manifest.json"
    out.write_text(json.dumps(raw, indent=2))
    return out


def stack_env(column: Column, code: Path) -> dict[str, str]:
    env = {"PYTHONPATH": str(code), "PYTHONSAFEPATH": "1"}  # its services run `code`'s modules
    if column.setting:
        name, _, value = column.setting.partition("=")
        env[name] = value
    if column.graph:
        env["RECALLMESH_EMBEDDING_MANIFEST"] = str(graph_manifest(column.model, column.graph))
    elif column.model != DEFAULT_MODEL:
        env["RECALLMESH_EMBEDDING_MANIFEST"] = str(model_cache_dir() / column.model /
                                                   "manifest.json")
    return env


def run(columns: list[Column], args: argparse.Namespace) -> list[dict[str, Any]]:
    """Start and load every column's stack, then ask them the questions in turns."""
    with contextlib.ExitStack() as stacks:
        loaded = []
        for column in columns:
            code = stacks.enter_context(worktree(column.rev)) if column.rev else REPO
            print(f"{column.label}: starting a stack, loading {args.memories} memories ...",
                  flush=True)
            loaded.append(stacks.enter_context(loaded_stack(
                "stages", args.datasets, args.memories, stack_env(column, code))))
        questions = loaded[0].queries[30:30 + args.requests]  # the first 30 warmed them up
        channels = [stacks.enter_context(one.stack.dial()) for one in loaded]
        stubs = [memory_pb2_grpc.MemoryServiceStub(channel) for channel in channels]
        before = [snapshot(one.stack.metrics) for one in loaded]
        for q in questions:
            for column, stub in zip(columns, stubs, strict=True):
                started = time.perf_counter()
                response = stub.Recall(memory_pb2.RecallRequest(namespace=NAMESPACE, query=q,
                                                                k=10), timeout=30)
                column.latencies.append((time.perf_counter() - started) * 1000)
                column.degraded += response.degraded
        after = [snapshot(one.stack.metrics) for one in loaded]
    results = []
    for column, one, b, a in zip(columns, loaded, before, after, strict=True):
        rows = stage_rows(b, a, len(questions))
        client = latency_summary(column.latencies)
        embedding = next(v for s, v, _ in rows if s.strip().startswith("query embedding"))
        results.append({"model": column.model, "rev": column.rev, "label": column.label,
                        "memories": one.memories, "load_s": one.load_s,
                        "recalls": len(questions), "degraded": column.degraded,
                        "client_ms": client,
                        "beyond_embedding_ms": (client["mean"] - embedding
                                                if embedding is not None else None),
                        "stages": [{"stage": s, "mean_ms": v, "what": w} for s, v, w in rows]})
    return results


def stage_table(columns: list[tuple[str, float, list[dict], float | None]]) -> list[str]:
    """The per-stage table, one column per (label, client mean ms, stage rows of stage_rows,
    ms beyond the query embedding)."""
    lines = ["| stage | " + " | ".join(c[0] for c in columns) + " | what |",
             "|---|" + "---:|" * len(columns) + "---|",
             "| client: wall time per recall | "
             + " | ".join(f"{c[1]:.1f}" for c in columns) + " | gRPC both ways |",
             "| beyond the query embedding | "
             + " | ".join("—" if c[3] is None else f"{c[3]:.1f}" for c in columns)
             + " | the client's wall time less the query embedding (gateway's view) |"]
    for i, row in enumerate(columns[0][2]):
        cells = ["—" if c[2][i]["mean_ms"] is None else f"{c[2][i]['mean_ms']:.2f}"
                 for c in columns]
        label = row["stage"].lstrip()
        indent = "&nbsp;" * (len(row["stage"]) - len(label))
        lines.append(f"| {indent}{label} | " + " | ".join(cells) + f" | {row['what']} |")
    return lines


def report(results: list[dict], argv: list[str]) -> str:
    lines = [
        "# Where a recall's time goes (per-stage breakdown)",
        "",
        f"Generated by `python -m benchmarks.performance.recall_stages {' '.join(argv)}` "
        f"({datetime.now(UTC):%Y-%m-%d %H:%M} UTC); how it is measured: the script's docstring.",
        "",
        f"- {results[0]['memories']} memories (LoCoMo then LongMemEval turns, one namespace), "
        f"{results[0]['recalls']} real questions as Recall (k=10, default budget) one after "
        "another from one client, the columns in turns; a stack of its own per column, every "
        "other setting the shipped default (authentication on, the query cache off: "
        "BENCH_ENV). A column `model @ REV` runs commit REV's code.",
        "- Machine: " + ", ".join(f"{k} {v}" for k, v in machine_info().items()),
        "",
        "Mean ms per recall (indented rows are inside the row above; legs run in parallel):",
        "",
    ]
    lines += stage_table([(r["label"], r["client_ms"]["mean"], r["stages"],
                           r["beyond_embedding_ms"]) for r in results])
    lines += ["", "| column | client p50 ms | client p95 ms | degraded | load s |",
              "|---|---:|---:|---:|---:|"]
    lines += [f"| {r['label']} | {r['client_ms']['p50']:.1f} | {r['client_ms']['p95']:.1f} | "
              f"{r['degraded']} | {r['load_s']:.0f} |" for r in results]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=names, default=DEFAULT_MODEL)
    parser.add_argument("--memories", type=int, default=5000)
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--datasets", type=Path, default=DATASETS)
    parser.add_argument("--report-to", type=Path)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--baseline", default="",
                        help="a commit whose code runs as one more column (the default model)")
    parser.add_argument("--settings", type=names, default=[],
                        help="NAME=VALUE environment settings, a column of the default model "
                             "each (e.g. RECALLMESH_EMBEDDING_THREADS=1)")
    parser.add_argument("--graphs", type=names, default=[],
                        help="other ONNX graphs of the default model (paths), a column "
                             "each")
    args = parser.parse_args(argv)
    columns = ([Column(DEFAULT_MODEL, args.baseline)] if args.baseline else [])
    columns += [Column(DEFAULT_MODEL, graph=graph) for graph in args.graphs]
    columns += [Column(DEFAULT_MODEL, setting=setting) for setting in args.settings]
    columns += [Column(model) for model in args.models]
    results = run(columns, args)
    publish(report(results, argv), args.report_to, args.json, results, indent=1)


if __name__ == "__main__":
    main()
