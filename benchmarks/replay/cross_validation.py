"""Levers chosen by cross-validation on the dev splits: in-sample and out-of-fold effects.

  python -m benchmarks.replay.cross_validation \
      --pools benchmarks/results/locomo/context_pool.json,... --datasets ../shared/datasets \
      [--peers benchmarks/results] [--json-to benchmarks/reports/cross_validation.json] \
      [--report-to benchmarks/reports/cross-validation.md]

Each dev split's candidate pools (benchmarks/replay/pool.py: dumped once through the real
stack) are replayed under every recall setting of a grid with the gateway's own code: the
deployment policy (`recallmesh.policy.RecallPolicy`) with the query's intent route merged as
the gateway merges it (`resolve`), `recallmesh.services.fusion.core.fuse` by the setting's method,
`recallmesh.gateway.stages.plan` (which refinements apply), the time-window boost
(`time_window.boost`, against the query's reference time as the harness sends it), context
propagation (`stages.propagate_context`, along the pool's threads), the relevance scores and the
relevance floor as Recall applies it (`stages.relevance_scores`, `stages.above_floor`), with the
vector list carrying the leg's calibrated cosine floor as served (`pool.leg_lists`). Since issue
42 the replay of the shipped setting matches the served default to 0.001 on every split
(benchmarks/reports/served.md). Not replayed: the importance prior and the exact-match bonus (a
pool records neither; the datasets carry no importance), restatements (`stages.newer_first`: the
dev splits' conversation turns are threaded, which it leaves alone, and SciFact's abstracts are
not restatements), the BM25 k1 / b (the pool's lexical scores are the leg's at its defaults;
they were chosen in benchmarks/reports/bm25.md on served runs). The pool levers
(benchmarks/replay/pool_levers.py: vector lists recomputed with and without a lever) are
replayed at the shipped setting and reported apart; the session-level recall of LongMemEval
reads the whole fused ranking.

Folds: LoCoMo by conversation (each its own fold), LongMemEval by question and SciFact by query
(FOLDS folds, assigned by a hash of the id). A *procedure* is a grid of settings: on each fold
it picks the setting with the best objective on the other folds, and is scored on the held-out
fold; its out-of-fold score is that of every query when it was held out. The objective is the
mean over the dev splits of each split's primary metric (recall@10; SciFact nDCG@10): one
default serves all of them, so a fold's training data are the other folds of its split plus
every other split.

A lever's in-sample effect: the best setting with it minus the best without it, both chosen and
scored on all queries; levers other than the fusion method are judged among the settings with
the shipped method (the behaviour suite decides the method: min-max fusion fails its sensitive
cases). Its out-of-fold effect: the procedure whose grid has the lever on minus
the one whose grid has it off, scored out of fold, with a paired bootstrap 95% CI per split.
A lever with a clear out-of-fold loss on a split is dropped; one with a clear gain on a split
and a clear loss on none is kept; one clear of zero nowhere is dropped, unless the behaviour
suite needs it (then the report says why it stays). The default's own row is the shipped
setting scored on all queries (in sample: it was chosen on them) next to the out-of-fold score
of the procedure it comes from (the full grid).

Where `--peers` holds a served run of a dataset (benchmarks/results/<dataset>/<peer>.json from
`python -m benchmarks run`), the out-of-fold scores are also compared with each peer's, query by
query.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

import numpy as np

from benchmarks.harness import metrics
from benchmarks.harness.data import Query, load
from benchmarks.harness.metrics import SESSION_METRICS
from benchmarks.harness.runner import git_commit
from benchmarks.harness.script import paths
from benchmarks.harness.stats import paired_bootstrap
from benchmarks.replay import pool_levers
from benchmarks.replay.pool import K, leg_lists, rounded, scored, write_reports
from recallmesh.embedding_models.calibration import ScoreCalibration, calibration_for
from recallmesh.embedding_models.manifest import ModelManifest
from recallmesh.gateway import stages
from recallmesh.gateway.query_intent import route
from recallmesh.gateway.time_window import boost
from recallmesh.policy import DEFAULT_MIN_SCORE, FusionSettings, Overrides, RecallPolicy
from recallmesh.services.fusion.core import fuse
from recallmesh.wire.fusion import FusedCandidate

FOLDS = 5
METHODS = ("calibrated", "cc", "cc_bounded", "rrf")
LEXICAL_WEIGHTS = (0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 1.4)
CONTEXTS = ((0, 0.0, 0.0), (3, 0.3, 0.0), (5, 0.3, 0.2), (5, 0.5, 0.3))  # hits, next, prev
TIME_BOOSTS = (0.0, 1.0)
INTENT_ROUTING = (False, True)
MIN_SCORES = (0.0, DEFAULT_MIN_SCORE)  # the relevance floor: none, the shipped one
PEERS = ("peer_lancedb_hybrid", "peer_bm25", "hybrid_rrf")


@dataclass(frozen=True)
class Setting:
    method: str
    lexical_weight: float
    context: tuple[int, float, float]
    time_boost: float
    intent_routing: bool
    min_score: float = 0.0
    # calibrated fusion measuring cosine from each list's median (issue 27's), not from the
    # model's cosine floor (issue 39's)
    list_median: bool = False

    @property
    def label(self) -> str:
        n, nxt, prv = self.context
        return (f"{self.method}{' (median)' if self.list_median else ''} "
                f"lex {self.lexical_weight:g} "
                + (f"ctx {n}/{nxt:g}/{prv:g}" if n else "no ctx")
                + f" time {self.time_boost:g} "
                + ("intent" if self.intent_routing else "no intent")
                + (f" floor {self.min_score:g}" if self.min_score else ""))

    @property
    def ranking(self) -> Setting:
        """The setting that ranks as this one does (the floor only cuts the ranking)."""
        return replace(self, min_score=0.0)

    def policy(self) -> RecallPolicy:
        """The deployment policy this setting is (every other setting its built-in default)."""
        n, nxt, prv = self.context
        return RecallPolicy(method=self.method, context_hits=n, context_next_weight=nxt,
                            context_prev_weight=prv, time_boost=self.time_boost,
                            intent_routing=self.intent_routing, min_score=self.min_score,
                            weights={"lexical": self.lexical_weight, "vector": 1.0})

    @classmethod
    def of(cls, policy: RecallPolicy) -> Setting:
        return cls(policy.method, policy.weight("lexical"),
                   (policy.context_hits, policy.context_next_weight, policy.context_prev_weight),
                   policy.time_boost, policy.intent_routing, policy.min_score)


GRID = [Setting(*s) for s in itertools.product(METHODS, LEXICAL_WEIGHTS, CONTEXTS, TIME_BOOSTS,
                                                INTENT_ROUTING, MIN_SCORES)]
# The default before issue 27 (min-max convex combination, context by time proximity, here
# along threads), as a fixed setting.
PREVIOUS_DEFAULT = Setting("cc", 0.7, (5, 0.3, 0.2), 1.0, True)
# The default from issue 39 to issue 41 (context from the best 3 hits, next only).
ISSUE_41_DEFAULT = Setting("calibrated", 0.3, (3, 0.3, 0.0), 0.0, True, DEFAULT_MIN_SCORE)

@dataclass(frozen=True)
class Lever:
    """A lever: the grid's settings with it on / off, and, where the behaviour suite
    (tests/behaviour) needs it whatever the benchmarks say, why."""

    name: str
    on: Callable[[Setting], bool]
    off: Callable[[Setting], bool]
    needed_by: str = ""
    compares_methods: bool = False  # else: judged with the shipped fusion method only

    def verdict(self, oof: dict[str, list[float]], applies: dict[str, bool]) -> str:
        wins = [n for n, c in oof.items() if applies[n] and c[1] > 0]
        losses = [n for n, c in oof.items() if applies[n] and c[2] < 0]
        if losses:
            return "drop: clear loss on " + ", ".join(losses)
        if wins:
            return "keep: clear gain on " + ", ".join(wins)
        if self.needed_by:
            return f"keep: no clear loss, and {self.needed_by}"
        return "drop: no clear gain"


LEVERS = [
    Lever("fusion method calibrated (vs cc min-max)", lambda s: s.method == "calibrated",
          lambda s: s.method == "cc",
          "the behaviour suite needs it (min-max makes the best of a noise list a perfect "
          "match: every sensitive case fails under cc)", compares_methods=True),
    Lever("fusion method calibrated (vs RRF)", lambda s: s.method == "calibrated",
          lambda s: s.method == "rrf", compares_methods=True),
    Lever("fusion method calibrated (vs cc_bounded)", lambda s: s.method == "calibrated",
          lambda s: s.method == "cc_bounded", compares_methods=True),
    Lever("lexical weight tuned (vs 1)", lambda s: True, lambda s: s.lexical_weight == 1.0),
    Lever("context propagation along threads", lambda s: s.context[0] > 0,
          lambda s: s.context[0] == 0),
    Lever("time-window boost", lambda s: s.time_boost > 0, lambda s: s.time_boost == 0),
    Lever("query-intent routing", lambda s: s.intent_routing, lambda s: not s.intent_routing),
    Lever(f"relevance floor {DEFAULT_MIN_SCORE:g} (vs none)", lambda s: s.min_score > 0,
          lambda s: s.min_score == 0,
          "the behaviour suite needs it (its unanswerable questions must come back empty)"),
]


@dataclass
class Split:
    """One dev split's replay: per setting, per query, the primary metric and the ranking."""

    name: str
    primary: str
    pool: dict
    folds: np.ndarray  # fold index per query
    scores: dict[Setting, np.ndarray]  # primary metric per query
    rows: dict[Setting, list[dict]]  # the harness's metric rows per query


