"""What Context packs, by rule: the curve of the answer kept against the items packed, on the
evidence sets (docs/decisions/0014-context-by-relevance.md).

  python -m benchmarks context-curve        (pools dumped first where missing)
  python -m benchmarks.quality.context_curve --pools P1,P2,... \
      [--json-to benchmarks/reports/context_curve.json] \
      [--report-to benchmarks/reports/context_curve.md]

Each split's pool (benchmarks/replay/pool.py) is served as Context recalls: the shipped ranking
(RecallPolicy.from_env()) with Context's k (DEFAULT_CONTEXT_K), each hit scored with its
relevance estimate out of fold (benchmarks/quality/relevance.py: `split_rows` at Context's
depth, `out_of_fold` fitted on each list's top K as the shipped model is, made non-increasing
down the list as the gateway serves it). Every question is asked: the answerable ones, and
those nothing answers (the set's own unanswerable questions; each question asked in another
namespace, `foreign`; and of another set's corpus, `elsewhere`).

A rule says which recalled hits are candidates (estimates never rise down the list, so every
rule here keeps a prefix); the candidates are then packed by the gateway's own
`context_block.pack` into the default token budget (DEFAULT_CONTEXT_TOKENS), counted with the
embedding model's tokenizer (TokenCounter.load), undated (the date a temporal question adds
to each line, a few tokens, is left out). Per split and rule:

- answer kept: the answerable questions' share of their relevant memories packed (one
  relevant memory: whether it is packed), its ratio to today's, and the difference by cluster
  (benchmarks/harness/stats.py `cluster_bootstrap`; clusters as in decision.md) with the
  count of clusters up and down;
- items: the mean items packed per answerable question, and the share of them relevant;
- empty: the share of the questions nothing answers whose block is empty, per kind.

`today` is what Context packed before issue 56: every hit at or above the recall floor
(min_score). The rule shipped is stated in the decision record; the report marks it and checks
the issue's constraint: the answer kept at least MIN_KEPT_RATIO as often as today on every
split.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.harness.data import dataset_path, load
from benchmarks.harness.runner import git_commit
from benchmarks.harness.script import pools_parser
from benchmarks.harness.stats import cluster_bootstrap
from benchmarks.quality.relevance import Rows, out_of_fold, split_rows
from benchmarks.replay.cross_validation import Setting
from benchmarks.replay.decision import QUESTION_CLUSTERS
from benchmarks.replay.pool import K, rounded, write_reports
from recallmesh.embedding_models.calibration import calibration_for
from recallmesh.embedding_models.manifest import ModelManifest
from recallmesh.gateway.context_block import TokenCounter, pack
from recallmesh.policy import DEFAULT_MIN_SCORE, RecallPolicy
from recallmesh.wire.memory_fields import StoredMemory
from recallmesh.wire.validation import DEFAULT_CONTEXT_K, DEFAULT_CONTEXT_TOKENS

MIN_KEPT_RATIO = 0.95  # the constraint: the answer kept at least this often as today
OFF_TOPIC = ("unanswerable", "foreign", "elsewhere")
EPOCH = datetime(2026, 1, 1, tzinfo=UTC)

# A rule: the estimates of a question's hits (non-increasing) -> how many are candidates.
Rule = Callable[[list[float]], int]


def at_least(floor: float) -> Rule:
    return lambda p: sum(1 for v in p if v >= floor)


def top_n(n: int) -> Rule:
    return lambda p: min(n, at_least(DEFAULT_MIN_SCORE)(p))


def relative(share: float) -> Rule:
    """At least `share` of the first hit's estimate (and the floor)."""
    return lambda p: sum(1 for v in p if p and v >= max(share * p[0], DEFAULT_MIN_SCORE))


def expected_irrelevant(limit: float) -> Rule:
    """Down the list while the packed hits' expected count of irrelevant ones (sum of 1 - p)
    stays within `limit` (and the floor)."""
    def rule(p: list[float]) -> int:
        n, wasted = 0, 0.0
        for v in p:
            wasted += 1 - v
            if v < DEFAULT_MIN_SCORE or wasted > limit:
                break
            n += 1
        return n
    return rule


