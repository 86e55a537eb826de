"""The model race's Pareto picture: recall against one-client p95 latency, one point per model
and system.

  python -m benchmarks.quality.pareto --summary benchmarks/reports/models-locomo.json
      --speed benchmarks/results/speed.json --png benchmarks/reports/models-pareto.png
      [--metric recall@10] [--table-to FILE.md]

Quality comes from the race's paired summary of one dev split (`python -m benchmarks compare
... --summary-to`): each configuration `<config>` (the first model) or `<config>@<label>`
(another model, benchmarks/quality/model_pair.py). Latency comes from the speed benchmark
(benchmarks/performance/speed.py: every system of a model in one run, 5,000 memories, one
client, the query embedded by the model on every recall), matched by model and system. A
point is drawn where both exist; the frontier joins the points no other point beats on both
axes.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

# speed.py's system names for the race's configurations (the served runs' names)
SPEED_NAMES = {"default": "default", "vector": "vector", "peer_lancedb_hybrid":
               "peer_lancedb_hybrid", "peer_pgvector_hybrid": "peer_pgvector_hybrid"}


def points(summary: dict[str, Any], speed: list[dict[str, Any]], labels: dict[str, str],
           metric: str) -> list[dict[str, Any]]:
    """(model, system, metric, p95) for every configuration both files know."""
    out = []
    for run in speed:
        model = run["model"]
        label = labels.get(model, "")
        for system, latency in run.get("latency", {}).items():
            served = next((name for name, speed_name in SPEED_NAMES.items()
                           if speed_name == system), None)
            if served is None:
                continue
            key = f"{served}@{label}" if label else served
            if key not in summary:
                continue
            value = summary[key]["overall"].get(metric)
            if value is not None:
                out.append({"model": model, "system": served, "metric": float(value),
                            "p95_ms": float(latency["p95"])})
    return out


def frontier(pts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The points no other point beats on both axes (faster or equal and better or equal,
    one of them strictly), fastest first."""
    def beaten(p: dict[str, Any]) -> bool:
        return any(q is not p and q["p95_ms"] <= p["p95_ms"] and q["metric"] >= p["metric"]
                   and (q["p95_ms"] < p["p95_ms"] or q["metric"] > p["metric"]) for q in pts)
    return sorted((p for p in pts if not beaten(p)), key=lambda p: p["p95_ms"])


def draw(pts: list[dict[str, Any]], metric: str, title: str, png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5.5))
    models = sorted({p["model"] for p in pts})
    markers = {"default": "o", "vector": "s", "peer_lancedb_hybrid": "^",
               "peer_pgvector_hybrid": "v"}
    colours = dict(zip(models, plt.rcParams["axes.prop_cycle"].by_key()["color"], strict=False))
    for p in pts:
        ax.scatter(p["p95_ms"], p["metric"], marker=markers.get(p["system"], "x"), s=60,
                   color=colours[p["model"]], label=f"{p['model']}: {p['system']}")
        ax.annotate(p["system"].replace("peer_", ""), (p["p95_ms"], p["metric"]),
                    textcoords="offset points", xytext=(5, 3), fontsize=7)
    best = frontier(pts)
    ax.plot([p["p95_ms"] for p in best], [p["metric"] for p in best], "k--", lw=0.8,
            label="Pareto frontier")
    ax.set_xlabel("p95 ms, one client, 5,000 memories (speed benchmark)")
    ax.set_ylabel(metric)
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=6, loc="lower right")
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=110)


def table(pts: list[dict[str, Any]], metric: str) -> str:
    best = {(p["model"], p["system"]) for p in frontier(pts)}
    rows = [f"| model | system | {metric} | p95 ms | on the frontier |", "|---|---|---:|---:|---|"]
    for p in sorted(pts, key=lambda p: p["p95_ms"]):
        rows.append(f"| {p['model']} | {p['system']} | {p['metric']:.3f} | {p['p95_ms']:.1f} "
                    f"| {'yes' if (p['model'], p['system']) in best else ''} |")
    return "\n".join(rows) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.quality.pareto",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--summary", type=Path, required=True)
    parser.add_argument("--speed", type=Path, required=True)
    parser.add_argument("--labels", default="", help="MODEL=LABEL,... as model_pair named them")
    parser.add_argument("--metric", default="recall@10")
    parser.add_argument("--png", type=Path, required=True)
    parser.add_argument("--title", default="recall@10 against p95 latency")
    parser.add_argument("--table-to", type=Path)
    args = parser.parse_args(argv)
    labels = dict(pair.split("=", 1) for pair in args.labels.split(",") if pair)
    pts = points(json.loads(args.summary.read_text()), json.loads(args.speed.read_text()),
                 labels, args.metric)
    if not pts:
        raise SystemExit("no configuration is in both files")
    draw(pts, args.metric, args.title, args.png)
    text = table(pts, args.metric)
    print(text, end="")
    if args.table_to:
        args.table_to.write_text(text)


if __name__ == "__main__":
    main()
