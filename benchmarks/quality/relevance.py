"""The relevance estimate a hit carries, fitted out of fold, with its reliability per split and
the relevance floor it supports (docs/decisions/0012-ranking-apart-from-scoring.md).

  python -m benchmarks relevance            (pools dumped first where missing)
  python -m benchmarks.quality.relevance --pools P1,P2,... [--write-catalogue] \
      [--json-to benchmarks/reports/relevance.json] [--report-to benchmarks/reports/relevance.md]

Each split's pool (benchmarks/replay/pool.py) is served under the shipped ranking
(RecallPolicy.from_env(): method, weights, context propagation) with the gateway's own code
(benchmarks/replay/cross_validation.py `served_ranking`), and every hit of every question's top
K is a row: its evidence as the gateway reads it (recallmesh/gateway/stages.py `evidence`:
RELEVANCE_FEATURES) and its label (in the question's qrels; every hit of a question nothing
answers is irrelevant: the set's own unanswerable questions, and each question asked in another
namespace, pool.dump --foreign, where the pool holds them).

The model is a logistic regression of the label on the evidence (Newton's method on the
weighted log-likelihood, each split weighing the same in all, a small ridge so a feature
that never varies stays finite). Out of fold: each split's clusters are cut into folds
(LoCoMo: one conversation a fold; elsewhere FOLDS folds by a hash of the cluster), and a
fold's rows are predicted by the model fitted on every other row of every split. The
predictions are then made non-increasing down each list as the gateway serves them
(stages.non_increasing), and the reliability table compares them with what was relevant:
ten bins of equal width, each bin's count, mean estimate and share relevant; ECE is the
count-weighted mean absolute gap (target: at most 0.03 on every split).

The floor: Recall answers nothing when its best hit's estimate is under min_score. For each
floor of FLOORS, per split, the answerable questions' recall@10 with the cut (an abstention
scores 0) against no floor, paired by question, and the share of unanswerable questions
answered with nothing. The floor shipped is the highest at which no split loses recall@10
outside its paired 95% interval (as issue 39 chose it), read on the out-of-fold estimates.

`--write-catalogue` writes the model fitted on all rows, and the chosen floor's provenance,
into the served model's catalogue entry (recallmesh/embedding_models/catalogue/<name>.json);
RecallPolicy's default min_score is set by hand from the report.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np

from benchmarks.harness import metrics
from benchmarks.harness.data import dataset_path, load
from benchmarks.harness.runner import git_commit
from benchmarks.harness.script import pools_parser
from benchmarks.harness.stats import paired_bootstrap
from benchmarks.replay.cross_validation import Setting, served_ranking
from benchmarks.replay.pool import K, leg_lists, rounded, write_reports
from recallmesh.embedding_models.calibration import (
    LEG_FEATURES,
    RELEVANCE_FEATURES,
    RelevanceModel,
    ScoreCalibration,
    calibration_for,
)
from recallmesh.embedding_models.fetch import CATALOGUE_DIR, catalogue_entry, catalogue_names
from recallmesh.embedding_models.manifest import ModelManifest
from recallmesh.gateway import stages
from recallmesh.policy import RecallPolicy

FOLDS = 5
BINS = 10
RIDGE = 1e-3
FLOORS = [0.0, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.25, 0.3]
FEATURES = RELEVANCE_FEATURES


@dataclass
class Rows:
    """One split's hits: evidence, label, the question (list) and fold each belongs to, and
    each question's answerable flag and relevant ids."""

    name: str
    x: np.ndarray  # (hits, features)
    y: np.ndarray  # 1 relevant, 0 not
    question: np.ndarray  # index into `questions`
    fold: np.ndarray
    questions: list[dict]  # {"answerable", "relevant", "ranked", "cluster"}
    place: np.ndarray | None = None  # each hit's place in its list (1 first)