def mass(share: float) -> Rule:
    """The fewest hits above the floor whose estimates sum to at least `share` of the sum over
    every hit above the floor: by calibration, the block then holds that share of the relevant
    memories today's would hold, question by question."""
    def rule(p: list[float]) -> int:
        above = [v for v in p if v >= DEFAULT_MIN_SCORE]
        total, n, held = sum(above), 0, 0.0
        while n < len(above) and held < share * total - 1e-12:
            held += above[n]
            n += 1
        return n
    return rule


TODAY = "today: estimate >= floor"
SHIPPED = TODAY  # docs/decisions/0014: no candidate meets the constraint with far fewer items
# The rules the summary table shows next to today's: each family's point nearest the constraint.
HEADLINE = ("estimate >= 0.1", "estimate >= 0.5", "top 3",
            "estimate >= 0.25 x the first's", "expected irrelevant <= 2",
            "estimates' mass >= 0.9 of today's")
RULES: dict[str, Rule] = {
    TODAY: at_least(DEFAULT_MIN_SCORE),
    **{f"estimate >= {t:g}": at_least(t)
       for t in (0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.7)},
    **{f"top {n}": top_n(n) for n in (1, 2, 3, 5, 10)},
    **{f"estimate >= {r:g} x the first's": relative(r) for r in (0.25, 0.5, 0.75)},
    **{f"expected irrelevant <= {m:g}": expected_irrelevant(m) for m in (0.5, 1.0, 2.0)},
    **{f"estimates' mass >= {q:g} of today's": mass(q) for q in (0.8, 0.9, 0.95, 0.98)},
}


@dataclass
class Curve:
    """One split's outcome under one rule, per question (answerable first, then the rest)."""

    kept: np.ndarray  # answerable: share of the relevant memories packed
    items: np.ndarray  # answerable: items packed
    relevant: np.ndarray  # answerable: relevant items packed
    empty: dict[str, np.ndarray]  # per kind nothing answers: the block is empty


def contents(pool: dict[str, Any]) -> dict[str, str]:
    """Every memory's text the pool's questions can meet: its set's and the `elsewhere`
    corpus's."""
    names = {pool["dataset"], *(q["scope"].split(":")[0] for q in pool.get("elsewhere", []))}
    return {m.corpus_id: m.content for name in names
            for ms in load(dataset_path(name)).scopes.values() for m in ms}


def as_memory(corpus_id: str, text: str) -> StoredMemory:
    return StoredMemory(corpus_id, "", text, "", (), 0.5, False, EPOCH, EPOCH, None, None, {})


def packed_ids(ids: list[str], p: list[float], n: int, text: dict[str, str],
               counter: TokenCounter) -> list[str]:
    """The gateway's packing of the first n hits into the default budget."""
    hits = [(as_memory(i, text.get(i, "")), s) for i, s in zip(ids[:n], p[:n], strict=True)]
    out = pack(hits, DEFAULT_CONTEXT_TOKENS, counter, EPOCH, dated=False)
    return [item.memory.id for item in out.items]


def curves(rows: Rows, estimates: np.ndarray, text: dict[str, str],
           counter: TokenCounter) -> dict[str, Curve]:
    by_rule: dict[str, Curve] = {}
    lists = [(q, estimates[rows.question == i].tolist()) for i, q in enumerate(rows.questions)]
    for name, rule in RULES.items():
        kept, items, relevant = [], [], []
        empty: dict[str, list[bool]] = {kind: [] for kind in OFF_TOPIC}
        for q, p in lists:
            packed = packed_ids(q["ranked"], p, rule(p), text, counter)
            if q["answerable"]:
                gold = set(q["relevant"])
                kept.append(len(gold.intersection(packed)) / len(gold))
                items.append(len(packed))
                relevant.append(len(gold.intersection(packed)))
            else:
                empty[q["kind"]].append(not packed)
        by_rule[name] = Curve(np.array(kept), np.array(items, float), np.array(relevant, float),
                              {k: np.array(v) for k, v in empty.items() if v})
    return by_rule


