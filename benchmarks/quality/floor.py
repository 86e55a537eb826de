"""Issue 39's score calibration and relevance floor, fitted and chosen on the dev splits.

  python -m benchmarks.quality.floor cosine-floor --dataset DIR [--limit N] \
      [--corpus-sample N] [--namespace-tag T] --dsn DSN   (once per split; prints JSON)
  python -m benchmarks.quality.floor fit --runs DIR1,DIR2,DIR3 [--config default]
  python -m benchmarks.quality.floor curve --runs DIR1,DIR2,DIR3 [--config default] \
      [--baseline-runs B1,B2,B3] [--json-to F]
  python -m benchmarks.quality.floor report --floors F1,F2,F3 --runs DIR1,DIR2,DIR3 \
      --baseline-runs B1,B2,B3 [--config default_no_floor] [--served-config default] \
      --report-to benchmarks/reports/floor.md --json-to benchmarks/reports/floor.json \
      --plot-to benchmarks/reports/floor.png

`report` does all of it from the same inputs: the cosine floor, the map's fit with its
leave-one-split-out check, the curve (from `--config`, served with the floor off), and the
paired numbers of `--served-config` (served with the shipped floor) against the baselines.

`cosine-floor`: an embedding model's cosine floor (recallmesh/embedding_models/calibration.py), the
typical cosine of an unrelated memory: for up to SAMPLE_QUERIES of a split's questions
(answerable and unanswerable, evenly spaced), the query embedded by the model in process and
compared with every stored vector of its namespace (read from the loaded stack's Postgres);
the split's value is the median over those questions of the median cosine (almost every memory
of a namespace is unrelated to a given question). The floor is the mean over the splits.

`fit`: the relevance map, relevance = 1 / (1 + exp(-(a + b x share))), a two-parameter
logistic regression (Newton's method; two numbers do not need a library) of "this hit is
relevant" on the hit's fused share, over every hit of served runs (`python -m benchmarks run
--unanswerable`, the floor off: `--configs default` with RECALLMESH_MIN_SCORE unset, its
default 0 at the time of the fit): answerable questions' top 10 hits labelled by the qrels,
unanswerable questions' hits all irrelevant; each split weighs the same. A run served with
an earlier map gives its shares back through that map's inverse (the result file names the
model). Leave-one-split-out: the map fitted on two splits, its calibration (mean predicted
against observed relevance, Brier score) on the third.

`curve`: over floors 0..0.95, per split: the answerable questions that keep a relevant hit
above the floor, recall@10 after the cut, and the unanswerable questions whose answer is
empty; with `--baseline-runs` (today's default, served on the same load) the paired recall@10
of the cut answers against it, with bootstrap CIs, at the chosen floor (RecallPolicy's
min_score). `choose`: the default floor the curve supports, the highest floor at which no
split loses recall@10 outside its paired 95% CI (chosen_floor); the behaviour suite's cases
must pass at it too (tests/integration/test_behaviour.py checks that).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from pathlib import Path

import numpy as np

from benchmarks.harness import metrics
from benchmarks.harness.script import paths
from benchmarks.harness.stats import paired_bootstrap
from recallmesh.embedding_models.calibration import ScoreCalibration, calibration_for
from recallmesh.policy import RecallPolicy

# The floors the curve is read at: fine where relevance estimates mostly lie, coarse above.
FLOORS = [0.0, 0.002, 0.004, 0.006, 0.008, 0.01, 0.015, 0.02, 0.03, 0.04, 0.05, 0.075, 0.1,
          0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]



SAMPLE_QUERIES = 200


def cosine_floor(dataset: Path, dsn: str, limit: int | None = None,
                 corpus_sample: int | None = None, namespace_tag: str = "") -> dict:
    """One split's typical cosine of an unrelated memory (see the module's docstring)."""
    import psycopg

    from benchmarks.harness.data import load
    from recallmesh.embedding_models.manifest import ModelManifest
    from recallmesh.services.embedding.core import OnnxEmbedder

    ds = load(dataset, limit, True, corpus_sample)
    ds.namespace_tag = namespace_tag
    asked = [*ds.queries, *ds.unanswerable]
    asked = asked[::max(1, len(asked) // SAMPLE_QUERIES)][:SAMPLE_QUERIES]
    manifest = ModelManifest.load()
    vectors = OnnxEmbedder(manifest).embed([q.text for q in asked], "query").vectors
    stored: dict[str, np.ndarray] = {}
    medians = []
    with psycopg.connect(dsn) as conn:
        for q, v in zip(asked, vectors, strict=True):
            ns = ds.namespace(q.scope)
            if ns not in stored:
                rows = conn.execute(
                    "SELECT embedding::text FROM memories WHERE namespace = %s "
                    "AND embedding_model = %s AND deleted_at IS NULL",
                    (ns, manifest.model_id)).fetchall()
                m = np.array([np.array(json.loads(r[0]), dtype=np.float32) for r in rows])
                stored[ns] = m / np.linalg.norm(m, axis=1, keepdims=True) if len(m) else m
            if len(stored[ns]):
                medians.append(float(np.median(stored[ns] @ v)))
    return {"dataset": ds.name, "model_id": manifest.model_id, "questions": len(medians),
            "median": statistics.median(medians),
            "p10_p90": [float(x) for x in np.percentile(medians, [10, 90])]}


def _runs(dirs: list[Path], config: str) -> list[dict]:
    return [json.loads((d / f"{config}.json").read_text()) for d in dirs]


def _share(score: float, calibration: ScoreCalibration | None) -> float:
    """The fused share a served score came from (the inverse of the map it was served with)."""
    if calibration is None:
        return score
    p = min(max(score, 1e-12), 1 - 1e-12)
    return (math.log(p / (1 - p)) - calibration.intercept) / calibration.slope


def hits(run: dict, served_with: ScoreCalibration | None = None
         ) -> tuple[np.ndarray, np.ndarray]:
    """(shares, relevant) of every hit of a served run, answerable and unanswerable; the
    scores are read back through the map the run was served with (default: the shipped
    one of its model)."""
    calibration = served_with or calibration_for(run["model_id"])
    shares, labels = [], []
    for row in run["queries"]:
        relevant = set(row["relevant_ids"])
        for corpus_id, score in zip(row["ranked_ids"], row["scores"], strict=True):
            shares.append(_share(score, calibration))
            labels.append(corpus_id in relevant)
    for row in run.get("unanswerable", []):
        for score in row.get("scores", []):
            shares.append(_share(score, calibration))
            labels.append(False)
    return np.asarray(shares, dtype=float), np.asarray(labels, dtype=float)


def logistic(x: np.ndarray, y: np.ndarray, w: np.ndarray, iterations: int = 50
             ) -> tuple[float, float]:
    """Weighted logistic regression of y on x: (intercept, slope), by Newton's method."""
    beta = np.zeros(2)
    design = np.column_stack([np.ones_like(x), x])
    for _ in range(iterations):
        p = 1 / (1 + np.exp(-(design @ beta)))
        gradient = design.T @ (w * (y - p))
        hessian = (design * (w * p * (1 - p))[:, None]).T @ design + 1e-9 * np.eye(2)
        step = np.linalg.solve(hessian, gradient)
        beta += step
        if np.abs(step).max() < 1e-10:
            break
    return float(beta[0]), float(beta[1])