def fold_of(key: str, k: int) -> int:
    return int(hashlib.sha256(key.encode()).hexdigest(), 16) % k


def replay_split(pool: dict, dataset_dir: Path, grid: Iterable[Setting]) -> Split:
    """Every setting of `grid` replayed on every query of the pool."""
    ds = load(dataset_dir)
    by_id = {q.query_id: q for q in ds.queries}
    created = {m.corpus_id: m.created_at for ms in ds.scopes.values() for m in ms}
    queries = pool["queries"]
    clusters = sorted({by_id[q["query_id"]].cluster for q in queries} - {""})
    if clusters and len(clusters) <= 12:  # a conversation per fold
        index = {c: i for i, c in enumerate(clusters)}
        folds = np.array([index[by_id[q["query_id"]].cluster] for q in queries])
    else:
        folds = np.array([fold_of(q["query_id"], FOLDS) for q in queries])
    primary = metrics.primary(pool["dataset"])
    calibration = calibration_for(ModelManifest.load().model_id)
    fused_cache: dict[tuple, list] = {}
    scores: dict[Setting, np.ndarray] = {}
    rows: dict[Setting, list[dict]] = {}
    cuts: dict[Setting, list[Setting]] = {}  # ranking -> the settings that cut it
    for setting in grid:
        cuts.setdefault(setting.ranking, []).append(setting)
    for ranking, settings in cuts.items():
        out: dict[Setting, list[dict]] = {s: [] for s in settings}
        for q in queries:
            ranked, policy = served_ranking(pool, q, by_id[q["query_id"]], ranking, created,
                                            calibration, fused_cache)
            for s in settings:
                kept = stages.above_floor(  # as Recall
                    ranked, s.min_score, stages.scores_are_estimates(policy.method, calibration))
                out[s].append(scored(pool, q, [c.memory_id for c in kept]))
        for s in settings:
            rows[s] = out[s]
            scores[s] = np.array([r["metrics"][primary] for r in out[s]])
    return Split(pool["dataset"], primary, pool, folds, scores, rows)


