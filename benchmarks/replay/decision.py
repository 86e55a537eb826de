"""The decision table: which ranker is the default, by the rule of
docs/decisions/0012-ranking-apart-from-scoring.md, with the evidence by cluster.

  python -m benchmarks decision            (pools dumped first where missing)
  python -m benchmarks.replay.decision --pools P1,P2,... [--peers benchmarks/results] \
      [--json-to benchmarks/reports/decision.json] [--report-to benchmarks/reports/decision.md]

Each split's candidate pool (benchmarks/replay/pool.py) is replayed under every setting of
GRID with the gateway's own code (benchmarks/replay/cross_validation.py `replay_split`: fusion,
time window, context propagation), the relevance floor off: this table is about the order.

Clusters are what the next user's data resembles as a whole: a LoCoMo conversation, a
LongMemEval question's haystack, a SciFact, XQuAD or MADial question (MADial's two users are
too few to resample: its dialogues are its clusters). Every interval is a cluster bootstrap
(benchmarks/harness/stats.py `cluster_bootstrap`), and next to it the count of clusters whose
mean goes up and down.

Every tuned setting is chosen out of fold: a *family* is a ranker (fusion method) with its
settings (lexical weight, context propagation, time-window boost) tuned on the other folds
(LoCoMo: leave one conversation out; the other splits: FOLDS folds of clusters) and scored on
the held-out fold; the objective is the mean over all splits of each split's primary metric.

The rule, applied by `decide`:
  1. A family replaces the shipped default only when it wins on every split at the cluster
     level (its mean is higher and it raises more clusters than it lowers) and clearly loses
     on none (cluster interval below 0).
  2. Otherwise the families that tie with the shipped default (no interval clear of 0 either
     way, on any split) are candidates with it, and the simplest stays (SIMPLICITY).
  3. Within the family kept, the setting shipped is the simplest of those that tie with the
     family's best setting on all queries (same test); a tie on simplicity goes to the higher
     objective.
"""

from __future__ import annotations

import argparse
import itertools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np

from benchmarks.harness.data import dataset_path
from benchmarks.harness.runner import git_commit
from benchmarks.harness.script import paths
from benchmarks.harness.stats import cluster_bootstrap
from benchmarks.replay.cross_validation import (
    ISSUE_41_DEFAULT,
    PEERS,
    PREVIOUS_DEFAULT,
    Setting,
    Split,
    best,
    out_of_fold,
    peer_scores,
    replay_split,
)
from benchmarks.replay.pool import rounded, write_reports

# The rankers and the settings tuned with them.
FAMILIES = {
    "cc": {"method": "cc"},
    "calibrated": {"method": "calibrated"},
    "calibrated (median)": {"method": "calibrated", "list_median": True},
    "rrf": {"method": "rrf"},
}
LEXICAL_WEIGHTS = (0.3, 0.5, 0.7, 1.0)
CONTEXTS = ((0, 0.0, 0.0), (5, 0.3, 0.2))
TIME_BOOSTS = (0.0, 1.0)


def family_grid(family: str) -> list[Setting]:
    spec = FAMILIES[family]
    return [Setting(spec["method"], w, ctx, tb, True, list_median=spec.get("list_median", False))
            for w, ctx, tb in itertools.product(LEXICAL_WEIGHTS, CONTEXTS, TIME_BOOSTS)]


GRID = [s for family in FAMILIES for s in family_grid(family)]

# The defaults shipped before, as fixed settings.
SHIPPED_BEFORE = Setting("calibrated", 0.3, (5, 0.3, 0.2), 0.0, True)  # issues 42-54
ISSUE_27_DEFAULT = Setting("calibrated", 0.3, (5, 0.3, 0.2), 0.0, True, list_median=True)
EARLIER = {
    "shipped before issue 55 (calibrated, cosine floor, lexical 0.3)": SHIPPED_BEFORE,
    "default_previous (cc, lexical 0.7, time 1)": PREVIOUS_DEFAULT,
    "issue 27's (calibrated, list median, lexical 0.3)": ISSUE_27_DEFAULT,
    "issue 41's (calibrated, context 3/0.3/0)": ISSUE_41_DEFAULT,
}

# How simple a setting is: the fewer values fitted to data and stages switched on, the
# simpler. RRF reads ranks only; cc a list's min and max; calibrated (median) a leg's score
# scale and the list's median; calibrated the scale and a cosine floor fitted per model.
METHOD_SIMPLICITY = {("rrf", False): 0, ("cc", False): 1, ("calibrated", True): 2,
                     ("calibrated", False): 3}


