"""Recall on what agents send: the agent-task set's task prompts (issue 66), served.

  python -m benchmarks agent-tasks [--folders agent_tasks_dev,agent_tasks_test]
      [--configs default,...] [--peers peer_lancedb_hybrid,peer_lancedb_vector]
      [--priors 0,100,1000] [--out benchmarks/results/agent-tasks]
      [--report-to benchmarks/reports/agent-tasks.md]

Each folder (benchmarks/datasets/agent_tasks_*: people, each a namespace of memories over
topics; task prompts labelled with every memory the task needs; prompts about nothing stored)
is run by the harness (`python -m benchmarks run`: a stack of its own, the memories through
StoreBatch, every prompt through Recall per configuration; the peers over the same stored
texts and vectors) once per lexical language prior (RECALLMESH_LEXICAL_LANGUAGE_PRIOR in the
stack's environment, docs/decisions/0021-words-of-the-language.md; the peers only with 0).

Reported per folder, for each configuration and prior:
  - first: the share of prompts whose first hit is a memory the task needs (the task's topic
    first);
  - recall@5: the share of the task's memories among the first 5, averaged over prompts;
  - empty: the share of prompts about nothing stored that got no hit at all;
  - each against the shipped default (prior 0) with a cluster bootstrap CI, clusters being
    people (a person's namespace is what the next user's data resembles), and the count of
    people whose mean goes up / down;
  - first by language and by prompt form.
The test folder's families (people, phrasings) are never tuned on: they are reported apart.
"""

from __future__ import annotations

import argparse
import json
import os
from collections import defaultdict
from pathlib import Path
from typing import Any

from benchmarks.harness.data import OWN_SETS
from benchmarks.harness.runner import run
from benchmarks.harness.script import log, machine_info, names, publish
from benchmarks.harness.stats import cluster_bootstrap

FOLDERS = ("agent_tasks_dev", "agent_tasks_test")
CONFIGS = ("default", "vector", "hybrid_rrf", "calibrated_lw0.3", "calibrated_lw0.5",
           "default_lw0.7")
PEERS = ("peer_lancedb_hybrid", "peer_lancedb_vector")
BASE = "default"
PRIOR_ENV = "RECALLMESH_LEXICAL_LANGUAGE_PRIOR"


def served(folder: str, configs: list[str], peers: list[str], priors: list[float],
           out: Path, reuse: bool = False) -> dict[str, dict[str, Any]]:
    """name -> result file of every run (name: config, or config@prior for a prior > 0);
    `reuse`: a run whose result files are all in `out` already is read, not run again."""
    results: dict[str, dict[str, Any]] = {}
    for prior in priors:
        where = out / folder / f"prior-{prior:g}"
        names_here = configs + (peers if prior == 0 else [])
        if reuse and all((where / f"{n}.json").is_file() for n in names_here):
            for n in names_here:
                result = json.loads((where / f"{n}.json").read_text())
                results[n + ("" if prior == 0 else f"@{prior:g}")] = result
            continue
        previous = os.environ.get(PRIOR_ENV)
        os.environ[PRIOR_ENV] = f"{prior:g}"
        try:
            log(f"{folder}, language prior {prior:g}: {', '.join(names_here)}")
            paths = run(OWN_SETS / folder, names_here, where, None, None, unanswerable=True)
        finally:
            if previous is None:
                os.environ.pop(PRIOR_ENV, None)
            else:
                os.environ[PRIOR_ENV] = previous
        for path in paths:
            result = json.loads(path.read_text())
            name = result["config"] + ("" if prior == 0 else f"@{prior:g}")
            results[name] = result
    return results


def first(row: dict[str, Any]) -> float:
    return 1.0 if row["metrics"]["mrr"] == 1.0 else 0.0


def recall5(row: dict[str, Any]) -> float:
    return float(row["metrics"]["recall@5"])


def empty_share(result: dict[str, Any]) -> float | None:
    rows = result.get("unanswerable")
    if not rows:
        return None
    return sum(1 for r in rows if not r.get("ranked_ids") and "error" not in r) / len(rows)