def fold_of(cluster: str, split: str, clusters: list[str]) -> int:
    if split == "locomo" or (0 < len(clusters) <= 12):
        return clusters.index(cluster)
    return int(hashlib.sha256(cluster.encode()).hexdigest(), 16) % FOLDS


def split_rows(pool: dict, setting: Setting, calibration: ScoreCalibration,
               depth: int = K) -> Rows:
    """Every hit of every question's served top `depth` (Recall's K; Context recalls deeper),
    with its evidence and label."""
    ds = load(dataset_path(pool["dataset"]), unanswerable=True)
    by_id = {q.query_id: q for q in [*ds.queries, *ds.unanswerable]}
    created = {m.corpus_id: m.created_at for ms in ds.scopes.values() for m in ms}
    asked = [(q, "answerable") for q in pool["queries"]] + [
        (q, kind) for kind in ("unanswerable", "foreign", "elsewhere")
        for q in pool.get(kind, [])
        if q["query_id"] in by_id]
    clusters = sorted({by_id[q["query_id"]].cluster or q["query_id"] for q, _ in asked})
    xs, ys, qs, folds, places, questions = [], [], [], [], [], []
    for q, kind in asked:
        answerable = kind == "answerable"
        query = by_id[q["query_id"]]
        ranked, policy = served_ranking(pool, q, query, setting, created, calibration, k=depth)
        top = ranked[:depth]
        lists = leg_lists(q, policy.leg_depth, policy.weight("lexical"))
        relevant = set(q["relevant_ids"]) if answerable else set()
        cluster = query.cluster or q["query_id"]
        for place, (e, hit) in enumerate(zip(stages.evidence(top, lists, calibration), top,
                                             strict=True), start=1):
            places.append(place)
            xs.append([e.get(f, 0.0) for f in FEATURES])
            ys.append(1.0 if hit.memory_id in relevant else 0.0)
            qs.append(len(questions))
            folds.append(fold_of(cluster, pool["dataset"], clusters))
        questions.append({"answerable": answerable, "kind": kind, "relevant": sorted(relevant),
                          "ranked": [c.memory_id for c in top], "cluster": cluster})
    return Rows(pool["dataset"], np.array(xs, float).reshape(-1, len(FEATURES)),
                np.array(ys), np.array(qs), np.array(folds), questions, np.array(places))


def fit(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Weighted logistic regression by Newton's method: [intercept, *weights]."""
    a = np.hstack([np.ones((len(x), 1)), x])
    beta = np.zeros(a.shape[1])
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-np.clip(a @ beta, -30, 30)))
        grad = a.T @ (w * (y - p)) - RIDGE * np.r_[0.0, beta[1:]]
        hess = (a * (w * p * (1 - p))[:, None]).T @ a + RIDGE * np.diag(np.r_[0.0, np.ones(
            a.shape[1] - 1)])
        step = np.linalg.solve(hess, grad)
        beta += step
        if np.max(np.abs(step)) < 1e-9:
            break
    return beta


# The models fitted without a leg's features (RelevanceModel.without): for a hit that leg
# cannot see (the vector leg and a sensitive memory) or when it did not answer.
WITHOUT = ("lexical", "vector", "lexical,vector")


def as_model(beta: np.ndarray, features: Sequence[str]) -> dict:
    return {"intercept": round(float(beta[0]), 4),
            "weights": {f: round(float(b), 4) for f, b in zip(features, beta[1:], strict=True)}}


def predict(beta: np.ndarray, x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(beta[0] + x @ beta[1:], -30, 30)))


def split_weights(splits: list[Rows], mask: dict[str, np.ndarray]) -> np.ndarray:
    """Each split's rows weigh 1 / its row count: every split weighs the same."""
    return np.concatenate([np.full(int(mask[s.name].sum()), 1.0 / max(1, mask[s.name].sum()))
                           for s in splits])