def simplicity(s: Setting) -> int:
    """Lower is simpler: the method's rank, + 3 for context propagation (three values),
    + 1 for the time-window boost."""
    return (METHOD_SIMPLICITY.get((s.method, s.list_median), 4) + (3 if s.context[0] else 0)
            + (1 if s.time_boost else 0))


@dataclass(frozen=True)
class Versus:
    """`a` minus `b` on one split, by cluster."""

    delta: float
    low: float
    high: float
    up: int  # clusters whose mean rose
    down: int  # and fell

    @property
    def clear_loss(self) -> bool:
        return self.high < 0

    @property
    def clear_win(self) -> bool:
        return self.low > 0

    @property
    def wins(self) -> bool:
        return self.delta > 0 and self.up > self.down

    def cell(self) -> str:
        return (f"{self.delta:+.3f} [{self.low:+.3f}, {self.high:+.3f}] "
                f"{self.up}↑ {self.down}↓")

    def json(self) -> list:
        return rounded([self.delta, self.low, self.high, self.up, self.down])


def versus(a: np.ndarray, b: np.ndarray, clusters: Sequence[str]) -> Versus:
    d = a - b
    interval = cluster_bootstrap(d.tolist(), list(clusters))
    names = sorted(set(clusters))
    ids = np.array([names.index(c) for c in clusters])
    means = np.bincount(ids, weights=d, minlength=len(names)) / np.bincount(ids)
    return Versus(interval.delta, interval.low, interval.high, int((means > 1e-12).sum()),
                  int((means < -1e-12).sum()))


# Sets whose own clusters are too few to resample: their questions are the clusters.
QUESTION_CLUSTERS = ("madial_en", "madial_zh")


def clusters_of(split: Split) -> list[str]:
    queries = split.pool["queries"]
    if split.name in QUESTION_CLUSTERS:
        return [q["query_id"] for q in queries]
    return [q.get("cluster") or q["query_id"] for q in queries]


def objective(splits: list[Split], s: Setting) -> float:
    return float(np.mean([split.scores[s].mean() for split in splits]))


def ties(splits: list[Split], a: Callable[[Split], np.ndarray],
         b: Callable[[Split], np.ndarray]) -> bool:
    """No split's cluster interval clear of 0, either way."""
    for split in splits:
        v = versus(a(split), b(split), clusters_of(split))
        if v.clear_win or v.clear_loss:
            return False
    return True


def decide(splits: list[Split], oof: dict[str, dict[str, np.ndarray]], incumbent: Setting
           ) -> tuple[str, Setting, list[str]]:
    """The family and the setting the rule keeps, and why (module docstring)."""
    inc = lambda split: split.scores[incumbent]  # noqa: E731
    why = []
    winners = []
    for family, scores in oof.items():
        vs = [versus(scores[s.name], inc(s), clusters_of(s)) for s in splits]
        if all(v.wins for v in vs) and not any(v.clear_loss for v in vs):
            winners.append(family)
    if winners:
        family = max(winners, key=lambda f: float(np.mean([oof[f][s.name].mean()
                                                           for s in splits])))
        why.append(f"rule 1: `{family}` wins on every split at the cluster level and clearly "
                   "loses on none")
    else:
        tied = [f for f, scores in oof.items()
                if ties(splits, lambda s, scores=scores: scores[s.name], inc)]
        home = next(f for f, spec in FAMILIES.items()
                    if spec["method"] == incumbent.method
                    and spec.get("list_median", False) == incumbent.list_median)
        pool = list(dict.fromkeys([home, *tied]))
        family = min(pool, key=lambda f: (METHOD_SIMPLICITY[(
            FAMILIES[f]["method"], FAMILIES[f].get("list_median", False))], f != home))
        why.append("rule 1: no family wins on every split; rule 2: tied with the shipped "
                   f"default: {', '.join(f'`{f}`' for f in tied) or 'none'}; the simplest "
                   f"of those and the shipped one's (`{home}`) stays: `{family}`")
    grid = family_grid(family)
    top = best(splits, grid, lambda s: np.ones(len(s.folds), bool))
    tying = [s for s in grid
             if ties(splits, lambda sp, s=s: sp.scores[s], lambda sp: sp.scores[top])]
    chosen = min(tying, key=lambda s: (simplicity(s), -objective(splits, s)))
    why.append(f"rule 3: the family's best on all queries is `{top.label}`; of the "
               f"{len(tying)} settings tied with it the simplest is `{chosen.label}`")
    return family, chosen, why


