"""Levers tried by replaying the dumped candidate pools, with exact vector similarities.

  python -m benchmarks.replay.lever_replay \
      --pools benchmarks/results/locomo/context_pool.json,... \
      --datasets ../shared/datasets [--manifest other_model/manifest.json] \
      [--json-to benchmarks/reports/lever_replay.json] [--report-to benchmarks/reports/levers.md]

`context_sweep dump` keeps each query's lexical top 100 from the real stack. Here every memory
of the dev split and every query is embedded once with the served model
(benchmarks/replay/vectors.py, cached under benchmarks/results/<dataset>/), so a vector list can
be computed exactly (brute force over the query's namespace, top `leg depth`) and a lever that
needs new vector searches can be replayed without a stack. Every row is the shipped default's
setting (leg depth, lexical weight, context propagation) plus one lever, against the same
replay without it ("exact default"); the served numbers are in benchmarks/reports/retrieval.md.
Levers:

- speaker boost: a memory whose speaker the query names (the record's `speaker` field, LoCoMo)
  gets its fused score x (1 + beta) before context propagation;
- vector PRF: a third list from a second vector search with q + alpha x mean(embeddings of the
  fused top m), weight w (Rocchio feedback without a second model call);
- embedding hop: a third list scoring each memory by max over the fused top m of
  (hit's fused score x cosine(hit, memory)), weight w (a second hop seeded from the first hits);
- lexical weight: the default's two lists with only the lexical weight changed (the default
  was tuned with the served model; another model's vector leg may want another weight);
- chunked vectors (only where memories are longer than one window; 71% of SciFact's abstracts
  are also longer than the model's 256 tokens, which the served vector leg cuts): each such
  memory is also embedded in windows of 120 words (stride 80), its first line repeated as a
  heading, and scored by its best window or its whole-memory vector; shown at several lexical
  weights, next to the unchunked replay at the same weight;
- confidence routing (per-query lexical weight, no new search): from the margin between BM25's
  top two scores (1.2 + c x (s1 - s2) / s1: a decisive lexical match weighs more), or from the
  margin between the vector leg's top two cosines (max(0.5, default - c x (cos1 - cos2)): a
  decisive vector match lets lexical weigh less);
- time window (the gateway's own code, recallmesh/gateway/time_window.py): where the query
  names a time relative to its reference time (LongMemEval's question date; LoCoMo and SciFact
  queries
  carry none), the fused candidates created inside that window get score x (1 + boost)
  before context propagation. Shown at several boosts, compared with boost 0 (the default
  replay without the window).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
from pathlib import Path

import numpy as np

from benchmarks.harness import metrics
from benchmarks.harness.runner import git_commit
from benchmarks.harness.script import paths
from benchmarks.replay.pool import (
    K,
    default_setting,
    fuse_and_propagate,
    fuse_replayed,
    leg_lists,
    replay_table,
    scored,
    write_reports,
)
from benchmarks.replay.vectors import Vectors
from recallmesh.embedding_models.manifest import ModelManifest
from recallmesh.gateway.time_window import boost, resolve
from recallmesh.wire.fusion import LegCandidate, LegList

SPEAKER_BETAS = (0.1, 0.2, 0.5)
PRF = [(m, a, w) for m in (3, 5) for a in (0.5, 1.0) for w in (0.3, 0.6)]
HOP = [(m, w) for m in (3, 5) for w in (0.3, 0.6)]
LEXICAL_MARGIN_SLOPES = (1.0, 3.0)  # lexical weight 1.2 + c x (s1 - s2) / s1 of BM25's top two
VECTOR_MARGIN_SLOPES = (5.0, 10.0)  # lexical weight max(0.5, default - c x (cos1 - cos2))
LEXICAL_WEIGHTS = (0.7, 1.0, 1.2, 1.4)  # the default's lists, only the lexical weight changed
CHUNK_LEXICAL_WEIGHTS = (1.0, 1.4, 1.7)  # each also in LEXICAL_WEIGHTS or the default's
TIME_BOOSTS = (0.2, 0.5, 1.0, 2.0)


def lever_rows(pool: dict, vec: Vectors) -> tuple[dict[str, list[dict]], dict[str, str]]:
    """Each lever's per-query rows, and the row each is compared with where that is not
    `exact default`."""
    depth, lw, n, next_w, prev_w = default_setting()
    has_chunks = bool(len(vec.chunk_owner))
    has_speakers = bool(vec.speakers)
    has_times = any(q.reference_time is not None for q in vec.ds.queries)
    out: dict[str, list[dict]] = {}
    reference: dict[str, str] = {}

    def add(name: str, q: dict, ranked: list[str]) -> None:
        out.setdefault(name, []).append(scored(pool, q, ranked))

    for q in pool["queries"]:
        qid = q["query_id"]
        qv = vec.queries[vec.qrow[qid]]
        lexical = [x for x in leg_lists(q, depth, lw) if x.leg == "lexical"]
        exact = vec.vector_list(qid, qv, depth)
        base = lexical + [exact]

        def reweighted(weight: float, vector: LegList, lexical=lexical) -> list[str]:
            """The default's lists with the lexical weight set for this query."""
            routed = [dataclasses.replace(x, weight=weight) for x in lexical]
            return fuse_and_propagate(pool, routed + [vector], n, next_w, prev_w)

        add("exact default", q, fuse_and_propagate(pool, base, n, next_w, prev_w))
        fused = fuse_replayed(base)  # feedback and hop seeds: the fused top m, before context
        top_rows = [vec.row[c.memory_id] for c in fused[:max(m for m, _, _ in PRF)]]
        if has_speakers:
            text = vec.query[qid].text
            ids, _ = vec.scope(qid)
            named = {s for s in {vec.speakers.get(i, "") for i in ids} - {""}
                     if re.search(rf"\b{re.escape(s)}\b", text, re.IGNORECASE)}
            for beta in SPEAKER_BETAS:
                def raise_named(fused, beta=beta, named=named):
                    raised = [dataclasses.replace(c, score=c.score * (1 + beta))
                              if vec.speakers.get(c.memory_id) in named else c for c in fused]
                    return sorted(raised, key=lambda c: (-c.score, c.best_rank, c.memory_id))
                add(f"speaker boost beta {beta:g}", q, fuse_and_propagate(
                    pool, base, n, next_w, prev_w, adjust=raise_named if named else None))
        for m, alpha, w in PRF:
            expanded = qv + alpha * vec.memories[top_rows[:m]].mean(axis=0)
            expanded = expanded / np.linalg.norm(expanded)
            prf = vec.vector_list(qid, expanded, depth, w, leg="vector_prf")
            add(f"vector PRF m{m} alpha {alpha:g} w {w:g}", q,
                fuse_and_propagate(pool, base + [prf], n, next_w, prev_w))
        top_lexical = [c.score for c in lexical[0].candidates[:2]] if lexical else []
        for c in LEXICAL_MARGIN_SLOPES:  # no margin (fewer than two, or no score): default
            weight = (1.2 + c * (top_lexical[0] - top_lexical[1]) / top_lexical[0]
                      if len(top_lexical) == 2 and top_lexical[0] > 0 else lw)
            add(f"lexical weight by BM25 margin, slope {c:g}", q, reweighted(weight, exact))
        cosines = [c.score for c in exact.candidates[:2]]
        margin = cosines[0] - cosines[1] if len(cosines) == 2 else 0.0
        for c in VECTOR_MARGIN_SLOPES:
            add(f"lexical weight by vector margin, slope {c:g}", q,
                reweighted(max(0.5, lw - c * margin), exact))
        ids, rows = vec.scope(qid)
        for m, w in HOP:
            seeds = fused[:m]
            sims = vec.memories[rows] @ vec.memories[[vec.row[s.memory_id] for s in seeds]].T
            hop = (sims * np.array([s.score for s in seeds])).max(axis=1)
            order = np.argsort(-hop, kind="stable")[:depth]
            hop_list = LegList("hop", w, [LegCandidate(ids[j], float(hop[j])) for j in order])
            add(f"embedding hop m{m} w {w:g}", q,
                fuse_and_propagate(pool, base + [hop_list], n, next_w, prev_w))
        if has_times:
            query = vec.query[qid]
            window = (resolve(query.text, query.reference_time)
                      if query.reference_time is not None else None)
            for strength in TIME_BOOSTS:
                def raise_window(fused, strength=strength, window=window,
                                 created=vec.created[query.scope]):
                    return boost(fused, created, window, strength)[0]
                add(f"time window boost {strength:g}", q, fuse_and_propagate(
                    pool, base, n, next_w, prev_w, adjust=raise_window if window else None))
        for weight in LEXICAL_WEIGHTS:  # with another model the default's weight may not fit
            if weight != lw:
                add(f"exact default at lexical weight {weight:g}", q, reweighted(weight, exact))
        if has_chunks:
            chunked = vec.vector_list(qid, qv, depth, chunked=True)
            for weight in CHUNK_LEXICAL_WEIGHTS:
                name = f"chunked vectors, lexical weight {weight:g}"
                add(name, q, reweighted(weight, chunked))
                if weight != lw:
                    reference[name] = f"exact default at lexical weight {weight:g}"
            add("chunked vectors, vector leg alone", q,
                [c.memory_id for c in chunked.candidates[:K]])
            add("exact vector leg alone", q, [c.memory_id for c in exact.candidates[:K]])
            reference["chunked vectors, vector leg alone"] = "exact vector leg alone"
    return out, reference


