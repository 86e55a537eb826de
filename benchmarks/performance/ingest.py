"""Ingest at the model's pace (issue 68, item 3): writes through StoreBatch against the model's
own rate on the same texts.

  python -m benchmarks.performance.ingest [--memories 600] [--rounds 2]
      [--variants shipped,concepts,indexer-batch-256] [--report-to FILE.md] [--json FILE]

Each variant is a set of settings over the shipped defaults (VARIANTS). In each round, every
variant in turn (the order rotating by round, so drift favours none) starts a stack of its own
(benchmarks/harness/load.py `loaded_stack`: the shipped defaults, the query cache and the
benchmarks' vector store off: every vector is computed) and
stores --memories real texts (LoCoMo then LongMemEval dev turns, one namespace) by StoreBatch
with index_wait, 500 a call: the clock stops when every memory is indexed (its vector, and its
concepts where the indexer extracts them), so the rate is what a client sees end to end.

The model alone (the same texts embedded as documents in this process: OnnxEmbedder with the
embedding service's settings) runs between every two stack runs, and before the first and after
the last: a stack run's ratio is its rate over the mean of the model's rates just before and
just after it. The machine's speed drifts by a third within an hour on a shared host (the
model alone: 14.9 texts/s one morning, 9.1 that afternoon), so a rate compares only with the
model's own beside it.

Also per stack run, a share that no drift moves: how much of the load's wall time the embedding
service's document lane ran the model (recallmesh_embedding_model_seconds_total, kind
document: a lane runs one batch at a time, so overlapping requests are not counted twice):
what is left is the time the model waited for the write path (the inserts, the indexer's claim
and write, the index wait's poll). Work in another process that takes the model's CPU (spaCy,
with concepts on) shows as a slower model, not in this share.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from benchmarks.harness.load import loaded_stack, scrape
from benchmarks.harness.script import machine_info, names, publish
from benchmarks.performance.gateway_recall import read_texts
from benchmarks.performance.speed import DATASETS, in_process_rate
from recallmesh.embedding_models.manifest import DEFAULT_MODEL

# Every variant embeds for real: the benchmarks' vector store (BENCH_ENV) would answer
# document vectors from disk and time nothing of the model.
REAL = {"RECALLMESH_EMBEDDING_VECTOR_STORE": ""}
# Settings over the shipped defaults, by variant name: the shipped defaults (the graph leg
# off, so no concepts are extracted: docs/decisions/0025), concept extraction on (what the
# write path costs with the graph leg asked), and larger indexer batches.
VARIANTS: dict[str, dict[str, str]] = {
    "shipped": {},
    "concepts": {"RECALLMESH_CONCEPT_EXTRACTOR": "spacy"},
    "indexer-batch-256": {"RECALLMESH_INDEXER_BATCH": "256"},
}
TARGET_RATIO = 0.9  # issue 68: writes at least this share of the model's own rate


def document_seconds(exposition: str | None) -> float:
    """Seconds an embedding service's document lane ran the model, from its Prometheus text."""
    if exposition is None:
        return 0.0
    return sum(sample.value for family in text_string_to_metric_families(exposition)
               if family.name == "recallmesh_embedding_model_seconds"
               for sample in family.samples
               if sample.name.endswith("_total") and sample.labels.get("kind") == "document")


def model_busy_s(stack: Any) -> float:
    """Seconds the stack's embedding service ran the model on documents since it started."""
    return document_seconds(scrape(stack.metrics.get("embedding"), timeout_s=5.0))


def measure(variants: list[str], memories: int, rounds: int, datasets: Path
            ) -> dict[str, Any]:
    texts = read_texts(datasets, memories)

    def model_alone() -> float:
        own: float = in_process_rate(DEFAULT_MODEL, texts)["per_s"]
        print(f"the model alone {own:.1f} texts/s", flush=True)
        return own

    runs: dict[str, list[dict[str, float]]] = {v: [] for v in variants}
    model = [model_alone()]
    for r in range(rounds):
        order = variants[r % len(variants):] + variants[:r % len(variants)]
        for variant in order:
            with loaded_stack("ingest", datasets, memories, {**REAL, **VARIANTS[variant]}
                              ) as loaded:
                rate = loaded.memories / loaded.load_s
                busy = model_busy_s(loaded.stack) / loaded.load_s
            model.append(model_alone())
            beside = (model[-2] + model[-1]) / 2
            runs[variant].append({"per_s": rate, "model_beside_per_s": beside,
                                  "ratio": rate / beside, "model_busy_share": busy})
            print(f"round {r + 1}: {variant} {rate:.1f} memories/s, {rate / beside:.2f} of "
                  f"the model beside it, the model busy {busy:.0%} of the load", flush=True)
    return {"memories": memories, "rounds": rounds, "model_per_s": model,
            "variants": runs}


def report(result: dict[str, Any], argv: list[str]) -> str:
    lines = ["# Ingest at the model's pace", "",
             f"Generated by `python -m benchmarks.performance.ingest {' '.join(argv)}` "
             f"({datetime.now(UTC):%Y-%m-%d %H:%M} UTC); how it is measured: the script's "
             "docstring.", "",
             f"- {result['memories']} memories (LoCoMo then LongMemEval dev turns), "
             f"{result['rounds']} rounds, model {DEFAULT_MODEL}; the model alone between every "
             "two stack runs.",
             "- Machine: " + ", ".join(f"{k} {v}" for k, v in machine_info().items()), "",
             "| variant | settings | memories/s (median of rounds) | each round (the model "
             f"beside it) | ratio to the model beside it (target {TARGET_RATIO}), median | "
             "the model busy, share of the load's time |", "|---|---|---:|---|---:|---:|"]
    model = result["model_per_s"]
    lines.append(f"| the model alone, in process | - | {statistics.median(model):.1f} | "
                 + ", ".join(f"{v:.1f}" for v in model) + " | 1.00 | - |")
    for name, runs in result["variants"].items():
        settings = ", ".join(f"`{k}={x}`" for k, x in VARIANTS[name].items()) or "the defaults"
        lines.append(
            f"| {name} | {settings} | {statistics.median(r['per_s'] for r in runs):.1f} | "
            + ", ".join(f"{r['per_s']:.1f} ({r['model_beside_per_s']:.1f})" for r in runs)
            + f" | {statistics.median(r['ratio'] for r in runs):.2f} | "
            + f"{statistics.median(r['model_busy_share'] for r in runs):.0%} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--variants", type=names, default=",".join(VARIANTS))
    parser.add_argument("--datasets", type=Path, default=DATASETS)
    parser.add_argument("--report-to", type=Path)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    unknown = [v for v in args.variants if v not in VARIANTS]
    if unknown:
        raise SystemExit(f"unknown variants {unknown}; known: {', '.join(VARIANTS)}")
    result = measure(args.variants, args.memories, args.rounds, args.datasets)
    publish(report(result, argv), args.report_to, args.json, result, indent=1)


if __name__ == "__main__":
    main()