def served_ranking(pool: dict, q: dict, query: Query, ranking: Setting,
                   created: dict[str, datetime | None], calibration: ScoreCalibration | None,
                   fused_cache: dict | None = None, k: int = K
                   ) -> tuple[list[FusedCandidate], RecallPolicy]:
    """One pool query served under `ranking` as the gateway serves it: the whole ranking (the
    top k after context propagation, each scored with its relevance estimate as Recall scores
    its k hits (stages.relevance_scores), then the rest of the fused list unscored, for the
    session-level recall that reads deeper); and the request's policy. k is Recall's (K) by
    default; Context recalls DEFAULT_CONTEXT_K."""
    routed = route(query.text) if ranking.intent_routing else None
    policy = ranking.policy().resolve(Overrides(), routed.overrides() if routed else None)
    weight = policy.weight("lexical")
    lists = leg_lists(q, policy.leg_depth, weight)
    if ranking.list_median:
        lists = [replace(lst, score_floor=None) for lst in lists]
    key = (q["query_id"], policy.method, weight, ranking.list_median)
    cache = fused_cache if fused_cache is not None else {}
    if key not in cache:
        cache[key] = fuse(lists, FusionSettings(
            method=policy.method, rrf_k=policy.rrf_k, importance_strength=0.0, exact_bonus=0.0))
    fused = stages.ties_by_estimate(cache[key], lists, calibration)  # as served
    plan = stages.plan(policy, lists, "relevance", query.text, query.reference_time)
    if plan.window is not None:
        fused = boost(fused, created, plan.window, plan.time_boost)[0]
    top = fused[:k]
    if plan.context_hits:
        top, _ = stages.propagate_context(
            fused, top, pool["next"], pool["prev"], plan.context_hits,
            plan.context_next_weight, plan.context_prev_weight, k)
    shown = {c.memory_id for c in top}
    scored_top = stages.relevance_scores(top, lists, policy.method, calibration)  # as served
    return [*scored_top, *(c for c in fused if c.memory_id not in shown)], policy