def run(pool_paths: list[Path], peers_dir: Path | None, json_to: Path | None,
        report_to: Path | None) -> None:
    grid = list(dict.fromkeys([*GRID, *EARLIER.values()]))
    splits = []
    for path in pool_paths:
        pool = json.loads(path.read_text())
        splits.append(replay_split(pool, dataset_path(pool["dataset"]), grid))
        print(f"{pool['dataset']}: {len(grid)} settings replayed", flush=True)
    oof = {}
    chosen_per_fold = {}
    for family in FAMILIES:
        scores, chosen, _ = out_of_fold(splits, family_grid(family))
        oof[family] = scores
        chosen_per_fold[family] = chosen
        print(f"family {family}: out of fold done", flush=True)
    family, shipped, why = decide(splits, oof, SHIPPED_BEFORE)

    names = [s.name for s in splits]
    head = "| compared with the new default | " + " | ".join(
        f"{s.name} ({s.primary}, {len(set(clusters_of(s)))} clusters)" for s in splits) + " |"
    rule = "|---|" + "---:|" * len(splits)
    lines = [
        "# The default by the decision rule (cluster-level evidence)", "",
        "Generated by `python -m benchmarks decision` (benchmarks/replay/decision.py: its "
        "docstring says what is replayed, what a cluster is and the rule; the rule's reasons: "
        "docs/decisions/0012-ranking-apart-from-scoring.md). Each cell: Δ = the new default "
        "minus the row, mean [cluster bootstrap 95% CI], clusters up ↑ / down ↓. Ranking "
        "only: the relevance floor is off in every row.", "",
        f"**Decision**: `{shipped.label}` (family `{family}`).", "",
        *[f"- {w}" for w in why], "",
        "## The new default against earlier defaults and families", "",
        "| split | queries | new default |",
        "|---|---:|---:|",
        *[f"| {s.name} ({s.primary}) | {len(s.folds)} | {s.scores[shipped].mean():.3f} |"
          for s in splits], "",
        head, rule]
    report: dict = {"git_commit": git_commit(), "timestamp": datetime.now().isoformat(),
                    "decision": {"family": family, "setting": shipped.label, "why": why},
                    "splits": {s.name: {"queries": len(s.folds),
                                        "clusters": len(set(clusters_of(s))),
                                        "primary": s.primary,
                                        "new_default": round(float(s.scores[shipped].mean()),
                                                             4)}
                               for s in splits},
                    "versus": {}}
    rows: dict[str, Callable[[Split], np.ndarray]] = {
        **{name: (lambda sp, s=s: sp.scores[s]) for name, s in EARLIER.items()},
        **{f"`{f}` tuned out of fold": (lambda sp, f=f: oof[f][sp.name]) for f in FAMILIES},
    }
    for name, scores_of in rows.items():
        vs = [versus(s.scores[shipped], scores_of(s), clusters_of(s)) for s in splits]
        lines.append(f"| {name} | " + " | ".join(v.cell() for v in vs) + " |")
        report["versus"][name] = {s.name: v.json() for s, v in zip(splits, vs, strict=True)}
    peer_lines = []
    for split in splits:
        for peer, scores in peer_scores(peers_dir, split).items():
            v = versus(split.scores[shipped], scores, clusters_of(split))
            peer_lines.append(f"| {split.name} | {peer} | {scores.mean():.3f} | "
                              f"{split.scores[shipped].mean():.3f} | {v.cell()} |")
            report["versus"].setdefault(peer, {})[split.name] = v.json()
    if peer_lines:
        lines += ["", "## The new default against the peers' served runs", "",
                  "Each peer's per-query scores from its served run (`python -m benchmarks "
                  "run`, benchmarks/results/<split>/<peer>.json) against the new default "
                  f"replayed on the same queries. Peers looked for: {', '.join(PEERS)}.", "",
                  "| split | peer | peer | new default | Δ [cluster CI] ↑↓ |",
                  "|---|---|---:|---:|---:|", *peer_lines]
    lines += ["", "## Settings chosen per fold (out of fold)", "",
              "| family | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for family in FAMILIES:
        per_split = []
        for split in splits:
            picks = chosen_per_fold[family][split.name]
            counts = {p: picks.count(p) for p in dict.fromkeys(picks)}
            per_split.append("; ".join(f"`{p}` ×{n}" for p, n in counts.items()))
        lines.append(f"| {family} | " + " | ".join(per_split) + " |")
        report.setdefault("chosen_per_fold", {})[family] = chosen_per_fold[family]
    lines.append("")
    write_reports(report, lines, json_to, report_to)
    print("\n".join(lines[:12]))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.replay.decision",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--pools", type=paths, required=True, help="comma-separated pools")
    parser.add_argument("--peers", type=Path, help="folder of served runs (<split>/<peer>.json)")
    parser.add_argument("--json-to", type=Path)
    parser.add_argument("--report-to", type=Path)
    args = parser.parse_args(argv)
    run(args.pools, args.peers, args.json_to, args.report_to)


if __name__ == "__main__":
    main()
