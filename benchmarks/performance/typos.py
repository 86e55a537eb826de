"""Misspellings in the lexical leg (issue 56): its speed and its answers with corrections
(docs/decisions/0013-misspellings-by-trigram.md) against the statement of a baseline revision.

  python -m benchmarks.performance.typos [--baseline REV] [--sets locomo,scifact]
      [--queries 300] [--rounds 5] [--skip-behaviour]
      [--report-to benchmarks/reports/typos.md] [--json FILE]

An embedded Postgres of its own, migrated to this checkout's schema (the trigram index is there
for both sides: the baseline's statement never reads it). Each set's memories are inserted
with the write triggers on (statistics and postings as a deployment keeps them; no embeddings:
only the lexical leg runs). Its questions (the first --queries of the set, in file order) are
asked as written and with one word misspelt (`misspell`: the longest word of at least six
letters gets its middle-most vowel replaced by the next one of "aeiou"; deterministic), each
through LexicalRetriever.search (BM25, the leg's defaults, k 50 as the gateway asks) of this
checkout and of the baseline (its recallmesh/services/lexical/core.py read with `git show`),
A and B in turn, question by question, --rounds times. Reported: p50 and p95 latency of each
and their ratio, over all questions and over those as written; how many questions had a term
corrected; the lexical leg's recall@10 alone (a relevant corpus id among its first 10 hits) as
written and misspelt, on both sides.
Then the behaviour suite's cases with a typo (tests/behaviour/cases.py, every case whose
name says "typo") on two stacks of their own with the deployment's defaults (BENCH_ENV), one
with corrections off (RECALLMESH_LEXICAL_SPELLING_SIMILARITY=1, the lexical statement as before
them) and one with the shipped setting: the expected memory's rank and score, or how many hits
a question nothing answers got.
Last (--served-rounds, 0 to skip), Recall end to end: `python -m benchmarks.performance.
recall_latency --legs lexical,vector` (a stack of its own, the demo's memories, sequential
Recalls with the demo's questions as written) run with corrections off and on in turn, each
--served-rounds times: p50 and p95 per run, and the medians' ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import psycopg
from psycopg_pool import AsyncConnectionPool

from benchmarks.harness.data import Dataset, dataset_path, load
from benchmarks.harness.script import (
    BENCH_ENV,
    gateway_client,
    log,
    machine_info,
    names,
    publish,
    start_stack,
)
from recallmesh.migrations.vector_schema import prepare_database
from recallmesh.services.lexical import core
from recallmesh.services.lexical.spelling import (
    BM25_PREPARE,
    BM25_WORK_MEM,
    SPELLING_SIMILARITY,
    spelling_params,
)
from recallmesh.shared.cjk import query_terms
from recallmesh.shared.embedded import embedded_dsn, start_embedded
from recallmesh.stack.supervisor import Stack, free_port_env
from tests.behaviour.cases import ALL_CASES, Case
from tests.behaviour.suite import ask, load_cases

K = 50  # what the gateway asks of a leg (leg_depth)
K1, B = 0.9, 0.4  # the leg's defaults
VOWELS = "aeiou"


def misspell(query: str) -> str:
    """`query` with one word misspelt: the longest word of at least six letters (the first of
    equal length) gets its middle-most vowel (not the first or last letter) replaced by the
    next vowel of "aeiou"; the query unchanged when it has no such word."""
    words = query.split()
    best = max(((i, w) for i, w in enumerate(words) if sum(c.isalpha() for c in w) >= 6),
               key=lambda iw: len(iw[1]), default=None)
    if best is None:
        return query
    i, word = best
    inner = [j for j in range(1, len(word) - 1) if word[j].lower() in VOWELS]
    if not inner:
        return query
    j = min(inner, key=lambda x: abs(x - len(word) / 2))
    vowel = VOWELS[(VOWELS.index(word[j].lower()) + 1) % len(VOWELS)]
    words[i] = word[:j] + vowel + word[j + 1:]
    return " ".join(words)


def baseline_module(ref: str) -> ModuleType:
    """recallmesh/services/lexical/core.py as of git revision `ref`, imported on its own."""
    root = Path(__file__).resolve().parents[2]
    text = subprocess.run(["git", "show", f"{ref}:recallmesh/services/lexical/core.py"],
                          cwd=root, check=True, capture_output=True, text=True).stdout
    path = Path(tempfile.mkdtemp(prefix="typos-baseline-")) / "baseline_lexical_core.py"
    path.write_text(text, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("baseline_lexical_core", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def store(dsn: str, data: Dataset) -> dict[str, dict[str, str]]:
    """Every scope's memories inserted (triggers on); namespace -> memory id -> corpus id."""
    ids: dict[str, dict[str, str]] = {}
    with psycopg.connect(dsn, autocommit=True) as conn:
        for scope, memories in data.scopes.items():
            ns = data.namespace(scope)
            with conn.transaction():
                rows = [conn.execute("INSERT INTO memories (namespace, content) VALUES (%s, %s) "
                                     "RETURNING id::text", (ns, m.content)).fetchone()
                        for m in memories]
            ids[ns] = {r[0]: m.corpus_id for r, m in zip(rows, memories, strict=True) if r}
        conn.execute("DELETE FROM embedding_jobs")
        conn.execute("VACUUM ANALYZE")
    return ids