def best(splits: list[Split], grid: list[Setting],
         train: Callable[[Split], np.ndarray]) -> Setting:
    """The setting of `grid` with the best objective (mean over splits of the split's mean
    primary metric over its `train` mask); ties go to the earlier setting of the grid."""
    def objective(s: Setting) -> float:
        return float(np.mean([split.scores[s][train(split)].mean() for split in splits
                              if train(split).any()]))
    return max(grid, key=lambda s: (objective(s), -grid.index(s)))


def out_of_fold(splits: list[Split], grid: list[Setting]
                ) -> tuple[dict[str, np.ndarray], dict[str, list[str]], dict[str, list[dict]]]:
    """Per split, each query's primary metric under the setting chosen without its fold, the
    setting chosen per fold, and each query's whole metrics row under that setting."""
    scores = {split.name: np.zeros(len(split.folds)) for split in splits}
    chosen: dict[str, list[str]] = {split.name: [] for split in splits}
    rows: dict[str, list[dict]] = {split.name: [{}] * len(split.folds) for split in splits}
    for held in splits:
        for fold in sorted(set(held.folds.tolist())):
            mask = held.folds == fold
            pick = best(splits, grid,
                        lambda s, held=held, mask=mask: ~mask if s is held
                        else np.ones(len(s.folds), bool))
            scores[held.name][mask] = held.scores[pick][mask]
            chosen[held.name].append(pick.label)
            for i in np.flatnonzero(mask) if pick in held.rows else ():
                rows[held.name][i] = held.rows[pick][i]
    return scores, chosen, rows


def ci(deltas: np.ndarray) -> list[float]:
    interval = paired_bootstrap(deltas.tolist())
    return [interval.delta, interval.low, interval.high]


def fmt(c: list[float]) -> str:
    return f"{c[0]:+.3f} [{c[1]:+.3f}, {c[2]:+.3f}]"


def peer_scores(peers_dir: Path | None, split: Split) -> dict[str, np.ndarray]:
    """Each peer's served per-query primary metric, in the pool's query order, where a served
    run of this dataset is there (and holds every query of the pool)."""
    found = {}
    for peer in PEERS if peers_dir else ():
        path = peers_dir / split.name / f"{peer}.json"
        if not path.exists():
            continue
        results = {r["query_id"]: r["metrics"][split.primary]
                   for r in json.loads(path.read_text())["queries"]}
        ids = [q["query_id"] for q in split.pool["queries"]]
        if all(i in results for i in ids):
            found[peer] = np.array([results[i] for i in ids])
    return found


POOL_LEVERS = ("windows", "sentences")


