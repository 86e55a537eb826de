"""Embedding models side by side in one process: query latency, document throughput, and how
far each model's vectors are from the first one's (e.g. int8 against fp32).

  python -m benchmarks.performance.embedding_precision \\
      [--models nomic-embed-text-v1.5,nomic-embed-text-v1.5-int8] [--variant LABEL=FILE.onnx]
      [--report-to benchmarks/reports/embedding-int8.md] [--json FILE]

Each model is a catalogue model in the model cache (`recallmesh fetch-model NAME`); a
--variant is another ONNX file run with the first model's manifest (tokenizer, pooling,
prefixes), for trying quantization options without a catalogue entry. Every model runs in
onnxruntime in this process, through the embedding service's own `OnnxEmbedder` with the
service's settings (RECALLMESH_EMBEDDING_THREADS, _MAX_BATCH, _MAX_BATCH_TOKENS from the
environment; provider cpu): tokenisation, the length-sorted sub-batches, pooling and
normalisation included, gRPC and the micro-batcher not.

Measured, the models interleaved so that a drift of the machine hits them alike:
  * QUERY latency: --queries LoCoMo questions, one text per call, each question run by every
    model in turn (the order rotating), after --warmup untimed calls each; p50 / p95 / mean;
  * DOCUMENT throughput at each of --batch-sizes: the same texts in the same batches for
    every model, batch by batch in rotating order; texts/s = texts / the model's summed call
    time. Two text sets: LoCoMo turns (short, like most memories) and SciFact abstracts (long);
  * cosine of each model's vectors to the first model's, over LoCoMo turns and questions and
    SciFact abstracts (document and query prefixes as the service adds them).
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.harness.script import machine_info, names, positive_ints, publish
from benchmarks.harness.stats import percentile
from benchmarks.performance.embedding_throughput import read_texts
from recallmesh.embedding_models.manifest import ModelManifest, model_cache_dir, sha256_file
from recallmesh.services.embedding.core import OnnxEmbedder
from recallmesh.services.embedding.settings import EmbeddingSettings

DATASETS = Path(__file__).resolve().parents[2] / ".." / "shared" / "datasets"
DEFAULT_MODELS = ["nomic-embed-text-v1.5", "nomic-embed-text-v1.5-int8"]


@dataclasses.dataclass
class Model:
    label: str
    manifest: ModelManifest
    embedder: OnnxEmbedder
    load_s: float


def load_models(models: list[str], variants: list[tuple[str, Path]],
                settings: EmbeddingSettings) -> list[Model]:
    out = []
    manifests = []
    for name in models:
        path = model_cache_dir() / name / "manifest.json"
        manifest = ModelManifest.load(path)
        manifest.verify()
        manifests.append((name, manifest))
    for label, onnx in variants:
        base = manifests[0][1]
        manifests.append((label, dataclasses.replace(base, model_id=label,
                                                     onnx=onnx.resolve(), sha256={})))
    for label, manifest in manifests:
        t0 = time.perf_counter()
        embedder = OnnxEmbedder(manifest, provider="cpu",
                                intra_op_threads=settings.intra_op_threads,
                                max_batch=settings.max_batch,
                                max_batch_tokens=settings.max_batch_tokens)
        embedder.warm_up()
        out.append(Model(label, manifest, embedder, time.perf_counter() - t0))
    return out


def rotated(models: list[Model], i: int) -> list[Model]:
    k = i % len(models)
    return models[k:] + models[:k]


def query_latency(models: list[Model], queries: list[str], n: int,
                  warmup: int) -> dict[str, dict[str, float]]:
    for m in models:
        for q in queries[:warmup]:
            m.embedder.embed([q], "query")
    times: dict[str, list[float]] = {m.label: [] for m in models}
    for i in range(n):
        q = queries[(warmup + i) % len(queries)]
        for m in rotated(models, i):
            t0 = time.perf_counter()
            m.embedder.embed([q], "query")
            times[m.label].append((time.perf_counter() - t0) * 1000)
    return {label: {"n": len(ts), "p50_ms": percentile(ts, 50), "p95_ms": percentile(ts, 95),
                    "p99_ms": percentile(ts, 99), "mean_ms": statistics.fmean(ts),
                    "min_ms": min(ts)}
            for label, ts in times.items()}


def throughput(models: list[Model], texts: list[str], batch: int) -> dict[str, dict[str, float]]:
    batches = [texts[i:i + batch] for i in range(0, len(texts), batch)]
    for m in models:  # this batch shape once, untimed
        m.embedder.embed(batches[0], "document")
    spent = {m.label: 0.0 for m in models}
    for i, chunk in enumerate(batches):
        for m in rotated(models, i):
            t0 = time.perf_counter()
            m.embedder.embed(chunk, "document")
            spent[m.label] += time.perf_counter() - t0
    return {label: {"texts": len(texts), "calls": len(batches), "seconds": s,
                    "texts_per_s": len(texts) / s, "call_mean_ms": s / len(batches) * 1000}
            for label, s in spent.items()}


def cosines(models: list[Model], texts: list[str], kind: str) -> dict[str, dict[str, float]]:
    reference = models[0].embedder.embed(texts, kind).vectors
    out = {}
    for m in models[1:]:
        c = (reference * m.embedder.embed(texts, kind).vectors).sum(axis=1)
        out[m.label] = {"n": len(texts), "mean": float(c.mean()),
                        "p05": float(np.percentile(c, 5)), "min": float(c.min()),
                        "median": float(np.median(c))}
    return out


def token_lengths(model: Model, texts: list[str], kind: str) -> float:
    prefixed = model.embedder._prefixed(texts, kind)
    return statistics.fmean(len(e.ids) for e in model.embedder.tokenizer.encode_batch(prefixed))


def report(result: dict[str, Any]) -> str:
    m, s = result["machine"], result["settings"]
    labels = [x["label"] for x in result["models"]]
    ref = labels[0]
    lines = [
        "# Embedding models side by side, in-process (" + " against ".join(labels) + ")",
        "",
        f"Generated by `{result['command']}` ({result['finished']}).",
        "",
        f"- machine: {m['platform']}, {m['processor']}, {m['cpu_count']} CPUs "
        f"({m['cpus_usable']} usable), {result['cpu_model']}; python {m['python']}, "
        f"{m['onnxruntime']}",
        f"- onnxruntime session as the embedding service makes it: provider cpu, "
        f"intra-op threads {s['intra_op_threads'] or 'onnxruntime default (0)'}, "
        f"max batch {s['max_batch']} texts / {s['max_batch_tokens']} padded tokens per run, "
        "ORT_ENABLE_ALL; tokenisation and pooling included, gRPC not",
        "",
        "| model | model_id | precision | file MB | sha256 | load + warm-up s |",
        "|---|---|---|---:|---|---:|",
    ]
    for x in result["models"]:
        lines.append(f"| {x['label']} | {x['model_id']} | {x['precision']} | {x['mb']:.1f} "
                     f"| `{x['sha256'][:16]}` | {x['load_s']:.1f} |")
    q = result["query_latency"]
    lines += ["", f"## Query latency ({q[ref]['n']} LoCoMo questions, one per call, "
              f"models interleaved, after {s['warmup']} warm-up calls each)", "",
              "| model | p50 ms | p95 ms | p99 ms | mean ms | min ms | p50 speed-up |",
              "|---|---:|---:|---:|---:|---:|---:|"]
    for label in labels:
        r = q[label]
        lines.append(f"| {label} | {r['p50_ms']:.2f} | {r['p95_ms']:.2f} | {r['p99_ms']:.2f} "
                     f"| {r['mean_ms']:.2f} | {r['min_ms']:.2f} "
                     f"| {q[ref]['p50_ms'] / r['p50_ms']:.2f}x |")
    for set_name, per_batch in result["throughput"].items():
        info = result["text_sets"][set_name]
        lines += ["", f"## Document throughput, {set_name} ({info['texts']} texts, mean "
                  f"{info['mean_tokens']:.0f} tokens with the prefix; texts/s, same batches "
                  "for every model)", "",
                  "| batch | " + " | ".join(labels) + " | " + " | ".join(
                      f"{label} / {ref}" for label in labels[1:]) + " |",
                  "|---:|" + "---:|" * (2 * len(labels) - 1)]
        for batch, r in per_batch.items():
            lines.append(f"| {batch} | " + " | ".join(
                f"{r[label]['texts_per_s']:.1f}" for label in labels) + " | " + " | ".join(
                f"{r[label]['texts_per_s'] / r[ref]['texts_per_s']:.2f}x"
                for label in labels[1:]) + " |")
    lines += ["", f"## Cosine of each model's vectors to {ref}'s", "",
              "| texts | kind | n | model | mean | median | p05 | min |",
              "|---|---|---:|---|---:|---:|---:|---:|"]
    for set_name, (kind, per_model) in result["cosine"].items():
        for label, r in per_model.items():
            lines.append(f"| {set_name} | {kind} | {r['n']} | {label} | {r['mean']:.4f} "
                         f"| {r['median']:.4f} | {r['p05']:.4f} | {r['min']:.4f} |")
    return "\n".join(lines) + "\n"


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                flags = next((x for x in Path("/proc/cpuinfo").read_text().splitlines()
                              if x.startswith("flags")), "")
                simd = [f for f in ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "amx_int8")
                        if f" {f}" in flags]
                return f"{model} ({', '.join(simd) or 'no AVX2'})"
    except OSError:
        pass
    return "unknown CPU"


def variant(raw: str) -> tuple[str, Path]:
    label, sep, path = raw.partition("=")
    if not sep or not label or not Path(path).is_file():
        raise argparse.ArgumentTypeError(f"expected LABEL=FILE.onnx (an existing file), "
                                         f"got {raw!r}")
    return label, Path(path)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.performance.embedding_precision",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", type=names, default=DEFAULT_MODELS,
                        help="catalogue models in the model cache; the first is the reference "
                        "(default: %(default)s)")
    parser.add_argument("--variant", type=variant, action="append", default=[],
                        help="LABEL=FILE.onnx: another ONNX file with the first model's manifest")
    parser.add_argument("--datasets", type=Path, default=DATASETS)
    parser.add_argument("--queries", type=int, default=400, help="timed query calls per model")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--batch-sizes", type=positive_ints, default=[1, 8, 32])
    parser.add_argument("--locomo-texts", type=int, default=320,
                        help="LoCoMo turns for throughput and cosine")
    parser.add_argument("--scifact-texts", type=int, default=96,
                        help="SciFact abstracts for throughput and cosine")
    parser.add_argument("--cosine-queries", type=int, default=300)
    parser.add_argument("--report-to", type=Path, help="write the markdown report here")
    parser.add_argument("--json", type=Path, help="write the numbers here")
    args = parser.parse_args(argv)

    locomo, scifact = args.datasets / "locomo", args.datasets / "scifact"
    turns = read_texts(locomo / "corpus.jsonl", args.locomo_texts)
    questions = read_texts(locomo / "queries.jsonl", max(args.queries + args.warmup,
                                                         args.cosine_queries))
    abstracts = read_texts(scifact / "corpus.jsonl", args.scifact_texts)
    settings = EmbeddingSettings.from_env()
    print("... loading models", file=sys.stderr, flush=True)
    models = load_models(args.models, args.variant, settings)
    print("... query latency", file=sys.stderr, flush=True)
    latency = query_latency(models, questions, args.queries, args.warmup)
    result_throughput: dict[str, dict[int, Any]] = {}
    for set_name, texts in (("LoCoMo turns", turns), ("SciFact abstracts", abstracts)):
        result_throughput[set_name] = {}
        for batch in args.batch_sizes:
            print(f"... {set_name}, batch {batch}", file=sys.stderr, flush=True)
            result_throughput[set_name][batch] = throughput(models, texts, batch)
    print("... cosines", file=sys.stderr, flush=True)
    cosine = {"LoCoMo turns": ("document", cosines(models, turns, "document")),
              "LoCoMo questions": ("query", cosines(models, questions[:args.cosine_queries],
                                                    "query")),
              "SciFact abstracts": ("document", cosines(models, abstracts, "document"))}
    result = {
        "benchmark": "embedding_precision",
        "command": "python -m benchmarks.performance.embedding_precision "
                   + " ".join(sys.argv[1:] if argv is None else argv),
        "finished": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine_info(),
        "cpu_model": cpu_model(),
        "settings": {"intra_op_threads": settings.intra_op_threads,
                     "max_batch": settings.max_batch,
                     "max_batch_tokens": settings.max_batch_tokens, "warmup": args.warmup},
        "models": [{"label": m.label, "model_id": m.manifest.model_id,
                    "precision": m.manifest.precision, "onnx": str(m.manifest.onnx),
                    "mb": m.manifest.onnx.stat().st_size / 1e6,
                    "sha256": sha256_file(m.manifest.onnx), "load_s": m.load_s}
                   for m in models],
        "text_sets": {"LoCoMo turns": {"texts": len(turns), "mean_tokens":
                                       token_lengths(models[0], turns, "document")},
                      "SciFact abstracts": {"texts": len(abstracts), "mean_tokens":
                                            token_lengths(models[0], abstracts, "document")}},
        "query_latency": latency,
        "throughput": result_throughput,
        "cosine": cosine,
    }
    publish(report(result), args.report_to, args.json, result)


if __name__ == "__main__":
    main()