def clusters(rows: Rows) -> list[str]:
    answerable = [(i, q) for i, q in enumerate(rows.questions) if q["answerable"]]
    if rows.name in QUESTION_CLUSTERS:  # too few users: each question is its own cluster
        return [str(i) for i, _ in answerable]
    return [q["cluster"] for _, q in answerable]


def versus(a: np.ndarray, b: np.ndarray, names: list[str]) -> list[float]:
    """a - b by cluster: [delta, low, high, clusters up, clusters down]."""
    d = a - b
    ci = cluster_bootstrap(d.tolist(), names)
    keys = sorted(set(names))
    ids = np.array([keys.index(c) for c in names])
    means = np.bincount(ids, weights=d, minlength=len(keys)) / np.bincount(ids)
    return [ci.delta, ci.low, ci.high, int((means > 1e-12).sum()), int((means < -1e-12).sum())]


def summary(c: Curve, today: Curve, names: list[str]) -> dict[str, Any]:
    base = today.kept.mean()
    return {"kept": float(c.kept.mean()),
            "kept_ratio": float(c.kept.mean() / base) if base else None,
            "kept_delta": versus(c.kept, today.kept, names),
            "items": float(c.items.mean()),
            "items_p95": float(np.percentile(c.items, 95)) if len(c.items) else 0.0,
            "items_max": float(c.items.max()) if len(c.items) else 0.0,
            "items_delta": versus(c.items, today.items, names),
            "relevant_share": float(c.relevant.sum() / c.items.sum()) if c.items.sum() else None,
            "empty": {k: float(v.mean()) for k, v in c.empty.items()}}