def pool_lever_rows(splits: list[Split], datasets: Path, shipped: Setting,
                    levers: Iterable[str]) -> tuple[list[str], dict]:
    """The pool levers (benchmarks/replay/pool_levers.py) at the shipped setting: each split's
    variant against the exact `whole` variant of the same queries, paired."""
    levers = list(levers)
    if not levers:
        return [], {}
    vectors = pool_levers.StoredVectors()
    lines, report = [], {}
    for lever in levers:
        cells, deltas = [], {}
        for split in splits:
            if not pool_levers.applies(split.pool, lever):
                cells.append(f"| {lever} | {split.name} | - | - | - | - | not replayed "
                             "(pool_levers.py says why) |")
                continue
            ds = load(datasets / split.name)
            if not vectors.holds(ds):
                cells.append(f"| {lever} | {split.name} | - | - | - | - | not replayed: the vector "
                             f"store lacks the split (`python -m benchmarks embed-store --sets "
                             f"{split.name}`) |")
                continue
            only = pool_levers.sample_of(split.pool, lever)
            base = replay_split(pool_levers.variant(split.pool, ds, "whole", vectors, only),
                                datasets / split.name, [shipped])
            with_lever = replay_split(pool_levers.variant(split.pool, ds, lever, vectors, only),
                                      datasets / split.name, [shipped])
            a, b = base.scores[shipped], with_lever.scores[shipped]
            deltas[split.name] = ci(b - a)
            changed = bool(np.any(a != b))
            report.setdefault(lever, {})[split.name] = rounded({
                "queries": len(a), "whole": float(a.mean()), "lever": float(b.mean()),
                "delta": deltas[split.name], "changes_any_ranking": changed})
            cells.append(f"| {lever} | {split.name} ({split.primary}) | {len(a)} | "
                         f"{a.mean():.3f} | {b.mean():.3f} | "
                         + (fmt(deltas[split.name]) if changed else "no change") + " |")
            print(f"pool lever {lever} on {split.name}: {fmt(deltas[split.name])}", flush=True)
        wins = [n for n, c in deltas.items() if c[1] > 0]
        losses = [n for n, c in deltas.items() if c[2] < 0]
        verdict = ("drop: clear loss on " + ", ".join(losses) if losses else
                   "gain on " + ", ".join(wins) if wins else "drop: no clear gain")
        report.setdefault(lever, {})["verdict"] = verdict
        lines += [c if "not replayed" in c else f"{c} {verdict} |" for c in cells]
    return lines, report