def fit(runs: list[dict], served_with: ScoreCalibration | None = None) -> dict:
    data = {run["dataset"]["name"]: hits(run, served_with) for run in runs}

    def fitted(names: list[str]) -> tuple[float, float]:
        x = np.concatenate([data[n][0] for n in names])
        y = np.concatenate([data[n][1] for n in names])
        w = np.concatenate([np.full(len(data[n][0]), 1 / len(data[n][0])) for n in names])
        return logistic(x, y, w * len(x))

    intercept, slope = fitted(list(data))
    held_out = {}
    for name in data:
        a, b = fitted([n for n in data if n != name])
        x, y = data[name]
        p = 1 / (1 + np.exp(-(a + b * x)))
        held_out[name] = {"hits": len(x), "observed": float(y.mean()),
                          "predicted": float(p.mean()), "brier": float(((p - y) ** 2).mean()),
                          "brier_constant": float(((y.mean() - y) ** 2).mean()),
                          "intercept": a, "slope": b}
    return {"intercept": intercept, "slope": slope, "held_out": held_out,
            "hits": {n: len(d[0]) for n, d in data.items()}}


def _cut(row: dict, floor: float) -> list[str]:
    return [i for i, s in zip(row["ranked_ids"], row["scores"], strict=True) if s >= floor]