def corrected(dsn: str, ns: str, query: str, words: bool = True) -> bool:
    """Whether this checkout's leg corrects some term of `query` in `ns` (its first round trip,
    BM25_PREPARE); `words` False: as if the languages' word lists were empty (issue 56's rule,
    before decision 0021: any term no memory holds may be corrected)."""
    with psycopg.connect(dsn) as conn:
        if not words:
            conn.execute("DELETE FROM language_lexemes")  # rolled back with the transaction
        row = conn.execute(BM25_PREPARE, {
            "ns": ns, "query": query_terms(query), "work_mem": BM25_WORK_MEM,
            "spelling": SPELLING_SIMILARITY}).fetchone()
        conn.rollback()
    return bool(spelling_params(row))


async def measure(dsn: str, base: ModuleType, asks: list[tuple[str, str]], rounds: int
                  ) -> dict[str, Any]:
    async with AsyncConnectionPool(dsn, min_size=1, max_size=1, open=False,
                                   kwargs={"autocommit": True}) as pool:
        sides = {"baseline": base.LexicalRetriever(pool, ranking="bm25", k1=K1, b=B),
                 "corrections": core.LexicalRetriever(pool, ranking="bm25", k1=K1, b=B)}
        times: dict[str, list[float]] = {name: [] for name in sides}
        answers: dict[str, list[list[str]]] = {name: [] for name in sides}
        for side in sides.values():  # warm-up: every statement planned and every page read
            for ns, query in asks[:50]:
                await side.search(ns, query, K)
        for r in range(rounds):
            for ns, query in asks:
                order = list(sides.items()) if r % 2 == 0 else list(sides.items())[::-1]
                for name, side in order:
                    started = time.perf_counter()
                    result = await side.search(ns, query, K)
                    times[name].append((time.perf_counter() - started) * 1000)
                    if r == 0:
                        answers[name].append([h.memory_id for h in result.hits])
        return {"times": times, "answers": answers}


def elsewhere(data: Dataset, namespace: str) -> str:
    """The namespace after `namespace` among the set's, in sorted order of their scopes."""
    scopes = sorted(data.scopes)
    at = [data.namespace(s) for s in scopes].index(namespace)
    return data.namespace(scopes[(at + 1) % len(scopes)])


def typo_cases() -> tuple[Case, ...]:
    return tuple(c for c in ALL_CASES if "typo" in c.name)


def behaviour(spelling: str) -> list[dict[str, Any]]:
    """The typo cases on a stack of their own whose lexical leg corrects from `spelling`."""
    with tempfile.TemporaryDirectory(prefix="recallmesh-typos-stack-") as tmp:
        stack = Stack(env={**BENCH_ENV, "RECALLMESH_DATA_DIR": tmp, **free_port_env(),
                           "RECALLMESH_LEXICAL_SPELLING_SIMILARITY": spelling})
        start_stack(stack)
        try:
            with gateway_client(stack) as client:
                loaded = load_cases(client, typo_cases(), "typos")
                results = [ask(client, ns, case, ids) for case, ns, ids in loaded]
        finally:
            stack.stop()
    return [{"name": r.name, "passed": r.passed, "rank": r.rank, "score": r.score,
             "hits": r.hits, "top_score": r.top_score, "empty_wanted": r.empty_wanted}
            for r in results]


def written_times(times: list[float], n: int) -> list[float]:
    """The times of the questions as written: the first n of every 2n (one round's asks)."""
    return [t for i, t in enumerate(times) if i % (2 * n) < n]


