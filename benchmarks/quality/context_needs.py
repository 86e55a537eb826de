"""What a task needs against what the legs give: Context and empty answers on the agent-task
set (issue 67, items 1 and 2).

  python -m benchmarks context-needs        (pools dumped first where missing)
  python -m benchmarks.quality.context_needs --pools P1,P2 [--json-to F] [--report-to F]

Each agent-task pool (agent_tasks_dev; agent_tasks_test, the frozen families, reported apart
and never fitted on) is replayed with the shipped ranking at Context's k (DEFAULT_CONTEXT_K),
its labels being every memory a task needs. Per pool:

1. The ranking's ceiling: per k, the share of each task's needed memories among the first k
   hits and the share of those k hits that are needed. Every Context rule here packs a prefix
   of the ranking, so no rule keeps more at a given precision than some k does.
2. Context as served: each hit's estimate by the deployment's own relevance model (not
   refitted), packed by the shipped rule (estimate at least the floor, the gateway's `pack`):
   needed memories kept, precision, items; and the same with the estimate refitted on the task
   labels (the issue's "second estimate", fitted on what tasks need): on the dev split out of
   fold by person (benchmarks/quality/relevance.py `out_of_fold` over that pool alone); on the
   test split fitted on the whole dev split, never on the test families.
3. The estimates themselves: quartiles for the needed hits and for the others.
4. Empty when nothing fits: per floor, the share of prompts about nothing stored whose best hit
   is below it (Recall abstains and Context is empty: both cut at the floor), by kind (the
   set's own prompts about nothing stored; each task prompt asked in another person's
   namespace, `foreign`; and of an encyclopaedia's paragraphs, `elsewhere`), against the share
   of task prompts it empties.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.harness.runner import git_commit
from benchmarks.harness.script import pools_parser
from benchmarks.quality.context_curve import contents, packed_ids
from benchmarks.quality.relevance import (
    FEATURES,
    Rows,
    fit_on,
    out_of_fold,
    predict,
    served_scores,
    split_rows,
)
from benchmarks.replay.cross_validation import Setting
from benchmarks.replay.pool import rounded, write_reports
from recallmesh.embedding_models.calibration import ScoreCalibration, calibration_for
from recallmesh.embedding_models.manifest import ModelManifest
from recallmesh.gateway.context_block import TokenCounter
from recallmesh.policy import DEFAULT_MIN_SCORE, RecallPolicy
from recallmesh.wire.validation import DEFAULT_CONTEXT_K

DEV, TEST = "agent_tasks_dev", "agent_tasks_test"
DEPTHS = (1, 2, 3, 5, 10, 20)
FLOORS = (DEFAULT_MIN_SCORE, 0.1, 0.15, 0.2, 0.25, 0.3)
NOTHING = ("unanswerable", "foreign", "elsewhere")


def shipped_estimates(rows: Rows, calibration: ScoreCalibration) -> np.ndarray:
    """Each hit's estimate by the deployment's relevance model, as the gateway serves it."""
    raw = np.array([calibration.relevance.probability(dict(zip(FEATURES, x, strict=True)))
                    for x in rows.x])
    return served_scores(rows, raw)


def per_question(rows: Rows, values: np.ndarray) -> list[list[float]]:
    return [values[rows.question == i].tolist() for i in range(len(rows.questions))]


def ceiling(rows: Rows) -> list[dict[str, float]]:
    tasks = [q for q in rows.questions if q["answerable"]]
    out = []
    for k in DEPTHS:
        kept = [len(set(q["ranked"][:k]) & set(q["relevant"])) / len(q["relevant"])
                for q in tasks]
        precision = [len(set(q["ranked"][:k]) & set(q["relevant"])) / max(len(q["ranked"][:k]), 1)
                     for q in tasks]
        out.append({"k": k, "kept": float(np.mean(kept)), "precision": float(np.mean(precision))})
    return out


def context(rows: Rows, estimates: list[list[float]], text: dict[str, str],
            counter: TokenCounter) -> dict[str, Any]:
    """The shipped Context rule (estimate at least the floor, then `pack`) under `estimates`."""
    kept, items, needed = [], [], []
    empty: dict[str, list[bool]] = {kind: [] for kind in NOTHING}
    for q, p in zip(rows.questions, estimates, strict=True):
        n = sum(1 for v in p if v >= DEFAULT_MIN_SCORE)
        packed = packed_ids(q["ranked"], p, n, text, counter)
        if q["answerable"]:
            gold = set(q["relevant"])
            kept.append(len(gold.intersection(packed)) / len(gold))
            items.append(len(packed))
            needed.append(len(gold.intersection(packed)))
        else:
            empty[q["kind"]].append(not packed)
    return {"kept": float(np.mean(kept)), "items": float(np.mean(items)),
            "precision": float(np.sum(needed) / np.sum(items)) if np.sum(items) else None,
            "empty": {k: float(np.mean(v)) for k, v in empty.items() if v}}


def quartiles(rows: Rows, estimates: list[list[float]]) -> dict[str, list[float]]:
    needed, others = [], []
    for q, p in zip(rows.questions, estimates, strict=True):
        if q["answerable"]:
            gold = set(q["relevant"])
            for memory_id, v in zip(q["ranked"], p, strict=False):
                (needed if memory_id in gold else others).append(v)
    return {name: [float(x) for x in np.percentile(v, [25, 50, 75, 90])]
            for name, v in (("needed", needed), ("others", others)) if v}


def floors(rows: Rows, estimates: list[list[float]]) -> list[dict[str, Any]]:
    best = [max(p, default=0.0) for p in estimates]
    out = []
    for t in FLOORS:
        tasks = [b < t for q, b in zip(rows.questions, best, strict=True) if q["answerable"]]
        empty = {kind: [b < t for q, b in zip(rows.questions, best, strict=True)
                        if not q["answerable"] and q["kind"] == kind] for kind in NOTHING}
        out.append({"floor": t, "tasks_emptied": float(np.mean(tasks)),
                    "empty": {k: float(np.mean(v)) for k, v in empty.items() if v}})
    return out


def run(pool_paths: list[Path], json_to: Path | None, report_to: Path | None) -> None:
    manifest = ModelManifest.load()
    calibration = calibration_for(manifest.model_id)
    if calibration is None:
        raise SystemExit(f"{manifest.model_id} has no calibration: its scores are no estimates")
    shipped = Setting.of(RecallPolicy.from_env())
    counter = TokenCounter.load()
    lines = ["# What a task needs: Context and empty answers on the agent-task set", "",
             "Generated by `python -m benchmarks context-needs` (benchmarks/quality/"
             "context_needs.py: its docstring says what is replayed). Ranking "
             f"`{shipped.label}`, k {DEFAULT_CONTEXT_K}, floor {DEFAULT_MIN_SCORE}, model "
             f"{manifest.model_id}.", ""]
    report: dict[str, Any] = {"git_commit": git_commit(), "timestamp": datetime.now().isoformat(),
                              "ranking": shipped.label, "model": manifest.model_id, "pools": {}}
    pools = [json.loads(path.read_text()) for path in pool_paths]
    splits = {pool["dataset"]: split_rows(pool, shipped, calibration, depth=DEFAULT_CONTEXT_K)
              for pool in pools}
    for pool in pools:
        rows = splits[pool["dataset"]]
        served = per_question(rows, shipped_estimates(rows, calibration))
        if rows.name == TEST and DEV in splits:  # fitted on dev, never on the test families
            dev = splits[DEV]
            beta = fit_on([dev], {dev.name: np.ones(len(dev.y), bool)})
            refitted = per_question(rows, served_scores(rows, predict(beta, rows.x)))
        else:
            refitted = per_question(rows, out_of_fold([rows])[rows.name])
        text = contents(pool)
        tasks = sum(1 for q in rows.questions if q["answerable"])
        result = {"tasks": tasks, "ceiling": ceiling(rows),
                  "served": context(rows, served, text, counter),
                  "refitted": context(rows, refitted, text, counter),
                  "estimates": quartiles(rows, served), "floors": floors(rows, served)}
        report["pools"][rows.name] = result
        lines += [f"## {rows.name}", "",
                  f"{tasks} task prompts; prompts about nothing stored: "
                  + ", ".join(f"{k} {sum(1 for q in rows.questions if q.get('kind') == k)}"
                              for k in NOTHING) + ".", "",
                  "The ranking's ceiling (any rule that packs a prefix):", "",
                  "| first k | needed memories kept | share of the k needed |", "|---:|---:|---:|",
                  *(f"| {c['k']} | {c['kept']:.3f} | {c['precision']:.3f} |"
                    for c in result["ceiling"]), "",
                  "Context by the shipped rule (estimate at least the floor):", "",
                  "| estimate | kept | precision | items | empty when nothing is stored |",
                  "|---|---:|---:|---:|---|"]
        refit = ("refitted on the dev split's task labels" if rows.name == TEST and DEV in splits
                 else "refitted on the task labels, out of fold")
        for name, label in (("served", "the deployment's"), ("refitted", refit)):
            c = result[name]
            precision = f"{c['precision']:.3f}" if c["precision"] is not None else "-"
            lines.append(f"| {label} | {c['kept']:.3f} | {precision} | {c['items']:.2f} | "
                         + ", ".join(f"{k} {v:.2f}" for k, v in c["empty"].items()) + " |")
        e = result["estimates"]
        lines += ["", "The deployment's estimates of the hits (quartiles, 90th percentile): "
                  + "; ".join(f"{k} " + " / ".join(f"{v:.3f}" for v in e[k]) for k in e) + ".",
                  "", "Empty when nothing fits, by floor (Recall abstains and Context is empty "
                  "below it):", "",
                  "| floor | task prompts emptied | nothing stored: empty |", "|---:|---:|---|"]
        lines += [f"| {f['floor']:g} | {f['tasks_emptied']:.3f} | "
                  + ", ".join(f"{k} {v:.2f}" for k, v in f["empty"].items()) + " |"
                  for f in result["floors"]]
        lines.append("")
    write_reports(rounded(report), lines, json_to, report_to)


def main(argv: list[str] | None = None) -> None:
    args = pools_parser("python -m benchmarks.quality.context_needs", __doc__).parse_args(argv)
    run(args.pools, args.json_to, args.report_to)


if __name__ == "__main__":
    main()