def run(pool_paths: list[Path], json_to: Path | None, report_to: Path | None) -> None:
    manifest = ModelManifest.load()
    calibration = calibration_for(manifest.model_id)
    if calibration is None:
        raise SystemExit(f"{manifest.model_id} has no calibration: its scores are no estimates")
    shipped = Setting.of(RecallPolicy.from_env())
    counter = TokenCounter.load()
    pools = [json.loads(p.read_text()) for p in pool_paths]
    splits = [split_rows(pool, shipped, calibration, depth=DEFAULT_CONTEXT_K) for pool in pools]
    oof = out_of_fold(splits, fit_depth=K)
    table: dict[str, dict[str, dict[str, Any]]] = {}
    counts: dict[str, dict[str, int]] = {}
    for pool, rows in zip(pools, splits, strict=True):
        by_rule = curves(rows, oof[rows.name], contents(pool), counter)
        names = clusters(rows)
        table[rows.name] = {name: summary(c, by_rule[TODAY], names)
                            for name, c in by_rule.items()}
        counts[rows.name] = {"answerable": len(names), "clusters": len(set(names)),
                             **{k: len(v) for k, v in by_rule[TODAY].empty.items()}}
        s = table[rows.name][SHIPPED]
        print(f"{rows.name}: kept {s['kept']:.3f} ({s['kept_ratio']} of today's), items "
              f"{s['items']:.2f} (today {table[rows.name][TODAY]['items']:.2f})", flush=True)
    meets = [name for name in RULES
             if all(rules[name]["kept_ratio"] is not None
                    and rules[name]["kept_ratio"] >= MIN_KEPT_RATIO for rules in table.values())]
    lines = ["# Context: what is packed, by rule", "",
             "Generated by `python -m benchmarks context-curve` (benchmarks/quality/"
             "context_curve.py: its docstring says what is replayed and measured; the rule and "
             "its reasons: docs/decisions/0014-context-by-relevance.md). Ranking served: "
             f"`{shipped.label}`, k {DEFAULT_CONTEXT_K}, budget {DEFAULT_CONTEXT_TOKENS} tokens "
             f"({counter.name}); model {manifest.model_id}; estimates out of fold.", "",
             f"Shipped: **{SHIPPED}** (marked ◆). The constraint, the answer kept at least "
             f"{MIN_KEPT_RATIO:.0%} as often as today on every split, is met by the rules: "
             + (", ".join(f"`{n}`" for n in meets) or "none") + ".",
             "", "## Today and each family's nearest candidate", "",
             "Per split: today's answer kept and mean items packed per answerable question; "
             "for each candidate, the answer kept as a ratio of today's / its mean items "
             "(✓: the ratio is at least the constraint's). Off-topic empty blocks: below.", "",
             "| split | answerable (clusters) | today: kept, items | "
             + " | ".join(HEADLINE) + " |",
             "|---|---:|---|" + "---|" * len(HEADLINE)]
    for split, rules in table.items():
        t = rules[TODAY]
        cells = []
        for name in HEADLINE:
            r = rules[name]
            ok = r["kept_ratio"] is not None and r["kept_ratio"] >= MIN_KEPT_RATIO
            ratio = f"{r['kept_ratio']:.3f}" if r["kept_ratio"] is not None else "-"
            cells.append(f"{ratio}{' ✓' if ok else ''} / {r['items']:.2f}")
        lines.append(f"| {split} | {counts[split]['answerable']} ({counts[split]['clusters']}) "
                     f"| {t['kept']:.3f}, {t['items']:.2f} | " + " | ".join(cells) + " |")
    lines += ["", "Off-topic questions with an empty block, today and under `estimate >= 0.1`, "
              "`estimate >= 0.5`:", "", "| split | today | estimate >= 0.1 | estimate >= 0.5 |",
              "|---|---|---|---|"]
    for split, rules in table.items():
        lines.append(f"| {split} | " + " | ".join(
            ", ".join(f"{k} {v:.2f}" for k, v in rules[name]["empty"].items())
            for name in (TODAY, "estimate >= 0.1", "estimate >= 0.5")) + " |")
    lines += ["", "## Every rule, per split", "",
              "Per rule: the answer kept (its ratio to today's), Δ against today by cluster "
              "[95% CI] with clusters up/down, the mean items packed per answerable question, "
              "the share of packed items relevant, and the share of the questions nothing "
              "answers with an empty block (unanswerable: the set's own; foreign: asked in "
              "another namespace; elsewhere: of another set's corpus).", ""]
    for split, rules in table.items():
        lines += [f"### {split}", "",
                  "| rule | kept (ratio) | Δ kept [CI] ↑↓ | items | relevant | empty |",
                  "|---|---|---|---:|---:|---|"]
        for name, r in rules.items():
            d = r["kept_delta"]
            mark = " ◆" if name == SHIPPED else ""
            ratio = f"{r['kept_ratio']:.3f}" if r["kept_ratio"] is not None else "-"
            share = f"{r['relevant_share']:.3f}" if r["relevant_share"] is not None else "-"
            lines.append(
                f"| {name}{mark} | {r['kept']:.3f} ({ratio}) | {d[0]:+.3f} [{d[1]:+.3f}, "
                f"{d[2]:+.3f}] {d[3]}↑ {d[4]}↓ | {r['items']:.2f} | {share} | "
                + ", ".join(f"{k} {v:.2f}" for k, v in r["empty"].items()) + " |")
        lines.append("")
    report = {"git_commit": git_commit(), "timestamp": datetime.now().isoformat(),
              "ranking": shipped.label, "model": manifest.model_id, "k": DEFAULT_CONTEXT_K,
              "max_tokens": DEFAULT_CONTEXT_TOKENS, "tokenizer": counter.name,
              "shipped": SHIPPED, "meet_the_constraint": meets, "counts": counts, "splits": table}
    write_reports(rounded(report), lines, json_to, report_to)


def main(argv: list[str] | None = None) -> None:
    args = pools_parser("python -m benchmarks.quality.context_curve", __doc__).parse_args(argv)
    run(args.pools, args.json_to, args.report_to)


if __name__ == "__main__":
    main()