def recall_at_10(answers: list[list[str]], asks: list[tuple[str, str]],
                 relevant: list[frozenset[str]], ids: dict[str, dict[str, str]]) -> float:
    found = [bool({ids[ns].get(m) for m in hits[:10]} & rel)
             for hits, (ns, _), rel in zip(answers, asks, relevant, strict=True)]
    return float(np.mean(found)) if found else 0.0


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    # main just before the corrections were merged (issue 56)
    parser.add_argument("--baseline", default="c617e2f")
    parser.add_argument("--sets", type=names, default="locomo,scifact")
    parser.add_argument("--queries", type=int, default=300, help="0: every question")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--scifact-corpus", type=int, default=2000)
    parser.add_argument("--skip-behaviour", action="store_true")
    parser.add_argument("--served-rounds", type=int, default=4)
    parser.add_argument("--served-n", type=int, default=800)
    parser.add_argument("--report-to", type=Path)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    base = baseline_module(args.baseline)
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="recallmesh-typos-") as tmp:
        server = start_embedded(Path(tmp) / "pg", cleanup_mode="delete")
        dsn = embedded_dsn(server)
        prepare_database(dsn)
        for name in args.sets:
            data = load(dataset_path(name), limit=args.queries or None,
                        corpus_sample=args.scifact_corpus if name == "scifact" else None)
            log(f"{name}: storing {data.memories_stored} memories ...")
            ids = store(dsn, data)
            written = [(data.namespace(q.scope), q.text) for q in data.queries]
            typed = [(ns, misspell(text)) for ns, text in written]
            asks = written + typed
            relevant = [q.relevant for q in data.queries] * 2
            log(f"{name}: {len(asks)} questions x {args.rounds} rounds, both sides ...")
            run = asyncio.run(measure(dsn, base, asks, args.rounds))
            n = len(written)
            results[name] = {
                "memories": data.memories_stored,
                "namespaces": len(data.scopes),
                "questions": n,
                "misspelt": sum(t != w for (_, t), (_, w) in zip(typed, written, strict=True)),
                "corrected_written": sum(corrected(dsn, ns, q) for ns, q in written),
                "corrected_written_without_words": sum(corrected(dsn, ns, q, words=False)
                                                       for ns, q in written),
                "corrected_misspelt_without_words": sum(corrected(dsn, ns, q, words=False)
                                                        for ns, q in typed),
                "corrected_misspelt": sum(corrected(dsn, ns, q) for ns, q in typed),
                # each question asked in another namespace of the set (the next in sorted
                # order, as pool.dump --foreign asks it), where nothing answers it
                "corrected_elsewhere": sum(corrected(dsn, elsewhere(data, ns), q)
                                           for ns, q in written) if len(data.scopes) > 1
                else None,
                "latency_ms": {side: {"p50": float(np.percentile(t, 50)),
                                      "p95": float(np.percentile(t, 95))}
                               for side, t in run["times"].items()},
                # the questions as written only (each round asks them first, n of 2n)
                "latency_written_ms": {side: {
                    "p50": float(np.percentile(written_times(t, n), 50)),
                    "p95": float(np.percentile(written_times(t, n), 95))}
                    for side, t in run["times"].items()},
                "recall_at_10": {side: {
                    "written": recall_at_10(a[:n], asks[:n], relevant[:n], ids),
                    "misspelt": recall_at_10(a[n:], asks[n:], relevant[n:], ids)}
                    for side, a in run["answers"].items()},
                "same_answers_written": sum(x == y for x, y in zip(
                    run["answers"]["baseline"][:n], run["answers"]["corrections"][:n],
                    strict=True)),
            }
        server.cleanup()
    if not args.skip_behaviour:
        results["behaviour"] = {}
        for side, spelling in (("off", "1"), ("on", str(SPELLING_SIMILARITY))):
            log(f"behaviour cases with a typo, corrections {side} ...")
            results["behaviour"][side] = behaviour(spelling)
    if args.served_rounds:
        results["served"] = served(args.served_rounds, args.served_n)
    publish(report(results, args, argv, time.perf_counter() - started), args.report_to,
            args.json, results)


def served(rounds: int, n: int) -> dict[str, list[dict[str, float]]]:
    """recall_latency's p50 and p95 with corrections off and on, in turn, `rounds` times."""
    runs: dict[str, list[dict[str, float]]] = {"off": [], "on": []}
    with tempfile.TemporaryDirectory(prefix="recallmesh-typos-served-") as tmp:
        for r in range(rounds):
            for side, spelling in (("off", "1"), ("on", str(SPELLING_SIMILARITY))):
                log(f"Recall end to end, corrections {side}, round {r + 1} of {rounds} ...")
                out = Path(tmp) / f"{side}-{r}.json"
                subprocess.run([sys.executable, "-m", "benchmarks.performance.recall_latency",
                                "--legs", "lexical,vector", "--n", str(n), "--json", str(out)],
                               check=True, capture_output=True,
                               env={**os.environ,
                                    "RECALLMESH_LEXICAL_SPELLING_SIMILARITY": spelling})
                got = json.loads(out.read_text())
                runs[side].append({"p50": got["p50_ms"], "p95": got["p95_ms"]})
    return runs


