"""The headline: `default` against the baseline, `hybrid_rrf` and the best peer, per dataset,
per question type, with the issue's targets checked.

  python -m benchmarks.quality.headline [--results benchmarks/results] \
      [--report-to benchmarks/reports/headline.md] [--json-to benchmarks/reports/headline.json]

Reads the per-query results `python -m benchmarks retrieval --all` leaves in
benchmarks/results/<dataset>/ (run it
first). For each dataset: the best peer is the peer configuration (peer_*) with the highest
headline metric in that run; every Δ is `default` minus the other configuration, paired
bootstrap 95% CI over queries (B=2000, fixed seed; LoCoMo also by conversation); latency is
each configuration's Recall p50 / p95 through the gateway in the same run.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from benchmarks.harness.report import fmt_interval, load_results
from benchmarks.harness.script import publish
from benchmarks.harness.stats import cluster_bootstrap, paired_bootstrap

# Headline metric per dataset folder (others: recall@10), in report order.
DATASETS = {"locomo": "recall@10", "scifact": "ndcg@10", "longmemeval": "recall@10"}
# The targets: (dataset, what, threshold).
TARGETS = [("locomo", "recall@10", None, 0.70), ("locomo", "recall@10", "multi-hop", 0.45),
           ("longmemeval", "recall@10", None, 0.92),
           ("longmemeval", "session_recall_any@5", None, 0.97),
           ("scifact", "ndcg@10", None, 0.74)]
P95_LIMIT = 1.25  # default's p95 at most 25% above hybrid_rrf's, same run
TARGET = "default"


def _delta(a: dict, b: dict, metric: str, category: str | None = None) -> dict:
    rows_b = {r["query_id"]: r for r in b["queries"]}
    rows = [r for r in a["queries"] if r["query_id"] in rows_b
            and (category is None or r["category"] == category)]
    deltas = [r["metrics"][metric] - rows_b[r["query_id"]]["metrics"][metric] for r in rows]
    paired = paired_bootstrap(deltas)
    out = {"delta": paired.delta, "low": paired.low, "high": paired.high,
           "clear": paired.clear_of_zero, "text": fmt_interval(paired), "n": len(deltas)}
    clusters = [r["cluster"] for r in rows]
    if len(set(clusters)) < len(clusters):
        cluster = cluster_bootstrap(deltas, clusters)
        out["cluster_text"] = fmt_interval(cluster)
        out["cluster_clear"] = cluster.clear_of_zero
    return out


def headline(results_dir: Path) -> dict:
    report: dict = {"datasets": {}, "targets": []}
    folders = sorted(p for p in results_dir.iterdir() if p.is_dir()) if results_dir.is_dir() else []
    folders.sort(key=lambda p: list(DATASETS).index(p.name) if p.name in DATASETS else 99)
    for folder in folders:
        name, metric = folder.name, DATASETS.get(folder.name, "recall@10")
        results = load_results(folder)
        if TARGET not in results:
            continue
        peers = {n: r for n, r in results.items() if n.startswith("peer_")}
        best_peer = max(peers, key=lambda n: peers[n]["overall"][metric]) if peers else None
        others = [n for n in ("lexical", "hybrid_rrf", best_peer) if n and n in results]
        base = results[TARGET]
        entry = {
            "metric": metric, "queries": base["overall"]["n"], "commit": base["git_commit"],
            "best_peer": best_peer,
            "values": {n: results[n]["overall"][metric] for n in [TARGET, *others]},
            "latency_ms": {n: results[n]["latency_ms"] for n in [TARGET, *others]},
            "overall": {n: _delta(base, results[n], metric) for n in others},
            "per_category": {
                c: {"n": base["per_category"][c]["n"],
                    "values": {n: results[n]["per_category"].get(c, {}).get(metric)
                               for n in [TARGET, *others]},
                    "delta": {n: _delta(base, results[n], metric, c) for n in others}}
                for c in sorted(base["per_category"])},
        }
        if "session_recall_any@5" in base["overall"]:
            entry["session_recall_any@5"] = {
                n: results[n]["overall"].get("session_recall_any@5") for n in [TARGET, *others]}
            if best_peer and "session_recall_any@5" in results[best_peer]["overall"]:
                entry["session_delta_vs_best_peer"] = _delta(
                    base, results[best_peer], "session_recall_any@5")
        if "hybrid_rrf" in results:
            entry["p95_ratio_vs_hybrid_rrf"] = (base["latency_ms"]["p95"]
                                                / results["hybrid_rrf"]["latency_ms"]["p95"])
        report["datasets"][name] = entry
    for name, metric, category, threshold in TARGETS:
        entry = report["datasets"].get(name)
        if entry is None:
            continue
        if category is None:
            value = (entry["values"][TARGET] if metric == entry["metric"]
                     else entry.get("session_recall_any@5", {}).get(TARGET))
        else:
            value = entry["per_category"].get(category, {}).get("values", {}).get(TARGET)
        report["targets"].append({"dataset": name, "metric": metric, "category": category,
                                  "target": threshold, "value": value,
                                  "met": value is not None and value >= threshold})
    return report


SOURCE = ("`make bench NAME=headline` (`python -m benchmarks.quality.headline`, run by "
          "`make bench NAME=retrieval ARGS=--all`) from the per-query results of the runs in "
          "benchmarks/reports/retrieval.md")


def markdown(report: dict, source: str = SOURCE) -> str:
    out = ["# Headline: `default` against the baseline, `hybrid_rrf` and the best peer", "",
           f"Generated by {source}; do "
           "not edit by hand. Δ = `default` minus the other configuration, paired bootstrap 95% "
           "CI over queries (B=2000); (n.s.) marks an interval that includes 0. The best peer is "
           "the peer with the highest headline metric in that dataset's run. Latency: Recall "
           "p50 / p95 through the gateway, same run.", "", "## Targets (issue 7)", "",
           "| dataset | metric | target | `default` | met |", "|---|---|---:|---:|---|"]
    for t in report["targets"]:
        what = t["metric"] + (f" ({t['category']})" if t["category"] else "")
        value = "—" if t["value"] is None else f"{t['value']:.3f}"
        out.append(f"| {t['dataset']} | {what} | {t['target']:.2f} | {value} | "
                   f"{'yes' if t['met'] else 'no'} |")
    out += ["", "## Overall", "",
            "| dataset (metric, queries) | `default` | vs | their value | Δ default − them "
            "[95% CI] | cluster CI | p50 / p95 ms (them) |",
            "|---|---:|---|---:|---:|---:|---:|"]
    for name, e in report["datasets"].items():
        for other, d in e["overall"].items():
            lat = e["latency_ms"][other]
            label = f"{other} (best peer)" if other == e["best_peer"] else other
            out.append(f"| {name} ({e['metric']}, {e['queries']}) | "
                       f"{e['values']['default']:.3f} | {label} | {e['values'][other]:.3f} | "
                       f"{d['text']} | {d.get('cluster_text', '—')} | "
                       f"{lat['p50']:.1f} / {lat['p95']:.1f} |")
    out += ["", "`default` latency and its p95 against `hybrid_rrf`'s (limit: "
            f"{P95_LIMIT:.2f}x):", "", "| dataset | `default` p50 / p95 ms | `hybrid_rrf` p95 ms "
            "| ratio | within |", "|---|---:|---:|---:|---|"]
    for name, e in report["datasets"].items():
        if "p95_ratio_vs_hybrid_rrf" not in e:
            continue
        lat, ratio = e["latency_ms"]["default"], e["p95_ratio_vs_hybrid_rrf"]
        out.append(f"| {name} | {lat['p50']:.1f} / {lat['p95']:.1f} | "
                   f"{e['latency_ms']['hybrid_rrf']['p95']:.1f} | {ratio:.2f}x | "
                   f"{'yes' if ratio <= P95_LIMIT else 'no'} |")
    for name, e in report["datasets"].items():
        if "session_recall_any@5" in e:
            values = ", ".join(f"{n} {v:.3f}" for n, v in e["session_recall_any@5"].items()
                               if v is not None)
            delta = e.get("session_delta_vs_best_peer", {}).get("text", "—")
            out += ["", f"{name} session-level recall_any@5: {values}; Δ default − best peer "
                    f"{delta}."]
    for name, e in report["datasets"].items():
        others = list(e["overall"])
        out += ["", f"## {name}: per question type ({e['metric']}; Δ default − them [95% CI])",
                "", "| type (n) | `default` | " + " | ".join(others) + " |",
                "|---|---:|" + "---|" * len(others)]
        for c, row in e["per_category"].items():
            cells = [f"{row['values'][o]:.3f}  {row['delta'][o]['text']}"
                     if row["values"][o] is not None else "—" for o in others]
            out.append(f"| {c} ({row['n']}) | {row['values']['default']:.3f} | "
                       + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.quality.headline",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", type=Path, default=Path("benchmarks/results"))
    parser.add_argument("--report-to", type=Path, default=None)
    parser.add_argument("--json-to", type=Path, default=None)
    parser.add_argument("--source", default=SOURCE, help="what the report says it comes from")
    args = parser.parse_args(argv)
    report = headline(args.results)
    if not report["datasets"]:
        raise SystemExit(f"no dataset results with a `{TARGET}` configuration under "
                         f"{args.results} (run make bench NAME=retrieval ARGS=--all first)")
    publish(markdown(report, args.source), args.report_to, args.json_to, report, indent=1,
            end="")


if __name__ == "__main__":
    main()
