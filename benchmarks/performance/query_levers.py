"""The query embedding's levers on this CPU (issue 68, item 1): one short query at a time, the
shipped session against each lever, each variant alone in a process of its own, in rounds.

  python -m benchmarks.performance.query_levers [--queries 150] [--rounds 4] [--int8]
      [--report-to FILE.md] [--json FILE]
  python -m benchmarks.performance.query_levers fused [--out FILE]
      writes the fused graph (below) to FILE (default benchmarks/results/graphs/
      model-fused.onnx), for recall_stages.py --graphs

Variants (every one the embedding service's own OnnxEmbedder: tokeniser, no padding beyond
the query's own length, pooling; only the named setting differs):

  shipped          the default model, onnxruntime's ORT_ENABLE_ALL, its default threads
  threads-1        one intra-op thread (a lone short query does not split well over 2 cores)
  fusions          the fp32 graph after onnxruntime.transformers' optimizer (model_type
                   bert, its Python fusions, opt_level 0: 25 SkipLayerNormalization; the
                   rotary embedding leaves the attention unfused), then the same session
  int8             with --int8 (fetched first: `recallmesh fetch-model
                   nomic-embed-text-v1.5-int8`), the catalogue's int8 build (reduce_range),
                   for the record: its vectors differ (decision 0009 keeps it opt-in)

Each round starts one process per variant, one after another (the order rotating round by
round, so that drift favours none); a process loads its one session, warms it up, embeds
--queries real benchmark questions (LoCoMo then LongMemEval dev) one at a time (the first 20
warm up), then the same questions as documents in batches of 32 (the indexer's shape). Alone:
the first version of this script held every variant's session in one process and asked them
in turns, and the idle sessions' thread pools made the shipped one look 1.33x slower than the
fused graph, which a process of its own and the served stack both showed to be no faster
(docs/decisions/0026-the-hops-around-the-vector.md). Per variant: p50 / p95 ms over every
round's questions, documents per second, and the cosine of its vectors to the shipped ones
(lowest and mean): a lever whose vectors are the shipped ones to float rounding cannot move a
ranking; one whose vectors differ needs the decision rule.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.harness.script import machine_info, publish
from benchmarks.harness.stats import latency_summary
from benchmarks.performance.gateway_recall import read_queries
from benchmarks.performance.speed import DATASETS, manifest_path
from recallmesh.embedding_models.manifest import DEFAULT_MODEL, ModelManifest
from recallmesh.services.embedding.core import OnnxEmbedder

INT8 = "nomic-embed-text-v1.5-int8"
VARIANTS = ("shipped", "threads-1", "fusions")
FUSED = Path(__file__).resolve().parents[1] / "results" / "graphs" / "model-fused.onnx"
WARM_UP = 20
DOCUMENT_BATCH = 32


def build_fused(out: Path = FUSED) -> Path:
    """The shipped fp32 graph through onnxruntime's transformer optimizer, written to `out`."""
    import logging

    from onnxruntime.transformers.optimizer import optimize_model

    logging.getLogger("onnxruntime.transformers.optimizer").setLevel(logging.ERROR)
    shipped = ModelManifest.load(manifest_path(DEFAULT_MODEL))
    model = optimize_model(str(shipped.onnx), model_type="bert", num_heads=12,
                           hidden_size=768, opt_level=0, use_gpu=False)
    print(f"fusions: {model.get_fused_operator_statistics()}", file=sys.stderr, flush=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    model.save_model_to_file(str(out))
    return out


def embedder(variant: str) -> OnnxEmbedder:
    shipped = ModelManifest.load(manifest_path(DEFAULT_MODEL))
    if variant == "shipped":
        return OnnxEmbedder(shipped, provider="cpu")
    if variant == "threads-1":
        return OnnxEmbedder(shipped, provider="cpu", intra_op_threads=1)
    if variant == "fusions":
        return OnnxEmbedder(dataclasses.replace(shipped, onnx=FUSED), provider="cpu")
    if variant == "int8":
        return OnnxEmbedder(ModelManifest.load(manifest_path(INT8)), provider="cpu")
    raise SystemExit(f"unknown variant {variant!r}")


def worker(variant: str, queries: int, datasets: Path, out: Path) -> None:
    """One variant alone: its query times (ms), its query vectors, its documents per second."""
    model = embedder(variant)
    model.warm_up()
    questions = read_queries(datasets, queries + WARM_UP)
    times, vectors = [], []
    for i, q in enumerate(questions):
        started = time.perf_counter()
        got = model.embed([q], kind="query")
        took = (time.perf_counter() - started) * 1000.0
        if i >= WARM_UP:
            times.append(took)
            vectors.append(got.vectors[0])
    documents = questions[WARM_UP:]
    started = time.perf_counter()
    for at in range(0, len(documents), DOCUMENT_BATCH):
        model.embed(documents[at:at + DOCUMENT_BATCH], kind="document")
    per_s = len(documents) / (time.perf_counter() - started)
    np.savez(out, times=np.asarray(times), vectors=np.asarray(vectors, dtype=np.float64),
             documents_per_s=np.asarray([per_s]))


def run(args: argparse.Namespace) -> dict[str, Any]:
    names = [*VARIANTS, *(["int8"] if args.int8 else [])]
    if "fusions" in names and not FUSED.is_file():
        build_fused()
    times: dict[str, list[float]] = {n: [] for n in names}
    per_s: dict[str, list[float]] = {n: [] for n in names}
    vectors: dict[str, np.ndarray] = {}
    with tempfile.TemporaryDirectory(prefix="query-levers-") as tmp:
        for r in range(args.rounds):
            for name in names[r % len(names):] + names[:r % len(names)]:
                out = Path(tmp) / f"{name}-{r}.npz"
                subprocess.run([sys.executable, "-m", "benchmarks.performance.query_levers",
                                "worker", name, "--queries", str(args.queries), "--datasets",
                                str(args.datasets), "--out", str(out)], check=True)
                got = np.load(out)
                times[name] += got["times"].tolist()
                per_s[name].append(float(got["documents_per_s"][0]))
                vectors[name] = got["vectors"]
                print(f"round {r + 1} {name}: p50 {np.median(got['times']):.1f} ms",
                      file=sys.stderr, flush=True)
    base = vectors["shipped"]
    out_variants: dict[str, Any] = {}
    for name in names:
        cos = [float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))
               for a, b in zip(vectors[name], base, strict=True)]
        out_variants[name] = {**latency_summary(times[name]), "cosine_min": min(cos),
                              "cosine_mean": statistics.fmean(cos),
                              "documents_per_s": statistics.median(per_s[name]),
                              "round_p50": [float(np.median(times[name][i:i + args.queries]))
                                            for i in range(0, len(times[name]), args.queries)]}
    return {"queries": args.queries, "rounds": args.rounds, "machine": machine_info(),
            "variants": out_variants}