def run(pool_paths: list[Path], datasets: Path, manifest: Path | None, json_to: Path | None,
        report_to: Path | None) -> None:
    report = {"git_commit": git_commit(), "default": list(default_setting()),
              "model": ModelManifest.load(manifest).model_id, "datasets": {}}
    lines = ["# Levers replayed on the dev pools (exact vector similarities)", "",
             "Generated by `make bench NAME=lever-replay` (benchmarks/replay/lever_replay.py; its "
             "docstring says how each",
             "lever is computed). Rows: the shipped default plus one lever; Δ: paired bootstrap "
             "95% CI over", "queries against `exact default` (the same replay "
             "without the lever; vector list by brute force).", ""]
    for path in pool_paths:
        pool = json.loads(path.read_text())
        vec = Vectors(datasets / pool["dataset"], manifest, path.parent)
        rows, compared_with = lever_rows(pool, vec)
        entry, table, names, primary = replay_table(pool, rows, "exact default", compared_with,
                                                    "lever")
        lines += table
        served = metrics.summarise([scored(pool, q, q["served_top"]) for q in pool["queries"]],
                                   names)[0][primary]
        lines += ["", f"Per-type columns: {primary}. For scale, the pool's served baseline "
                  f"(`hybrid_cc_bm25t`, no context) scores {served:.3f}. Chunked rows are "
                  "compared with the unchunked replay at the same lexical weight, the chunked "
                  "vector-alone row with the exact vector leg alone, every other row with "
                  "`exact default`.", ""]
        report["datasets"][pool["dataset"]] = {"pool": str(path), "levers": entry}
        print("\n".join(lines[-len(rows) - 6:]), flush=True)
    write_reports(report, lines, json_to, report_to)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.replay.lever_replay")
    parser.add_argument("--pools", type=paths, required=True, help="comma-separated pool files")
    parser.add_argument("--datasets", type=Path, required=True, help="folder of dataset folders")
    parser.add_argument("--manifest", type=Path,
                        help="another model's manifest (default: the served model's)")
    parser.add_argument("--json-to", type=Path)
    parser.add_argument("--report-to", type=Path)
    args = parser.parse_args(argv)
    run(args.pools, args.datasets, args.manifest, args.json_to,
        args.report_to)


if __name__ == "__main__":
    main()
