"""Learned ranking over the legs' evidence, fitted out of fold (issue 66's candidate), against
the shipped default and the vector leg alone, on the decision's pools.

  python -m benchmarks learned-ranking            (pools dumped first where missing)
  python -m benchmarks.replay.learned --pools P1,P2,... [--report-to ...] [--json-to ...]

Each query's candidates are every memory a leg returned (the pool's lists, depth
LEG_DEPTH). A candidate is described by what the legs say of it, the values the relevance
estimate reads (recallmesh/gateway/stages.py `evidence`) in the forms the fusion methods use
them: per leg, whether it returned the candidate, its score as a share of the leg's own scale
(lexical: the share of the query's idf it matched, score / score_scale; vector: the cosine
above the model's floor over 1 - floor; calibrated fusion), its min-max share of the list (cc)
and 1 / rank (RRF); and how strong the leg's best evidence is in this query (its best
candidate's share), alone and times the candidate's share, so that the fit can trust a leg
less when even its best hit is weak.

A logistic regression (L2, scipy's L-BFGS) on "the candidate is relevant" is fitted on every
split's other folds (the decision's folds: a LoCoMo conversation, FOLDS folds of clusters
elsewhere), each split weighted alike, and ranks the held-out fold's candidates. Its primary
metric per split is compared, by cluster as in decision.md, with the shipped default and the
vector leg alone replayed on the same pools (benchmarks/replay/decision.py).
"""

from __future__ import annotations

import argparse
import json
from datetime import datetime
from pathlib import Path

import numpy as np
from scipy.optimize import minimize

from benchmarks.harness.data import dataset_path
from benchmarks.harness.runner import git_commit
from benchmarks.replay.cross_validation import Setting, Split, replay_split
from benchmarks.replay.decision import SHIPPED, clusters_of, versus
from benchmarks.replay.pool import leg_lists, scored
from recallmesh.wire.fusion import LegList

LEG_DEPTH = 100
LEGS = ("lexical", "vector")
VECTOR_ALONE = Setting("cc", 0.0, (0, 0.0, 0.0), 0.0, False)
L2 = 1e-3  # against the sample weights, which sum to 1 per split


def _share(lst: LegList, score: float) -> float:
    """A score on the leg's own scale, 0..1 (the calibrated fusion's reading)."""
    if lst.score_scale:
        return min(max(score / lst.score_scale, 0.0), 1.0)
    if lst.score_floor is not None:
        top = lst.score_range[1] if lst.score_range else 1.0
        return min(max((score - lst.score_floor) / (top - lst.score_floor), 0.0), 1.0)
    return 0.0


def features(q: dict) -> tuple[list[str], np.ndarray]:
    """The candidates of one pool query and their feature rows."""
    lists = {lst.leg: lst for lst in leg_lists(q, LEG_DEPTH, 1.0)}
    ids = list(dict.fromkeys(c.memory_id for lst in lists.values() for c in lst.candidates))
    rows = np.zeros((len(ids), 1 + len(LEGS) * 6))
    rows[:, 0] = 1.0
    at = {i: n for n, i in enumerate(ids)}
    for j, leg in enumerate(LEGS):
        lst = lists.get(leg)
        if lst is None or not lst.candidates:
            continue
        scores = [c.score for c in lst.candidates]
        low, high = min(scores), max(scores)
        strength = _share(lst, high)
        base = 1 + j * 6
        rows[:, base + 4] = strength  # the leg's best evidence, for every candidate
        for rank, c in enumerate(lst.candidates, start=1):
            n = at[c.memory_id]
            if rows[n, base]:
                continue
            share = _share(lst, c.score)
            rows[n, base] = 1.0
            rows[n, base + 1] = share
            rows[n, base + 2] = (c.score - low) / (high - low) if high > low else 1.0
            rows[n, base + 3] = 1.0 / rank
            rows[n, base + 5] = share * strength
    return ids, rows