def compare(result: dict[str, Any], base: dict[str, Any], metric: Any) -> str:
    ours = {r["query_id"]: r for r in result["queries"]}
    theirs = {r["query_id"]: r for r in base["queries"]}
    shared = sorted(set(ours) & set(theirs))
    deltas = [metric(ours[q]) - metric(theirs[q]) for q in shared]
    clusters = [ours[q]["cluster"] for q in shared]
    ci = cluster_bootstrap(deltas, clusters)
    by: dict[str, list[float]] = defaultdict(list)
    for d, c in zip(deltas, clusters, strict=True):
        by[c].append(d)
    up = sum(1 for v in by.values() if sum(v) > 0)
    down = sum(1 for v in by.values() if sum(v) < 0)
    return f"{ci.delta:+.3f} [{ci.low:+.3f}, {ci.high:+.3f}] {up}↑ {down}↓"


def attributes(folder: str) -> dict[str, dict[str, Any]]:
    path = OWN_SETS / folder / "queries.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    return {str(r["query_id"]): r for r in rows}


def folder_report(folder: str, results: dict[str, dict[str, Any]]) -> list[str]:
    base = results[BASE]
    people = len({r["cluster"] for r in base["queries"]})
    lines = [f"## {folder}", "",
             f"{len(base['queries'])} task prompts over {people} people, "
             f"{len(base.get('unanswerable') or [])} prompts about nothing stored, "
             f"{base['dataset']['memories']} memories.", "",
             "| ranker | first | Δ first vs default [person CI] | recall@5 | Δ recall@5 | "
             "empty when nothing is stored | p50 ms |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for name, result in results.items():
        rows = result["queries"]
        empty = empty_share(result)
        lines.append(
            f"| `{name}` | {sum(map(first, rows)) / len(rows):.3f} | "
            f"{'' if name == BASE else compare(result, base, first)} | "
            f"{sum(map(recall5, rows)) / len(rows):.3f} | "
            f"{'' if name == BASE else compare(result, base, recall5)} | "
            f"{'-' if empty is None else f'{empty:.3f}'} | "
            f"{result['latency_ms']['p50']:.1f} |")
    info = attributes(folder)
    for key in ("language", "form"):
        groups = sorted({str(info.get(r["query_id"], {}).get(key, "?")) for r in base["queries"]})
        lines += ["", f"First hit right, by {key}:", "",
                  "| ranker | " + " | ".join(groups) + " |",
                  "|---|" + "---:|" * len(groups)]
        for name, result in results.items():
            cells = []
            for group in groups:
                rows = [r for r in result["queries"]
                        if str(info.get(r["query_id"], {}).get(key, "?")) == group]
                cells.append(f"{sum(map(first, rows)) / len(rows):.2f} ({len(rows)})"
                             if rows else "-")
            lines.append(f"| `{name}` | " + " | ".join(cells) + " |")
    return lines + [""]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--folders", type=names, default=",".join(FOLDERS))
    parser.add_argument("--configs", type=names, default=",".join(CONFIGS))
    parser.add_argument("--peers", type=names, default=",".join(PEERS))
    parser.add_argument("--priors", type=lambda raw: [float(x) for x in names(raw)],
                        default=[0.0])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/agent-tasks"))
    parser.add_argument("--reuse", action="store_true",
                        help="read the result files a run left in --out instead of running it")
    parser.add_argument("--report-to", type=Path)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    priors = sorted(set([0.0, *args.priors]))
    lines = ["# Recall on agent tasks (issue 66)", "",
             "Generated by `python -m benchmarks agent-tasks "
             f"--folders {','.join(args.folders)} --configs {','.join(args.configs)} "
             f"--peers {','.join(args.peers)} --priors {','.join(f'{p:g}' for p in priors)}`; "
             "what is run and measured: benchmarks/quality/agent_tasks.py's docstring. "
             "`name@m`: the configuration with the lexical leg's language prior m "
             "(docs/decisions/0021-words-of-the-language.md).", "",
             "- Machine: " + ", ".join(f"{k} {v}" for k, v in machine_info().items()), ""]
    summary: dict[str, Any] = {}
    for folder in args.folders:
        results = served(folder, list(args.configs), list(args.peers), priors, args.out,
                         args.reuse)
        lines += folder_report(folder, results)
        summary[folder] = {name: {
            "first": sum(map(first, r["queries"])) / len(r["queries"]),
            "recall@5": sum(map(recall5, r["queries"])) / len(r["queries"]),
            "empty": empty_share(r)} for name, r in results.items()}
    publish("\n".join(lines), args.report_to, args.json, summary)


if __name__ == "__main__":
    main()