def curve(runs: list[dict]) -> dict:
    out = {}
    for run in runs:
        rows, unanswerable = run["queries"], run.get("unanswerable", [])
        points = []
        for floor in FLOORS:
            cut = [_cut(r, floor) for r in rows]
            points.append({
                "floor": floor,
                "answer_kept": statistics.fmean(
                    bool(set(c) & set(r["relevant_ids"])) for c, r in zip(cut, rows,
                                                                            strict=True)),
                "recall@10": statistics.fmean(metrics.recall_at(c, r["relevant_ids"], 10)
                                              for c, r in zip(cut, rows, strict=True)),
                "empty_unanswerable": (statistics.fmean(
                    not any(s >= floor for s in u.get("scores", [])) for u in unanswerable)
                    if unanswerable else None),
                "empty_answerable": statistics.fmean(not c for c in cut),
            })
        out[run["dataset"]["name"]] = {"queries": len(rows), "unanswerable": len(unanswerable),
                                       "points": points}
    return out


def chosen_floor(runs: list[dict]) -> tuple[float, dict]:
    """The default floor the curve supports: the highest floor of the grid, walking up from
    0, at which every split's paired 95% CI of recall@10 (cut against the floor off, per
    query) still includes 0. Returns it and each split's interval at it."""
    best, at = 0.0, {}
    for floor in FLOORS[1:]:
        intervals = {}
        for run in runs:
            rows = run["queries"]
            ci = paired_bootstrap([
                metrics.recall_at(_cut(r, floor), r["relevant_ids"], 10)
                - metrics.recall_at(r["ranked_ids"], r["relevant_ids"], 10) for r in rows])
            intervals[run["dataset"]["name"]] = [ci.delta, ci.low, ci.high]
        if not all(high >= 0 >= low for _, low, high in intervals.values()):
            break
        best, at = floor, intervals
    return best, at


def paired(runs: list[dict], baselines: list[dict], floor: float) -> dict:
    """recall@10 and nDCG@10 of the runs cut at `floor` against the baselines, per query."""
    out = {}
    for run, base in zip(runs, baselines, strict=True):
        by_id = {r["query_id"]: r for r in base["queries"]}
        rows = [r for r in run["queries"] if r["query_id"] in by_id]
        result = {"queries": len(rows)}
        for metric, fn in (("recall@10", lambda c, rel: metrics.recall_at(c, rel, 10)),
                           ("ndcg@10", lambda c, rel: metrics.ndcg_at(c, rel, 10))):
            new = [fn(_cut(r, floor), r["relevant_ids"]) for r in rows]
            old = [by_id[r["query_id"]]["metrics"][metric] for r in rows]
            ci = paired_bootstrap([a - b for a, b in zip(new, old, strict=True)])
            result[metric] = {"baseline": statistics.fmean(old), "new": statistics.fmean(new),
                              "delta": [ci.delta, ci.low, ci.high]}
        out[run["dataset"]["name"]] = result
    return out