def fit_on(splits: list[Rows], mask: dict[str, np.ndarray]) -> np.ndarray:
    x = np.vstack([s.x[mask[s.name]] for s in splits])
    y = np.concatenate([s.y[mask[s.name]] for s in splits])
    return fit(x, y, split_weights(splits, mask))


def served_scores(split: Rows, raw: np.ndarray) -> np.ndarray:
    """The estimates as served: non-increasing down each question's list."""
    out = raw.copy()
    for i in range(len(split.questions)):
        idx = np.flatnonzero(split.question == i)
        out[idx] = stages.non_increasing(raw[idx].tolist())
    return out


def out_of_fold(splits: list[Rows], fit_depth: int | None = None) -> dict[str, np.ndarray]:
    """Each split's estimates, every fold predicted by the model fitted without it (on the
    hits within `fit_depth` of their list where given: the shipped model is fitted on each
    top K, and predicts deeper hits for Context)."""
    oof = {s.name: np.zeros(len(s.y)) for s in splits}
    for held in splits:
        for fold in sorted(set(held.fold.tolist())):
            mask = {s.name: (s.fold != fold) if s is held else np.ones(len(s.y), bool)
                    for s in splits}
            if fit_depth is not None:
                mask = {s.name: m & (s.place <= fit_depth) if s.place is not None else m
                        for s, m in zip(splits, mask.values(), strict=True)}
            beta = fit_on(splits, mask)
            rows = held.fold == fold
            oof[held.name][rows] = predict(beta, held.x[rows])
        oof[held.name] = served_scores(held, oof[held.name])
    return oof


def reliability(p: np.ndarray, y: np.ndarray) -> tuple[float, list[dict]]:
    """ECE over BINS equal-width bins and the table's rows."""
    bins = np.minimum((p * BINS).astype(int), BINS - 1)
    rows, ece = [], 0.0
    for b in range(BINS):
        m = bins == b
        if not m.any():
            continue
        gap = abs(p[m].mean() - y[m].mean())
        ece += m.sum() / len(p) * gap
        rows.append({"bin": f"{b / BINS:.1f}-{(b + 1) / BINS:.1f}", "hits": int(m.sum()),
                     "estimate": float(p[m].mean()), "relevant": float(y[m].mean())})
    return float(ece), rows


def floor_curve(split: Rows, scores: np.ndarray) -> list[dict]:
    """Per floor: answerable questions' recall@10 with the cut against none (paired CI), and
    the share of unanswerable questions answered with nothing."""
    best = np.array([scores[split.question == i].max() if (split.question == i).any() else 0.0
                     for i in range(len(split.questions))])
    answerable = [i for i, q in enumerate(split.questions) if q["answerable"]]
    kinds = {kind: [i for i, q in enumerate(split.questions) if q["kind"] == kind]
             for kind in ("unanswerable", "foreign", "elsewhere")}
    base = np.array([metrics.per_query(split.questions[i]["ranked"],
                                       split.questions[i]["relevant"])["recall@10"]
                     for i in answerable])
    out = []
    for floor in FLOORS:
        kept = np.array([best[i] >= floor for i in answerable])
        cut = np.where(kept, base, 0.0)
        ci = paired_bootstrap((cut - base).tolist())
        out.append({"floor": floor, "recall@10": float(cut.mean()),
                    "delta": [ci.delta, ci.low, ci.high],
                    "abstained_answerable": float(1 - kept.mean()) if len(kept) else 0.0,
                    **{f"empty_{kind}": (float(np.mean([best[i] < floor for i in ids]))
                                         if ids else None) for kind, ids in kinds.items()}})
    return out


def choose_floor(curves: dict[str, list[dict]]) -> float:
    """The highest floor at which no split loses recall@10 outside its paired 95% interval."""
    ok = [f for f in FLOORS if all(next(r for r in c if r["floor"] == f)["delta"][2] >= 0
                                   for c in curves.values())]
    return max(ok)


