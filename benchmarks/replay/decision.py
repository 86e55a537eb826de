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

The rule, applied by `decide` to every setting of GRID against the shipped default (a
setting is *clearly ahead* on a split when the cluster interval of its difference lies above
0, *clearly behind* when below; it *wins* a split when its mean is higher and it raises more
clusters than it lowers, and is *ahead* when its mean is not lower and it lowers no more
clusters than it raises):
  0. The shipped default must not be dominated: when settings are clearly ahead of it on a
     split and clearly behind on none, it changes to one of them: of those that no other of
     them dominates, and whose family tuned out of fold is clearly behind it on no split, the
     simplest (`simplicity`), then the best objective.
  1. Otherwise a setting replaces it only when it is ahead on every split, wins on at least
     one, clearly loses on none, and its family tuned out of fold clearly loses on none.
  2. Otherwise the settings that tie with it (ahead on every split, clearly ahead on none) are
     candidates with it, and the simplest stays; a tie on simplicity goes to the shipped one.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np

from benchmarks.harness.data import dataset_path
from benchmarks.harness.runner import git_commit
from benchmarks.harness.script import pools_parser
from benchmarks.harness.stats import cluster_bootstrap
from benchmarks.replay.cross_validation import (
    ISSUE_41_DEFAULT,
    PEERS,
    PREVIOUS_DEFAULT,
    Setting,
    Split,
    out_of_fold,
    peer_scores,
    replay_split,
)
from benchmarks.replay.pool import rounded, write_reports
from recallmesh.policy import RecallPolicy

