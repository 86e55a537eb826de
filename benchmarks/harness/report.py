"""`python -m benchmarks compare OUTDIR --baseline lexical`: a markdown report of every
configuration in OUTDIR against the baseline, overall and per category, with paired
bootstrap 95% CIs (and a cluster bootstrap where queries come in groups)."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.harness import metrics
from benchmarks.harness.stats import B, cluster_bootstrap, paired_bootstrap

HEADLINE = "recall@10"
# A dataset's own official metrics, shown (and explained) only in its report; every result
# file holds them for every dataset.
OFFICIAL = {"longmemeval": metrics.LONGMEMEVAL_METRICS}
OFFICIAL_NOTE = {"longmemeval": (
    "LongMemEval's official retrieval metrics (xiaowu0162/LongMemEval "
    "src/retrieval/eval_utils.py), per question at turn level, averaged over the scored "
    "questions (abstention questions excluded, as there): recall_any@k = any relevant turn in "
    "the top k, recall_all@k = every relevant turn in the top k, ndcg_any@k = its nDCG (ranks "
    "1 and 2 undiscounted, then 1/log2(rank)). Peers quote recall_any@5, which is easier; the "
    "official scorer also reports recall_all@k and ndcg_any@k. recall@k is the fraction of "
    "relevant turns in the top k. session_recall_any@k / session_recall_all@k are the official "
    "session level (evaluate_retrieval_turn2session): turns mapped to their sessions, the "
    "cut-off widened until the top holds k distinct sessions, then any / every relevant "
    "session above it; the harness asks for 50 hits on this dataset so the cut-off can widen.")}


def load_results(out: Path) -> dict[str, dict]:
    results = {}
    for path in sorted(out.glob("*.json")):
        data = json.loads(path.read_text())
        if "config" in data and "queries" in data:
            results[data["config"]] = data
    return results


def _bound(value: float, clear: bool) -> str:
    """A CI bound to 3 decimals; to 4 when it is clear of zero yet would print as 0.000, so
    that "[+0.000, ..." never stands for an interval that excludes 0."""
    text = f"{value:+.3f}"
    return f"{value:+.4f}" if clear and value != 0 and text in ("+0.000", "-0.000") else text


def fmt_interval(interval) -> str:
    clear = interval.clear_of_zero
    mark = "" if clear else " (n.s.)"
    return (f"{interval.delta:+.3f} [{_bound(interval.low, clear)}, "
            f"{_bound(interval.high, clear)}]{mark}")


def compare(out: Path, baseline: str, metric: str = HEADLINE) -> str:
    results = load_results(out)
    if baseline not in results:
        raise SystemExit(f"{out} has no {baseline}.json (configs: {', '.join(results)})")
    base = results[baseline]
    base_rows = {r["query_id"]: r for r in base["queries"]}
    names = [baseline] + sorted(n for n in results if n != baseline)
    official = OFFICIAL.get(base["dataset"]["name"], ())
    hidden = set(metrics.LONGMEMEVAL_METRICS) - set(official)
    metric_names = [m for m in base["overall"] if m != "n" and m not in hidden]
    metric_names.sort(key=lambda m: (m.startswith("session"), m in official, m))
    grouped = len({r["cluster"] for r in base["queries"]}) < len(base["queries"])
    lines = [
        f"## {base['dataset']['name']} ({base['overall']['n']} queries, "
        f"baseline `{baseline}`)",
        "",
        f"Dataset `{base['dataset']['path']}` (sha256 {base['dataset']['files_sha256'][:12]}), "
        f"model {base['model_id']}, commit {base['git_commit'][:10]}, k={base['k']}. "
        f"Δ = {metric} minus the baseline's, paired bootstrap 95% CI over queries (B={B}); "
        "(n.s.) marks an interval that includes 0."
        + (" The cluster CI resamples whole conversations." if grouped else ""),
        "",
        "| config | " + " | ".join(metric_names) + f" | Δ {metric} [95% CI] | P(Δ≤0) | "
        + ("cluster CI | " if grouped else "") + "p50 ms | p95 ms |",
        "|---|" + "---:|" * (len(metric_names) + 4 + grouped),
    ]
    for name in names:
        data = results[name]
        rows = [r for r in data["queries"] if r["query_id"] in base_rows]
        deltas = [r["metrics"][metric] - base_rows[r["query_id"]]["metrics"][metric]
                  for r in rows]
        paired = paired_bootstrap(deltas)
        cells = [f"{data['overall'][m]:.3f}" if m in data["overall"] else "—"
                 for m in metric_names]  # "—": a result file written before the metric
        ci = "—" if name == baseline else fmt_interval(paired)
        share = "—" if name == baseline else f"{paired.share_not_better:.3f}"
        cluster = ""
        if grouped:
            cluster_ci = cluster_bootstrap(deltas, [r["cluster"] for r in rows])
            cluster = ("—" if name == baseline else fmt_interval(cluster_ci)) + " | "
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {ci} | {share} | {cluster}"
                     f"{data['latency_ms']['p50']:.1f} | {data['latency_ms']['p95']:.1f} |")
    if base["dataset"]["name"] in OFFICIAL_NOTE and official[0] in base["overall"]:
        lines += ["", OFFICIAL_NOTE[base["dataset"]["name"]]]
    categories = sorted(base["per_category"])
    if len(categories) > 1:
        lines += ["", f"Per category, {metric} (n) and Δ vs `{baseline}` [95% CI]:", "",
                  "| config | " + " | ".join(f"{c} (n={base['per_category'][c]['n']})"
                                            for c in categories) + " |",
                  "|---|" + "---|" * len(categories)]
        for name in names:
            data = results[name]
            cells = []
            for c in categories:
                rows = [r for r in data["queries"]
                        if r["category"] == c and r["query_id"] in base_rows]
                value = data["per_category"].get(c, {}).get(metric, 0.0)
                if name == baseline:
                    cells.append(f"{value:.3f}")
                    continue
                interval = paired_bootstrap(
                    [r["metrics"][metric] - base_rows[r["query_id"]]["metrics"][metric]
                     for r in rows])
                cells.append(f"{value:.3f} {fmt_interval(interval)}")
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
    ingest = base.get("ingest", {})
    if "seconds" in ingest:
        lines += ["", f"Ingest: {ingest['memories']} memories in {ingest['namespaces']} "
                  f"namespace(s), {ingest['seconds']:.1f} s ({ingest['memories_per_s']:.1f}/s), "
                  "StoreBatch with index wait."]
    elsewhere: dict[str, list[str]] = {}
    same_load: dict[str, list[str]] = {}
    for name in names:
        commit = results[name]["git_commit"][:10]
        if commit != base["git_commit"][:10] or "renamed_from" in results[name]:
            # --target --skip-ingest: another harness process, the same stored memories
            skipped = results[name].get("ingest", {}).get("skipped")
            (same_load if skipped else elsewhere).setdefault(commit, []).append(name)
    if elsewhere:
        lines += ["", "Run separately, over a fresh load of the same dataset files (latency "
                  "from that run, not comparable with this one's): " + "; ".join(
                      f"commit {c}: " + ", ".join(
                          f"{x} (model {results[x]['model_id']})" for x in n)
                      for c, n in elsewhere.items()) + "."]
    if same_load:
        lines += ["", "Run by a second harness process against the same stack and load "
                  "(`--target --skip-ingest`), at another commit: "
                  + "; ".join(f"commit {c}: {', '.join(n)}" for c, n in same_load.items())
                  + "."]
    troubled = [f"{name}: {sum('error' in r for r in data['queries'])} failed, "
                f"{sum(r['degraded'] for r in data['queries'])} degraded"
                for name, data in results.items() if any(r["degraded"] for r in data["queries"])]
    if troubled:
        lines += ["", "Queries answered degraded (a leg late or failed) or failed (counted as "
                  "misses): " + "; ".join(troubled) + "."]
    return "\n".join(lines) + "\n"


def summary(out: Path) -> dict:
    """Every configuration in OUTDIR without its per-query rows: settings, dataset, commit,
    overall and per-category metrics, latency, ingest (small enough to commit)."""
    def unanswered(rows: list[dict]) -> dict:
        tops = [r["scores"][0] for r in rows if r.get("scores")]
        return {"n": len(rows), "answered_empty": sum(not r["ranked_ids"] for r in rows),
                "mean_top_score": sum(tops) / len(tops) if tops else None}

    return {name: {k: (unanswered(v) if k == "unanswerable" else v)
                   for k, v in data.items() if k != "queries"}
            for name, data in load_results(out).items()}