def report(result: dict[str, Any], argv: list[str]) -> str:
    machine = ", ".join(f"{k} {v}" for k, v in result["machine"].items())
    shipped = result["variants"]["shipped"]["p50"]
    lines = [
        "# The query embedding's levers on this CPU", "",
        f"Generated by `python -m benchmarks.performance.query_levers {' '.join(argv)}`"
        .rstrip() + f" ({time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC); how it is "
        "measured: the script's docstring.", "",
        f"- {result['rounds']} rounds, each variant alone in a process of its own per round, "
        f"{result['queries']} real questions one at a time, then the same as documents in "
        f"batches of {DOCUMENT_BATCH} (OnnxEmbedder, provider cpu).",
        f"- Machine: {machine}", "",
        "| variant | query p50 ms | p95 ms | p50 against shipped | p50 per round | "
        "documents/s | cosine to shipped, lowest | mean |",
        "|---|---:|---:|---:|---|---:|---:|---:|"]
    for name, v in result["variants"].items():
        rounds = " / ".join(f"{x:.1f}" for x in v["round_p50"])
        lines.append(f"| {name} | {v['p50']:.1f} | {v['p95']:.1f} | "
                     f"{v['p50'] / shipped:.2f}x | {rounds} | {v['documents_per_s']:.1f} | "
                     f"{v['cosine_min']:.6f} | {v['cosine_mean']:.6f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["worker"]:
        parser = argparse.ArgumentParser()
        parser.add_argument("variant")
        parser.add_argument("--queries", type=int, required=True)
        parser.add_argument("--datasets", type=Path, required=True)
        parser.add_argument("--out", type=Path, required=True)
        w = parser.parse_args(argv[1:])
        worker(w.variant, w.queries, w.datasets, w.out)
        return
    if argv[:1] == ["fused"]:
        parser = argparse.ArgumentParser()
        parser.add_argument("--out", type=Path, default=FUSED)
        print(build_fused(parser.parse_args(argv[1:]).out))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=150)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--datasets", type=Path, default=DATASETS)
    parser.add_argument("--int8", action="store_true", help="also the int8 build")
    parser.add_argument("--report-to", type=Path)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    result = run(args)
    publish(report(result, argv), args.report_to, args.json, result)


if __name__ == "__main__":
    main()