def run(pool_paths: list[Path], datasets: Path, peers_dir: Path | None, json_to: Path | None,
        report_to: Path | None, levers: Iterable[str] = POOL_LEVERS) -> None:
    shipped = Setting.of(RecallPolicy.from_env())
    grid = list(dict.fromkeys([*GRID, shipped, PREVIOUS_DEFAULT, ISSUE_41_DEFAULT]))
    splits = []
    for path in pool_paths:
        pool = json.loads(path.read_text())
        if not any(q.get("scale") for q in pool["queries"]):
            raise SystemExit(f"{path}: dumped before the lexical leg reported its score scale; "
                             "dump it again (make the pool target)")
        splits.append(replay_split(pool, datasets / pool["dataset"], grid))
        print(f"{pool['dataset']}: {len(grid)} settings replayed", flush=True)
    everything = lambda s: np.ones(len(s.folds), bool)  # noqa: E731
    report: dict = {"git_commit": git_commit(), "timestamp": datetime.now().isoformat(),
                    "grid": {"methods": METHODS, "lexical_weights": LEXICAL_WEIGHTS,
                             "contexts": CONTEXTS, "time_boosts": TIME_BOOSTS,
                             "intent_routing": INTENT_ROUTING, "min_scores": MIN_SCORES},
                    "folds": {s.name: int(len(set(s.folds.tolist()))) for s in splits},
                    "shipped": shipped.label, "levers": {}, "datasets": {}}
    names = [s.name for s in splits]
    lines = ["# Levers by cross-validation (replayed dev pools)", "",
             "Generated by `make bench NAME=cross-validation` "
             "(benchmarks/replay/cross_validation.py; its docstring says",
             "what is replayed and how folds and procedures work). Folds: "
             + ", ".join(f"{s.name} {report['folds'][s.name]}" for s in splits)
             + f". Grid: {len(grid)} settings (methods {', '.join(METHODS)}; lexical weights "
             f"{', '.join(f'{w:g}' for w in LEXICAL_WEIGHTS)}; context (hits/next/prev) "
             + ", ".join(f"{n}/{a:g}/{b:g}" for n, a, b in CONTEXTS)
             + f"; time boost {', '.join(f'{b:g}' for b in TIME_BOOSTS)}; intent routing "
             "off/on; relevance floor " + ", ".join(f"{f:g}" for f in MIN_SCORES) + ").", "",
             "## Levers: in-sample and out-of-fold effects", "",
             "| lever | " + " | ".join(f"{n} in-sample Δ" for n in names) + " | "
             + " | ".join(f"{n} out-of-fold Δ [95% CI]" for n in names) + " | verdict |",
             "|---|" + "---:|" * (2 * len(names)) + "---|"]
    method_grid = [s for s in grid if s.method == shipped.method]
    for lever in LEVERS:
        name = lever.name
        pool_of = grid if lever.compares_methods else method_grid
        with_grid = [s for s in pool_of if lever.on(s)]
        without_grid = [s for s in pool_of if lever.off(s)]
        best_on, best_off = best(splits, with_grid, everything), best(splits, without_grid,
                                                                      everything)
        oof_on, _, _ = out_of_fold(splits, with_grid)
        oof_off, _, _ = out_of_fold(splits, without_grid)
        in_sample = {s.name: float(s.scores[best_on].mean() - s.scores[best_off].mean())
                     for s in splits}
        oof = {s.name: ci(oof_on[s.name] - oof_off[s.name]) for s in splits}
        applies = {s.name: bool(np.any(oof_on[s.name] != oof_off[s.name])) for s in splits}
        verdict = lever.verdict(oof, applies)
        report["levers"][name] = rounded({"in_sample": in_sample, "out_of_fold": oof,
                                          "changes_any_ranking": applies,
                                          "best_on": best_on.label, "best_off": best_off.label,
                                          "verdict": verdict})
        lines.append(f"| {name} | " + " | ".join(f"{in_sample[n]:+.3f}" for n in names) + " | "
                     + " | ".join(fmt(oof[n]) if applies[n] else "no change" for n in names)
                     + f" | {verdict} |")
    oof_all, _, _ = out_of_fold(splits, grid)
    oof_method, chosen_method, oof_rows = out_of_fold(splits, method_grid)
    best_all = best(splits, grid, everything)
    best_method = best(splits, method_grid, everything)
    lines += ["", "## The default, in sample and out of fold", "",
              f"Shipped default: `{shipped.label}`. Best setting on all queries of all splits "
              f"(in sample): `{best_all.label}`; with the shipped fusion method "
              f"(`{shipped.method}`: the behaviour suite rules out the others): "
              f"`{best_method.label}`. Previous default (issue 26): "
              f"`{PREVIOUS_DEFAULT.label}`. Out of fold: the procedure that tunes every "
              f"setting of the grid on the other folds (full grid), and the one the default "
              f"comes from, which tunes only the settings with the shipped method.", "",
              "| split | queries | shipped default (in sample) | previous default | "
              "full grid out of fold | shipped method's grid out of fold | out of fold "
              "(shipped method) − previous default | shipped − issue 41's default "
              f"(`{ISSUE_41_DEFAULT.label}`) | settings chosen per fold (shipped "
              "method) |", "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for split in splits:
        shipped_score = split.scores[shipped].mean()
        previous = split.scores[PREVIOUS_DEFAULT]
        oof = oof_method[split.name]
        picks = sorted(set(chosen_method[split.name]))
        report["datasets"][split.name] = rounded({
            "primary": split.primary, "queries": len(oof), "shipped": float(shipped_score),
            "previous_default": float(previous.mean()),
            "out_of_fold_full_grid": float(oof_all[split.name].mean()),
            "out_of_fold": float(oof.mean()),
            "out_of_fold_minus_previous": ci(oof - previous),
            "chosen_per_fold": chosen_method[split.name],
            "best_in_sample": {s.label: float(split.scores[s].mean()) for s in sorted(
                grid, key=lambda s: -split.scores[s].mean())[:5]}})
        since_41 = ci(split.scores[shipped] - split.scores[ISSUE_41_DEFAULT])
        report["datasets"][split.name]["shipped_minus_issue_41_default"] = rounded(since_41)
        lines.append(f"| {split.name} ({split.primary}) | {len(oof)} | {shipped_score:.3f} | "
                     f"{previous.mean():.3f} | {oof_all[split.name].mean():.3f} | "
                     f"{oof.mean():.3f} | {fmt(ci(oof - previous))} | {fmt(since_41)} | "
                     + "; ".join(f"`{p}`" for p in picks) + " |")
    peer_lines = []
    for split in splits:
        for peer, theirs in peer_scores(peers_dir, split).items():
            delta = ci(oof_method[split.name] - theirs)
            report["datasets"][split.name].setdefault("out_of_fold_minus_peer", {})[peer] = (
                rounded(delta))
            peer_lines.append(f"| {split.name} | {peer} | {theirs.mean():.3f} | "
                              f"{oof_method[split.name].mean():.3f} | {fmt(delta)} |")
    if peer_lines:
        lines += ["", "## Out of fold against the peers' served runs", "",
                  "Each peer's per-query scores from its served run (`python -m benchmarks run`, "
                  "benchmarks/results/<split>/<peer>.json), paired with the out-of-fold score "
                  "of the same query (the shipped method's grid).", "",
                  "| split | peer | peer | out of fold | Δ [95% CI] |",
                  "|---|---|---:|---:|---:|", *peer_lines]
    lever_lines, report["pool_levers"] = pool_lever_rows(splits, datasets, shipped, levers)
    if lever_lines:
        lines += ["", "## Levers that change the candidates (pool variants)", "",
                  "benchmarks/replay/pool_levers.py: each split's vector lists computed again "
                  "exactly from the stored vectors, with the lever (`windows`: memories longer "
                  "than the model's window also scored by their further windows; `sentences`: "
                  "multi-sentence memories also scored by each sentence; max-sim per memory) "
                  "and without it (`whole`), both served at the shipped setting and paired by "
                  "query. Nothing is tuned on these rows, so they are out of fold as they "
                  "stand. `sentences` runs on a seeded sample of "
                  f"{pool_levers.SENTENCE_SAMPLE} queries per split.", "",
                  "| lever | split | queries | whole | with the lever | Δ [95% CI] | verdict |",
                  "|---|---|---:|---:|---:|---:|---|", *lever_lines]
    session_lines = []
    for split in splits:
        if not any(q["relevant_sessions"] for q in split.pool["queries"]):
            continue
        for metric in SESSION_METRICS:
            oof = np.array([r["metrics"][metric] for r in oof_rows[split.name]])
            shipped_rows = np.array([r["metrics"][metric] for r in split.rows[shipped]])
            cells = []
            for peer in PEERS if peers_dir else ():
                path = peers_dir / split.name / f"{peer}.json"
                theirs = {r["query_id"]: r["metrics"].get(metric)
                          for r in json.loads(path.read_text())["queries"]
                          } if path.exists() else {}
                ids = [q["query_id"] for q in split.pool["queries"]]
                if ids and all(theirs.get(i) is not None for i in ids):
                    delta = ci(oof - np.array([theirs[i] for i in ids]))
                    cells.append(f"{peer} {np.mean([theirs[i] for i in ids]):.3f} "
                                 f"(Δ {fmt(delta)})")
                    report["datasets"][split.name].setdefault(
                        "session_minus_peer", {}).setdefault(metric, {})[peer] = rounded(delta)
            report["datasets"][split.name].setdefault("session", {})[metric] = rounded({
                "shipped": float(shipped_rows.mean()), "out_of_fold": float(oof.mean())})
            session_lines.append(f"| {split.name} | {metric} | {shipped_rows.mean():.3f} | "
                                 f"{oof.mean():.3f} | " + ("; ".join(cells) or "-") + " |")
    if session_lines:
        lines += ["", "## Session-level recall (LongMemEval's official turn-to-session metric)",
                  "", "benchmarks/harness/metrics.py `session_metrics`: each ranked turn mapped "
                  "to its session, the cut-off widened until k distinct sessions are above it. "
                  "The replay reads the whole fused ranking (up to the pool's depth of 100 per "
                  "leg); the out-of-fold column takes the settings the shipped method's grid "
                  "chose per fold. A peer is compared where its served run holds the metric "
                  "(runs since issue 42 ask for 50 hits on a dataset with sessions).", "",
                  "| split | metric | shipped default (in sample) | out of fold | peers |",
                  "|---|---|---:|---:|---|", *session_lines]
    lines.append("")
    write_reports(report, lines, json_to, report_to)
    print("\n".join(lines), flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.replay.cross_validation")
    parser.add_argument("--pools", type=paths, required=True, help="comma-separated pool files")
    parser.add_argument("--datasets", type=Path, required=True, help="folder of dataset folders")
    parser.add_argument("--peers", type=Path, help="folder of served runs (per dataset)")
    parser.add_argument("--json-to", type=Path)
    parser.add_argument("--report-to", type=Path)
    parser.add_argument("--pool-levers", default=",".join(POOL_LEVERS),
                        help="comma-separated pool levers to replay (pool_levers.py; '' for "
                             "none: they need the served model's vectors in the vector store)")
    args = parser.parse_args(argv)
    run(args.pools, args.datasets, args.peers, args.json_to, args.report_to,
        [lever for lever in args.pool_levers.split(",") if lever])


if __name__ == "__main__":
    main()