def served_lines(runs: dict[str, list[dict[str, float]]], n: int) -> list[str]:
    def median(side: str, key: str) -> float:
        return float(np.median([r[key] for r in runs[side]]))

    return [
        "",
        f"Recall end to end (recall_latency: lexical and vector legs, the demo's memories, {n} "
        "sequential Recalls with its questions as written, k 10), corrections off and on in "
        "turn: p50 / p95 ms of each run, the median of the runs, and on over off.",
        "",
        "| corrections | runs: p50 / p95 ms | median p50 | median p95 |",
        "|---|---|---:|---:|",
        *(f"| {side} | " + ", ".join(f"{r['p50']:.1f} / {r['p95']:.1f}" for r in runs[side])
          + f" | {median(side, 'p50'):.2f} | {median(side, 'p95'):.2f} |"
          for side in ("off", "on")),
        f"| on / off | | {median('on', 'p50') / median('off', 'p50'):.3f} "
        f"| {median('on', 'p95') / median('off', 'p95'):.3f} |",
    ]


def report(results: dict[str, Any], args: argparse.Namespace, argv: list[str],
           seconds: float) -> str:
    lines = [
        "# Misspellings: the lexical leg's speed and answers with corrections (issue 56)",
        "",
        f"Generated by `python -m benchmarks.performance.typos {' '.join(argv)}` "
        f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {seconds:.0f} s); how: the "
        "script's docstring. Baseline: the lexical statement of `" + args.baseline + "`; "
        "corrections: this checkout's (docs/decisions/0013-misspellings-by-trigram.md). "
        "Each question asked as written and with one word misspelt, the two sides in turn, "
        f"{args.rounds} rounds; latency of LexicalRetriever.search (k {K}) on one connection. "
        "Machine: " + ", ".join(f"{k} {v}" for k, v in machine_info().items()) + ".",
        "",
        "| set | memories (namespaces) | questions | p50 ms baseline / corrections | "
        "p95 ms baseline / corrections | p95 ratio |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    sets = {name: r for name, r in results.items() if name not in ("behaviour", "served")}
    for key, written in (("latency_ms", False), ("latency_written_ms", True)):
        for name, r in sets.items():
            lat = r[key]
            label = (f"{name}, as written only | | {r['questions']}" if written else
                     f"{name} | {r['memories']} ({r['namespaces']}) | {2 * r['questions']}")
            lines.append(
                f"| {label} | "
                f"{lat['baseline']['p50']:.2f} / {lat['corrections']['p50']:.2f} | "
                f"{lat['baseline']['p95']:.2f} / {lat['corrections']['p95']:.2f} | "
                f"{lat['corrections']['p95'] / lat['baseline']['p95']:.3f} |")
    lines += [
        "",
        "The lexical leg alone: recall@10 (a relevant memory among its first 10 hits), and how "
        "many questions had a term corrected (a term no memory of the namespace holds and no "
        "supported language uses as a word, with a namespace term similar enough; in brackets "
        "the same without the word lists, issue 56's rule: docs/decisions/0021).",
        "",
        "| set | as written: baseline / corrections | misspelt: baseline / corrections | "
        "corrected as written (without the word lists) | corrected misspelt (without) | "
        "corrected, asked in another namespace | same top 50 as written |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, r in sets.items():
        rec = r["recall_at_10"]
        lines.append(
            f"| {name} | {rec['baseline']['written']:.3f} / {rec['corrections']['written']:.3f} "
            f"| {rec['baseline']['misspelt']:.3f} / {rec['corrections']['misspelt']:.3f} | "
            f"{r['corrected_written']} of {r['questions']} "
            f"({r['corrected_written_without_words']}) | {r['corrected_misspelt']} of "
            f"{r['misspelt']} misspelt ({r['corrected_misspelt_without_words']}) | "
            + (f"{r['corrected_elsewhere']} of {r['questions']}"
               if r["corrected_elsewhere"] is not None else "-")
            + f" | {r['same_answers_written']} of {r['questions']} |")
    if "behaviour" in results:
        off, on = results["behaviour"]["off"], results["behaviour"]["on"]
        lines += [
            "",
            "Behaviour cases with a typo (tests/behaviour/cases.py), each on the deployment's "
            "defaults but for the corrections: the expected memory's rank (its score), or the "
            "hits a question nothing answers got; ✗ where the case fails.",
            "",
            f"| case | corrections off ({sum(r['passed'] for r in off)} of {len(off)} pass) | "
            f"corrections on ({sum(r['passed'] for r in on)} of {len(on)} pass) |",
            "|---|---:|---:|",
        ]
        for a, b in zip(off, on, strict=True):
            lines.append(f"| {a['name']} | {case_cell(a)} | {case_cell(b)} |")
    if "served" in results:
        lines += served_lines(results["served"], args.served_n)
    return "\n".join(lines) + "\n"


def case_cell(r: dict[str, Any]) -> str:
    got = (f"{r['hits']} hits" if r["empty_wanted"]
           else f"{r['rank']} ({r['score']:.3f})" if r["rank"] else f"none of {r['hits']} hits")
    return got + ("" if r["passed"] else " ✗")


if __name__ == "__main__":
    main()
