"""Two pools of one set, dumped by two revisions of the stack, served alike and compared by
cluster: what a change to a leg (issue 56: the lexical leg's corrections of misspelt terms)
does to the shipped default's answers.

  python -m benchmarks.replay.pool_compare --base OLD/decision_pool.json \
      --new benchmarks/results/locomo/decision_pool.json [--report-to FILE.md] [--json-to FILE]

Each pool (benchmarks/replay/pool.py; dumped with --foreign and --unanswerable as
benchmarks/registry.py `evidence_pools` does) is served under the shipped ranking and relevance
floor with the gateway's own code (benchmarks/replay/cross_validation.py `served_ranking`, then
stages.above_floor with RecallPolicy's min_score: an answer under the floor is empty). Per
answerable question present in both, recall@10 and nDCG@10 with the floor (an empty answer
scores 0) and without it; the deltas (new minus base) with a cluster bootstrap (the set's
clusters: LoCoMo's conversations) and the count of clusters up and down; the questions whose
recall@10 with the floor changed, with their best hit's relevance estimate on each side. For
the questions nothing answers (the set's unanswerable ones, and each question asked in another
namespace), the share answered with nothing, on each side.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.harness import metrics
from benchmarks.harness.data import dataset_path, load
from benchmarks.harness.stats import cluster_bootstrap
from benchmarks.replay.cross_validation import Setting, served_ranking
from benchmarks.replay.pool import K
from recallmesh.embedding_models.calibration import ScoreCalibration, calibration_for
from recallmesh.embedding_models.manifest import ModelManifest
from recallmesh.gateway import stages
from recallmesh.policy import RecallPolicy

MEASURES = ("recall@10", "ndcg@10")


def served(pool: dict[str, Any], calibration: ScoreCalibration, min_score: float
           ) -> dict[str, dict[str, Any]]:
    """query id (with the namespace it was asked in) -> its kind, cluster and metrics."""
    ds = load(dataset_path(pool["dataset"]), unanswerable=True)
    by_id = {q.query_id: q for q in [*ds.queries, *ds.unanswerable]}
    created = {m.corpus_id: m.created_at for ms in ds.scopes.values() for m in ms}
    shipped = Setting.of(RecallPolicy.from_env())
    out: dict[str, dict[str, Any]] = {}
    for kind in ("queries", "unanswerable", "foreign"):
        for q in pool.get(kind, []):
            query = by_id.get(q["query_id"])
            if query is None:
                continue
            ranked, _ = served_ranking(pool, q, query, shipped, created, calibration)
            top = ranked[:K]
            kept = stages.above_floor(top, min_score)
            row: dict[str, Any] = {"kind": kind, "cluster": query.cluster or q["query_id"],
                                   "empty": not kept, "text": query.text,
                                   "best": max((c.score for c in top), default=0.0)}
            if kind == "queries":
                ids = [c.memory_id for c in top]
                floor_ids = [c.memory_id for c in kept]
                row["floor"] = metrics.per_query(floor_ids, q["relevant_ids"])
                row["no_floor"] = metrics.per_query(ids, q["relevant_ids"])
            out[f"{kind}:{q['query_id']}:{q.get('scope', '')}"] = row
    return out


def compare(base: dict[str, dict[str, Any]], new: dict[str, dict[str, Any]]) -> dict[str, Any]:
    shared = sorted(k for k in base if k in new and base[k]["kind"] == "queries")
    clusters = [base[k]["cluster"] for k in shared]
    result: dict[str, Any] = {"questions": len(shared), "clusters": len(set(clusters))}
    for cut in ("floor", "no_floor"):
        for measure in MEASURES:
            a = np.array([base[k][cut][measure] for k in shared])
            b = np.array([new[k][cut][measure] for k in shared])
            d = b - a
            interval = cluster_bootstrap(d.tolist(), clusters)
            per_cluster = {c: float(d[[i for i, x in enumerate(clusters) if x == c]].mean())
                           for c in set(clusters)}
            result[f"{cut}:{measure}"] = {
                "base": float(a.mean()), "new": float(b.mean()),
                "delta": [interval.delta, interval.low, interval.high],
                "clusters_up": sum(v > 0 for v in per_cluster.values()),
                "clusters_down": sum(v < 0 for v in per_cluster.values()),
                "questions_up": int((d > 0).sum()), "questions_down": int((d < 0).sum())}
    result["changed"] = [
        {"question": k.split(":", 1)[1].rsplit(":", 1)[0], "text": base[k]["text"],
         "recall@10": [base[k]["floor"]["recall@10"], new[k]["floor"]["recall@10"]],
         "best_estimate": [base[k]["best"], new[k]["best"]]}
        for k in shared if base[k]["floor"]["recall@10"] != new[k]["floor"]["recall@10"]]
    for kind in ("unanswerable", "foreign"):
        keys = [k for k in base if k in new and base[k]["kind"] == kind]
        if keys:
            result[f"empty:{kind}"] = {
                "questions": len(keys),
                "base": float(np.mean([base[k]["empty"] for k in keys])),
                "new": float(np.mean([new[k]["empty"] for k in keys]))}
    return result


def report(name: str, r: dict[str, Any], argv: list[str], base: dict[str, Any],
           new: dict[str, Any]) -> str:
    lines = [
        f"# {name}: two pools served alike, compared by cluster",
        "",
        f"Generated by `python -m benchmarks.replay.pool_compare {' '.join(argv)}`; how: the "
        f"script's docstring. Base pool: commit {base.get('git_commit', '?')}, "
        f"{base.get('timestamp', '?')}; new pool: commit {new.get('git_commit', '?')}, "
        f"{new.get('timestamp', '?')}. {r['questions']} answerable questions in "
        f"{r['clusters']} clusters; Δ = new − base with its 95% cluster-bootstrap interval.",
        "",
        "| measure | base | new | Δ [95% CI] | clusters up / down | questions up / down |",
        "|---|---:|---:|---|---:|---:|",
    ]
    for cut in ("floor", "no_floor"):
        for measure in MEASURES:
            m = r[f"{cut}:{measure}"]
            d, lo, hi = m["delta"]
            label = f"{measure}{' (floor)' if cut == 'floor' else ', no floor'}"
            lines.append(f"| {label} | {m['base']:.4f} | {m['new']:.4f} | {d:+.4f} "
                         f"[{lo:+.4f}, {hi:+.4f}] | {m['clusters_up']} / {m['clusters_down']} "
                         f"| {m['questions_up']} / {m['questions_down']} |")
    if r["changed"]:
        lines += ["", "Answerable questions whose recall@10 (floor) changed: its best hit's "
                  "relevance estimate, base → new.", ""]
        for c in r["changed"]:
            lines.append(f"- {c['question']} ({c['text'][:80]}): recall@10 "
                         f"{c['recall@10'][0]:g} → {c['recall@10'][1]:g}, best estimate "
                         f"{c['best_estimate'][0]:.3f} → {c['best_estimate'][1]:.3f}")
    for kind in ("unanswerable", "foreign"):
        if f"empty:{kind}" in r:
            e = r[f"empty:{kind}"]
            lines.append("")
            lines.append(f"Questions nothing answers ({kind}, {e['questions']}): answered with "
                         f"nothing {e['base']:.3f} (base), {e['new']:.3f} (new).")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    import sys

    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True)
    parser.add_argument("--new", type=Path, required=True)
    parser.add_argument("--report-to", type=Path)
    parser.add_argument("--json-to", type=Path)
    args = parser.parse_args(argv)
    manifest = ModelManifest.load()
    calibration = calibration_for(manifest.model_id)
    if calibration is None:
        raise SystemExit(f"{manifest.model_id} has no calibration to serve the pools with")
    min_score = RecallPolicy.from_env().min_score
    base, new = json.loads(args.base.read_text()), json.loads(args.new.read_text())
    result = compare(served(base, calibration, min_score), served(new, calibration, min_score))
    text = report(base["dataset"], result, argv, base, new)
    print(text, end="")
    if args.report_to:
        args.report_to.write_text(text)
    if args.json_to:
        args.json_to.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