def fit(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    def loss(beta: np.ndarray) -> tuple[float, np.ndarray]:
        z = x @ beta
        p = 1.0 / (1.0 + np.exp(-z))
        eps = 1e-12
        ll = -(w * (y * np.log(p + eps) + (1 - y) * np.log(1 - p + eps))).sum()
        grad = x.T @ (w * (p - y))
        reg = L2 * (beta[1:] ** 2).sum() / 2
        return ll + reg, grad + L2 * np.r_[0.0, beta[1:]]
    return minimize(loss, np.zeros(x.shape[1]), jac=True, method="L-BFGS-B").x


def learned_scores(splits: list[Split]) -> dict[str, np.ndarray]:
    """Per split, each query's primary metric under the ranking fitted without its fold."""
    data = []  # per split: per query (ids, rows, labels)
    for split in splits:
        per_query = []
        for q in split.pool["queries"]:
            ids, rows = features(q)
            relevant = set(q["relevant_ids"])
            per_query.append((ids, rows, np.array([i in relevant for i in ids], float)))
        data.append(per_query)
    folds = sorted({int(f) for split in splits for f in split.folds})
    out = {split.name: np.zeros(len(split.folds)) for split in splits}
    for fold in folds:
        xs, ys, ws = [], [], []
        for split, per_query in zip(splits, data, strict=True):
            train = [pq for pq, f in zip(per_query, split.folds, strict=True) if f != fold]
            n = sum(len(ids) for ids, _, _ in train) or 1
            for _, rows, labels in train:
                xs.append(rows)
                ys.append(labels)
                ws.append(np.full(len(labels), 1.0 / n))  # each split weighs alike
        beta = fit(np.vstack(xs), np.concatenate(ys), np.concatenate(ws))
        for split, per_query in zip(splits, data, strict=True):
            for n, ((ids, rows, _), f) in enumerate(zip(per_query, split.folds, strict=True)):
                if f != fold:
                    continue
                order = np.argsort(-(rows @ beta), kind="stable")
                q = split.pool["queries"][n]
                out[split.name][n] = scored(split.pool, q, [ids[i] for i in order])[
                    "metrics"][split.primary]
    return out


def run(pool_paths: list[Path], report_to: Path | None, json_to: Path | None) -> None:
    splits = []
    for path in pool_paths:
        pool = json.loads(path.read_text())
        splits.append(replay_split(pool, dataset_path(pool["dataset"]), [SHIPPED, VECTOR_ALONE]))
        print(f"{pool['dataset']}: replayed", flush=True)
    learned = learned_scores(splits)
    lines = [
        "# Learned ranking over the legs' evidence, out of fold", "",
        "Generated by `python -m benchmarks learned-ranking` (benchmarks/replay/learned.py: "
        "its docstring says what is fitted and how). Δ = learned minus the row, mean [cluster "
        "bootstrap 95% CI], clusters up ↑ / down ↓.", "",
        "| split (metric) | queries | learned | shipped default | Δ vs shipped | vector alone "
        "| Δ vs vector alone |", "|---|---:|---:|---:|---:|---:|---:|"]
    report: dict = {"git_commit": git_commit(), "timestamp": datetime.now().isoformat(),
                    "splits": {}}
    for split in splits:
        mine = learned[split.name]
        cl = clusters_of(split)
        vs_shipped = versus(mine, split.scores[SHIPPED], cl)
        vs_vector = versus(mine, split.scores[VECTOR_ALONE], cl)
        lines.append(f"| {split.name} ({split.primary}) | {len(mine)} | {mine.mean():.3f} | "
                     f"{split.scores[SHIPPED].mean():.3f} | {vs_shipped.cell()} | "
                     f"{split.scores[VECTOR_ALONE].mean():.3f} | {vs_vector.cell()} |")
        report["splits"][split.name] = {
            "learned": round(float(mine.mean()), 4),
            "shipped": round(float(split.scores[SHIPPED].mean()), 4),
            "vector_alone": round(float(split.scores[VECTOR_ALONE].mean()), 4),
            "vs_shipped": vs_shipped.json(), "vs_vector_alone": vs_vector.json()}
    text = "\n".join(lines) + "\n"
    print(text)
    if report_to:
        report_to.write_text(text)
    if json_to:
        json_to.write_text(json.dumps(report, indent=1) + "\n")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.replay.learned",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--pools", required=True, type=lambda s: [Path(p) for p in s.split(",")])
    parser.add_argument("--report-to", type=Path)
    parser.add_argument("--json-to", type=Path)
    args = parser.parse_args(argv)
    run(args.pools, args.report_to, args.json_to)


if __name__ == "__main__":
    main()