def run(pool_paths: list[Path], write_catalogue: bool, json_to: Path | None,
        report_to: Path | None) -> None:
    manifest = ModelManifest.load()
    calibration = calibration_for(manifest.model_id)
    if calibration is None:
        raise SystemExit(f"{manifest.model_id} has no calibration (its cosine floor) to read "
                         "the evidence with")
    shipped = Setting.of(RecallPolicy.from_env())
    splits = [split_rows(json.loads(p.read_text()), shipped, calibration) for p in pool_paths]
    for s in splits:
        print(f"{s.name}: {len(s.questions)} questions, {len(s.y)} hits, "
              f"{s.y.mean():.3f} relevant", flush=True)
    oof = out_of_fold(splits)
    beta = fit_on(splits, {s.name: np.ones(len(s.y), bool) for s in splits})
    model = as_model(beta, FEATURES)
    model["without"] = {}
    partial_ece = {}
    for dropped in WITHOUT:
        kept = [f for f in FEATURES
                if not any(f in LEG_FEATURES[leg] for leg in dropped.split(","))]
        part = [Rows(s.name, s.x[:, [FEATURES.index(f) for f in kept]], s.y, s.question,
                     s.fold, s.questions) for s in splits]
        model["without"][dropped] = as_model(
            fit_on(part, {s.name: np.ones(len(s.y), bool) for s in part}), kept)
        part_oof = out_of_fold(part)
        partial_ece[dropped] = {s.name: reliability(part_oof[s.name], s.y)[0] for s in part}
    tables = {s.name: reliability(oof[s.name], s.y) for s in splits}
    in_sample = {s.name: reliability(served_scores(s, predict(beta, s.x)), s.y)[0]
                 for s in splits}
    curves = {s.name: floor_curve(s, oof[s.name]) for s in splits}
    floor = choose_floor(curves)
    print(f"model {model}; ECE out of fold: "
          + ", ".join(f"{n} {t[0]:.3f}" for n, t in tables.items()) + f"; floor {floor:g}")

    lines = ["# The relevance estimate: reliability out of fold, and the floor", "",
             "Generated by `python -m benchmarks relevance` (benchmarks/quality/relevance.py: "
             "its docstring says what is fitted and how; the reasons: "
             "docs/decisions/0012-ranking-apart-from-scoring.md). Ranking served: "
             f"`{shipped.label}`. Model {manifest.model_id}.", "",
             "## The model (fitted on every row)", "",
             "relevance = 1 / (1 + exp(-(" + f"{model['intercept']:+.4f} "
             + " ".join(f"{w:+.4f} x {f}" for f, w in model["weights"].items()) + ")))", "",
             *(f"- without {d}: {m['intercept']:+.4f} "
               + " ".join(f"{w:+.4f} x {f}" for f, w in m["weights"].items())
               for d, m in model["without"].items()), "",
             "| split | questions | hits | share relevant | ECE out of fold | ECE in sample |",
             "|---|---:|---:|---:|---:|---:|"]
    for s in splits:
        lines.append(f"| {s.name} | {len(s.questions)} | {len(s.y)} | {s.y.mean():.3f} | "
                     f"{tables[s.name][0]:.3f} | {in_sample[s.name]:.3f} |")
    lines += ["", "For a hit a leg cannot see, or when a leg did not answer, the model fitted "
              "without that leg's features (RelevanceModel.without); their out-of-fold ECE:", "",
              "| without | " + " | ".join(s.name for s in splits) + " |",
              "|---|" + "---:|" * len(splits)]
    for dropped, eces in partial_ece.items():
        lines.append(f"| {dropped} | " + " | ".join(f"{eces[s.name]:.3f}" for s in splits)
                     + " |")
    lines += ["", "## Reliability tables (out of fold, as served)", "",
              "Each bin of the estimate: hits, mean estimate, share relevant.", ""]
    for s in splits:
        lines += [f"### {s.name}", "", "| estimate | hits | mean estimate | relevant |",
                  "|---|---:|---:|---:|"]
        lines += [f"| {r['bin']} | {r['hits']} | {r['estimate']:.3f} | {r['relevant']:.3f} |"
                  for r in tables[s.name][1]]
        lines.append("")
    lines += ["## The floor (out-of-fold estimates)", "",
              f"Shipped floor by the rule: **{floor:g}**. Per split: recall@10 of the answerable "
              "questions with Recall's cut, Δ against no floor [paired 95% CI], the share of "
              "answerable questions answered with nothing, and of the questions nothing answers "
              "answered with nothing, where the pool has them: `unanswerable` (the set's own: "
              "LoCoMo's adversarial questions) and `foreign` (each question asked in another "
              "namespace, pool.dump --foreign) and `elsewhere` (each asked of another set's "
              "corpus, pool.add_elsewhere).", "",
              "| floor | " + " | ".join(s.name for s in splits) + " |",
              "|---:|" + "---|" * len(splits)]
    for i, f in enumerate(FLOORS):
        cells = []
        for s in splits:
            r = curves[s.name][i]
            empty = "".join(f", {kind} empty {r[f'empty_{kind}']:.2f}"
                            for kind in ("unanswerable", "foreign", "elsewhere")
                            if r[f"empty_{kind}"] is not None)
            cells.append(f"{r['recall@10']:.3f} ({r['delta'][0]:+.3f} [{r['delta'][1]:+.3f}, "
                         f"{r['delta'][2]:+.3f}]; abstains {r['abstained_answerable']:.2f}"
                         f"{empty})")
        lines.append(f"| {f:g} | " + " | ".join(cells) + " |")
    lines.append("")
    report = {"git_commit": git_commit(), "timestamp": datetime.now().isoformat(),
              "ranking": shipped.label, "model": model, "floor": floor,
              "ece_without": partial_ece,
              "splits": {s.name: {"questions": len(s.questions), "hits": len(s.y),
                                  "relevant": float(s.y.mean()), "ece": tables[s.name][0],
                                  "ece_in_sample": in_sample[s.name],
                                  "reliability": tables[s.name][1],
                                  "floor_curve": curves[s.name]} for s in splits}}
    write_reports(rounded(report), lines, json_to, report_to)
    if write_catalogue:
        name = next(n for n in catalogue_names()
                    if catalogue_entry(n)["manifest"]["model_id"] == manifest.model_id)
        write_model(name, calibration, model, splits, floor)