# The rankers and the settings tuned with them.
FAMILIES = {
    # the vector leg's own order, the baseline every fusion must beat (issue 66): one setting
    "vector alone": {"method": "cc", "weights": (0.0,), "contexts": ((0, 0.0, 0.0),),
                     "time_boosts": (0.0,), "intent": False},
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
    return [Setting(spec["method"], w, ctx, tb, spec.get("intent", True),
                    list_median=spec.get("list_median", False))
            for w, ctx, tb in itertools.product(spec.get("weights", LEXICAL_WEIGHTS),
                                                spec.get("contexts", CONTEXTS),
                                                spec.get("time_boosts", TIME_BOOSTS))]


GRID = [s for family in FAMILIES for s in family_grid(family)]

# The shipped default (its ranking: the relevance floor only cuts it), the incumbent of the rule.
SHIPPED = Setting.of(RecallPolicy()).ranking
# The defaults shipped before, as fixed settings.
SHIPPED_BEFORE = Setting("calibrated", 0.3, (5, 0.3, 0.2), 0.0, True)  # issues 42-54
ISSUE_27_DEFAULT = Setting("calibrated", 0.3, (5, 0.3, 0.2), 0.0, True, list_median=True)
EARLIER = {
    "shipped before issue 66 (cc, lexical 1)": SHIPPED,
    "shipped before issue 55 (calibrated, cosine floor, lexical 0.3)": SHIPPED_BEFORE,
    "default_previous (cc, lexical 0.7, time 1)": PREVIOUS_DEFAULT,
    "issue 27's (calibrated, list median, lexical 0.3)": ISSUE_27_DEFAULT,
    "issue 41's (calibrated, context 3/0.3/0)": ISSUE_41_DEFAULT.ranking,  # no floor: order
}

# How simple a setting is: the fewer values fitted to data and stages switched on, the
# simpler. RRF reads ranks only; cc a list's min and max; calibrated (median) a leg's score
# scale and the list's median; calibrated the scale and a cosine floor fitted per model.
# The vector leg alone reads one leg's order and nothing else: simpler than any fusion.
METHOD_SIMPLICITY = {("rrf", False): 0, ("cc", False): 1, ("calibrated", True): 2,
                     ("calibrated", False): 3}


def simplicity(s: Setting) -> int:
    """Lower is simpler: the method's rank, + 3 for context propagation (three values),
    + 1 for the time-window boost."""
    if s.lexical_weight == 0:
        return -1
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

    @property
    def ahead(self) -> bool:
        """Not behind: a mean at least as high, as many clusters up as down (a split that
        ranks both alike is no evidence against it)."""
        return self.delta >= -1e-12 and self.up >= self.down

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


def family_of(s: Setting) -> str:
    if s.lexical_weight == 0:
        return "vector alone"
    return next(f for f, spec in FAMILIES.items() if "weights" not in spec
                and spec["method"] == s.method and spec.get("list_median", False) == s.list_median)


def decide(splits: list[Split], oof: dict[str, dict[str, np.ndarray]], incumbent: Setting,
           grid: list[Setting]) -> tuple[Setting, list[str]]:
    """The setting the rule keeps, and why (module docstring)."""
    def against(a: Callable[[Split], np.ndarray], b: Callable[[Split], np.ndarray]
                ) -> list[Versus]:
        return [versus(a(sp), b(sp), clusters_of(sp)) for sp in splits]

    def of(s: Setting) -> Callable[[Split], np.ndarray]:
        return lambda sp: sp.scores[s]

    def dominates(a: Setting, b: Setting) -> bool:
        vs = against(of(a), of(b))
        return any(v.clear_win for v in vs) and not any(v.clear_loss for v in vs)

    def holds_out_of_fold(s: Setting) -> bool:
        """Its family, tuned out of fold, clearly loses to the incumbent on no split."""
        return not any(v.clear_loss for v in against(
            lambda sp: oof[family_of(s)][sp.name], of(incumbent)))

    why = []
    dominating = [s for s in grid if s != incumbent and dominates(s, incumbent)]
    if dominating:
        front = [s for s in dominating if holds_out_of_fold(s)
                 and not any(dominates(t, s) for t in dominating if t != s)]
        chosen = min(front or dominating, key=lambda s: (simplicity(s), -objective(splits, s)))
        why.append(f"rule 0: the shipped default is dominated: {len(dominating)} setting(s) are "
                   "clearly ahead of it at the cluster level on a split and clearly behind on "
                   f"none; of those that no other of them dominates and whose family holds out "
                   f"of fold ({len(front)}), the simplest: `{chosen.label}`")
        return chosen, why
    winners = [s for s in grid if s != incumbent and holds_out_of_fold(s)
               and all(v.ahead for v in against(of(s), of(incumbent)))
               and any(v.wins for v in against(of(s), of(incumbent)))
               and not any(v.clear_loss for v in against(of(s), of(incumbent)))]
    if winners:
        chosen = max(winners, key=lambda s: objective(splits, s))
        why.append(f"rule 1: {len(winners)} setting(s) win on every split at the cluster level "
                   "and clearly lose on none (their family, tuned out of fold, clearly loses "
                   f"on none either); the best of them: `{chosen.label}`")
        return chosen, why
    tied = [s for s in grid if s != incumbent
            and all(v.ahead and not v.clear_win for v in against(of(s), of(incumbent)))]
    chosen = min([incumbent, *tied],
                 key=lambda s: (simplicity(s), s != incumbent, -objective(splits, s)))
    why.append("rule 0: no setting dominates the shipped default; rule 1: none wins on every "
               f"split; rule 2: {len(tied)} setting(s) tie with it on every split; the "
               f"simplest of them and the shipped one stays: `{chosen.label}`")
    return chosen, why


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
    shipped, why = decide(splits, oof, SHIPPED, GRID)
    family = family_of(shipped)

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
    parser = pools_parser("python -m benchmarks.replay.decision", __doc__)
    parser.add_argument("--peers", type=Path, help="folder of served runs (<split>/<peer>.json)")
    args = parser.parse_args(argv)
    run(args.pools, args.peers, args.json_to, args.report_to)


if __name__ == "__main__":
    main()