def report(floors: list[Path], runs: list[dict], served: list[dict], baselines: list[dict],
           chosen: float, baseline_served_at: str = "") -> tuple[str, dict]:
    measured = [json.loads(path.read_text()) for path in floors]
    shipped = calibration_for(runs[0]["model_id"])
    floor = {"per_split": {m["dataset"]: m["median"] for m in measured},
             "measured": measured,
             "cosine_floor": statistics.fmean(m["median"] for m in measured)}
    fitted = fit(runs)
    points = curve(runs)
    compared = {}
    for run, base in zip(served, baselines, strict=True):
        compared |= paired([run], [base], 0.0)  # served with the floor: already cut
    data = {"cosine_floor": floor, "fit": fitted, "curve": points, "paired": compared,
            "min_score": chosen,
            "runs": {r["dataset"]["name"]: {"git_commit": r["git_commit"], "model": r["model_id"],
                                            "queries": r["dataset"]["queries"],
                                            "unanswerable": r["dataset"].get("unanswerable"),
                                            "memories": r["dataset"].get("memories"),
                                            "limit": r["dataset"]["limit"]} for r in runs},
            "baseline_served_at": baseline_served_at,
            "shipped": {"cosine_floor": shipped.cosine_floor, "intercept": shipped.intercept,
                        "slope": shipped.slope} if shipped else None,
            "floor_chosen_on_dev": chosen_floor(runs)}
    lines = ["# Absolute scores and the relevance floor (issue 39)", "",
             "Generated by `python -m benchmarks.quality.floor report` (the module's docstring "
             "says how each number is made). Inputs: served runs of the dev "
             "splits, each split loaded once and served at two commits on that load: today's "
             "default before issue 39 (the baseline) and this one.", "",
             f"The baseline was served by commit {baseline_served_at or '(not given)'}; this one "
             "by the commit each run names.", "",
             "| split | queries | unanswerable | memories | limit | commit |",
             "|---|---:|---:|---:|---|---|"]
    for name, r in data["runs"].items():
        lines.append(f"| {name} | {r['queries']} | {r['unanswerable']} | {r['memories']} | "
                     f"{r['limit'] or 'all'} | {r['git_commit'][:10]} |")
    lines += ["", "## The cosine floor", "",
              "The typical cosine of an unrelated memory: median over up to "
              f"{SAMPLE_QUERIES} questions per split of the median cosine between the question "
              "and every memory of its namespace: " + ", ".join(f"{n} {v:.3f}" for n, v in
                                                floor["per_split"].items())
              + f"; the floor is their mean, **{floor['cosine_floor']:.3f}**.", "",
              "## The relevance map", "",
              f"relevance = 1 / (1 + exp(-({fitted['intercept']:.3f} + {fitted['slope']:.3f} "
              "x share)), refitted here on every hit of the floor-off runs (hits: "
              + ", ".join(f"{n} {h}" for n, h in fitted["hits"].items())
              + "; each split weighs the same); shipped in the model's catalogue entry: "
              + (f"intercept {shipped.intercept:g}, slope {shipped.slope:g}, cosine floor "
                 f"{shipped.cosine_floor:g}" if shipped else "none")
              + ". Fitted on the other two splits, on the third:",
              "", "| held-out split | hits | relevant (observed) | predicted | Brier | Brier of "
              "the constant |", "|---|---:|---:|---:|---:|---:|"]
    for name, h in fitted["held_out"].items():
        lines.append(f"| {name} | {h['hits']} | {h['observed']:.3f} | {h['predicted']:.3f} | "
                     f"{h['brier']:.4f} | {h['brier_constant']:.4f} |")
    lines += ["", "## The floor curve", "",
              "Served with the floor off; each floor applied to the served scores. *kept*: "
              "answerable questions with a relevant hit left above the floor; *recall@10*: "
              "after the cut; *empty*: unanswerable questions (LoCoMo adversarial, "
              "LongMemEval abstention) answered with nothing; *empty (answerable)*: answerable "
              "questions answered with nothing.", ""]
    names = list(points)
    lines.append("| floor | " + " | ".join(f"{n} kept | {n} recall@10 | {n} empty | "
                                          f"{n} empty (answerable)" for n in names) + " |")
    lines.append("|---:|" + "---:|---:|---:|---:|" * len(names))
    for i, f in enumerate(FLOORS):
        cells = []
        for n in names:
            pt = points[n]["points"][i]
            empty = "-" if pt["empty_unanswerable"] is None else f"{pt['empty_unanswerable']:.3f}"
            cells.append(f"{pt['answer_kept']:.3f} | {pt['recall@10']:.3f} | {empty} | "
                         f"{pt['empty_answerable']:.3f}")
        mark = " **(default)**" if abs(f - chosen) < 1e-9 else ""
        lines.append(f"| {f:g}{mark} | " + " | ".join(cells) + " |")
    dev_floor, intervals = data["floor_chosen_on_dev"]
    lines += ["", "## The default floor", "",
              f"On the dev splits, the highest floor of the curve at which no split loses "
              f"recall@10 outside its paired 95% CI (cut against the floor off): **{dev_floor:g}** "
              "(" + ", ".join(f"{n} {d:+.4f} [{lo:+.4f}, {hi:+.4f}]"
                              for n, (d, lo, hi) in intervals.items()) + "). The behaviour "
              "suite's cases need a floor that keeps its weakest right answers and leaves its "
              "unanswerable questions empty (benchmarks/reports/behaviour.md); the default is "
              f"the highest floor that satisfies both: **{chosen:g}**.",
              "", f"## The shipped default (min_score {chosen:g}) against today's default", "",
              "Served at this commit with the shipped floor, paired per query with the "
              "baseline on the same load; Δ with a paired bootstrap 95% CI.", "",
              "| split | queries | recall@10 before | after | Δ [95% CI] | nDCG@10 before | "
              "after | Δ [95% CI] |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, c in compared.items():
        r, n = c["recall@10"], c["ndcg@10"]
        lines.append(f"| {name} | {c['queries']} | {r['baseline']:.3f} | {r['new']:.3f} | "
                     f"{r['delta'][0]:+.3f} [{r['delta'][1]:+.3f}, {r['delta'][2]:+.3f}] | "
                     f"{n['baseline']:.3f} | {n['new']:.3f} | {n['delta'][0]:+.3f} "
                     f"[{n['delta'][1]:+.3f}, {n['delta'][2]:+.3f}] |")
    return "\n".join(lines) + "\n", data


def plot(data: dict, to: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2))
    for name, c in data["curve"].items():
        xs = [p["floor"] for p in c["points"]]
        line = ax.plot(xs, [p["recall@10"] for p in c["points"]], label=f"{name} recall@10")
        if c["unanswerable"]:
            ax.plot(xs, [p["empty_unanswerable"] for p in c["points"]], linestyle="--",
                    color=line[0].get_color(), label=f"{name} unanswerable left empty")
    ax.axvline(data["min_score"], color="grey", linewidth=0.8)
    ax.set_xlabel("min_score (relevance floor)")
    ax.set_ylim(0, 1)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(to, dpi=110)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.quality.floor")
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("cosine-floor")
    c.add_argument("--dataset", type=Path, required=True)
    c.add_argument("--dsn", required=True)
    c.add_argument("--limit", type=int)
    c.add_argument("--corpus-sample", type=int)
    c.add_argument("--namespace-tag", default="")
    r = sub.add_parser("report")
    r.add_argument("--floors", type=paths, required=True,
                   help="the cosine-floor outputs, one JSON file per split")
    r.add_argument("--runs", type=paths, required=True)
    r.add_argument("--baseline-runs", type=paths, required=True)
    r.add_argument("--config", default="default_no_floor")
    r.add_argument("--served-config", default="default")
    r.add_argument("--report-to", type=Path, required=True)
    r.add_argument("--json-to", type=Path, required=True)
    r.add_argument("--plot-to", type=Path)
    r.add_argument("--baseline-served-at", default="",
                   help="the commit that served the baseline runs")
    sub.add_parser("choose", help="the default floor the curve supports").add_argument(
        "--runs", type=paths, required=True)
    for name in ("fit", "curve"):
        p = sub.add_parser(name)
        p.add_argument("--runs", type=paths, required=True)
        p.add_argument("--config", default="default")
        p.add_argument("--served-with", help="INTERCEPT,SLOPE of the map the runs were "
                       "served with (default: the shipped one)")
        if name == "curve":
            p.add_argument("--baseline-runs", type=paths)
            p.add_argument("--baseline-config", default="default")
            p.add_argument("--json-to", type=Path)
    args = parser.parse_args(argv)
    if args.command == "report":
        text, data = report(args.floors, _runs(args.runs, args.config),
                            _runs(args.runs, args.served_config),
                            _runs(args.baseline_runs, "default"), RecallPolicy().min_score,
                            args.baseline_served_at)
        args.report_to.write_text(text)
        args.json_to.write_text(json.dumps(data, indent=1) + "\n")
        if args.plot_to:
            plot(data, args.plot_to)
        print(text)
    elif args.command == "choose":
        print(json.dumps(chosen_floor(_runs(args.runs, "default_no_floor"))))
    elif args.command == "cosine-floor":
        print(json.dumps(cosine_floor(args.dataset, args.dsn, args.limit, args.corpus_sample,
                                      args.namespace_tag)))
    elif args.command == "fit":
        served_with = None
        if args.served_with:
            a, b = (float(x) for x in args.served_with.split(","))
            served_with = ScoreCalibration(0.0, a, b)
        print(json.dumps(fit(_runs(args.runs, args.config), served_with), indent=1))
    else:
        runs = _runs(args.runs, args.config)
        result = {"curve": curve(runs), "min_score": RecallPolicy().min_score}
        if args.baseline_runs:
            result["paired"] = paired(runs, _runs(args.baseline_runs, args.baseline_config),
                                      RecallPolicy().min_score)
        text = json.dumps(result, indent=1)
        if args.json_to:
            args.json_to.write_text(text + "\n")
        print(text)


if __name__ == "__main__":
    main()