def write_model(name: str, calibration: ScoreCalibration, model: dict, splits: list[Rows],
                floor: float) -> None:
    """The fitted model into the catalogue entry, replacing its `relevance` only."""
    RelevanceModel.from_dict(model)  # refuses what the gateway would refuse
    path = CATALOGUE_DIR / f"{name}.json"
    entry = catalogue_entry(name)
    entry["calibration"] = {
        "cosine_floor": calibration.cosine_floor, "relevance": model,
        "fitted_on": "issue 55: logistic model of a hit's evidence, fitted on every top-10 hit "
        "of " + ", ".join(f"{s.name} ({len(s.questions)} questions)" for s in splits)
        + f" served under the default ranking; floor {floor:g}; "
        "benchmarks/reports/relevance.md"}
    text = path.read_text()
    start = text.index('"calibration"')
    end = text.index("\n", start)
    tail = "," if text[start:end].rstrip().endswith(",") else ""
    path.write_text(text[:start] + '"calibration": ' + json.dumps(entry["calibration"])
                    + tail + text[end:])
    print(f"wrote {path}")


def main(argv: list[str] | None = None) -> None:
    parser = pools_parser("python -m benchmarks.quality.relevance", __doc__)
    parser.add_argument("--write-catalogue", action="store_true")
    args = parser.parse_args(argv)
    run(args.pools, args.write_catalogue, args.json_to, args.report_to)


if __name__ == "__main__":
    main()
