"""The behaviour suite (issue 27): each case stored one memory at a time and recalled through a
real stack; the test (benchmarks/tests/integration/test_behaviour.py) and this benchmark share it.

  python -m benchmarks.behaviour.suite [--configs default,hybrid_cc_bounded,hybrid_rrf]
      [--report-to benchmarks/reports/behaviour.md] [--json benchmarks/results/behaviour.json]

A case's memories go into a namespace of its own between unrelated one-line memories
(benchmarks/behaviour/cases.py), each written by its own StoreBatch of one memory, created
WRITE_GAP_S apart (as an agent writes them during a conversation; the writes themselves go out
back to back, then every one is waited for until indexed). The cases marked `large` share one
namespace that first receives LARGE_NAMESPACE unrelated memories in batches, then each case's
own memories (no fillers). Then each case's query is asked once per configuration (k=10) and
the expected memory's rank is read from the hits.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
import uuid
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from benchmarks.behaviour.cases import ABSENT_WITHIN, ALL_CASES, FILLERS, Case, Memory
from benchmarks.harness.configs import CONFIGS
from benchmarks.harness.runner import gateway_legs
from benchmarks.harness.script import (
    gateway_of_own_stack,
    log,
    machine_info,
    names,
    publish,
    store_batch_indexed,
)
from recallmesh.client import Client, NewMemory, Relation

K = 10
# Time between two writes of a case (created_at): memories an agent stores during one
# conversation, well inside the context propagation's window.
WRITE_GAP_S = 30
LARGE_NAMESPACE = 2000
_LARGE_BATCH = 250


def large_namespace_texts(n: int = LARGE_NAMESPACE) -> list[str]:
    """n distinct unrelated memories, made from templates (deterministic)."""
    people = ("Priya", "Tomasz", "Leila", "Graham", "Chen", "Amara", "Rafael", "Sofia",
              "Kwame", "Hana")
    doing = ("reviewed the", "postponed the", "drafted the", "cancelled the", "approved the",
             "asked about the", "presented the", "rescheduled the", "shared notes on the",
             "finished the")
    things = ("budget spreadsheet", "onboarding checklist", "garden plan", "holiday rota",
              "server migration", "book club list", "recipe collection", "quarterly survey",
              "office move", "training schedule", "newsletter draft", "supplier contract",
              "team lunch", "photo album", "fitness plan", "parking permit", "design mockups",
              "insurance renewal", "charity run", "reading list")
    when = ("on Monday", "on Tuesday", "last week", "this morning", "after lunch",
            "before the weekend", "in the evening", "yesterday", "at the standup", "today")
    combos = itertools.product(people, doing, things, when)
    return [f"{p} {d} {t} {w}." for p, d, t, w in itertools.islice(combos, n)]


@dataclass(frozen=True)
class CaseResult:
    name: str
    kind: str
    within: int
    rank: int  # 1-based rank of the expected memory among the K hits; 0 = not among them
    top: tuple[str, ...]  # the first three hits' contents
    intruder: int = 0  # rank of the first `absent` memory within ABSENT_WITHIN; 0 = none
    hits: int = 0  # how many hits came back
    score: float = 0.0  # the expected memory's score (0 when not among the hits)
    repeated: bool = False  # one content twice among the first ABSENT_WITHIN hits
    empty_wanted: bool = False  # the case asks what nothing stored answers
    top_score: float = 0.0  # the first hit's score (0 when nothing came back)

    @property
    def passed(self) -> bool:
        if self.empty_wanted:
            return self.hits == 0
        return 0 < self.rank <= self.within and not self.intruder and not self.repeated


def _new_memory(memory: Memory, ids: list[str], created_at: datetime) -> NewMemory:
    return NewMemory(memory.content, sensitive=memory.sensitive, category=memory.category,
                     tags=tuple(memory.tags), thread=memory.thread, metadata=dict(memory.metadata),
                     importance=memory.importance, created_at=created_at,
                     relations=() if memory.supersedes is None
                     else (Relation("supersedes", ids[memory.supersedes]),),
                     id=str(uuid.uuid4()))


def load_case(client: Client, namespace: str, case: Case) -> tuple[list[str], list[NewMemory]]:
    """The case's memories, in order, between the first `case.fillers` fillers (half before,
    half after), each a write of its own, created WRITE_GAP_S apart and ending now (as an agent
    writes them during a conversation). Returns the case's memories' ids and the writes not yet
    waited for (for `wait_indexed`)."""
    fillers = [Memory(text) for text in FILLERS[:case.fillers]]
    half = len(fillers) // 2
    sequence = fillers[:half] + list(case.memories) + fillers[half:]
    start = time.time() - WRITE_GAP_S * len(sequence)
    ids: list[str] = []
    writes = []
    for i, memory in enumerate(sequence):
        if memory.supersedes is not None:
            # A superseding write changes its target, so a retry of the target's write would no
            # longer match it: the writes so far are waited for now.
            wait_indexed(client, namespace, writes)
            writes = []
        new = _new_memory(memory, ids, datetime.fromtimestamp(int(start + i * WRITE_GAP_S), UTC))
        stored = client.store_batch([new], namespace=namespace, timeout=30)
        if not stored.existing[0]:  # a repeat of a stored memory answers that one's id
            writes.append(new)
        if half <= i < half + len(case.memories):
            ids.append(stored.ids[0])
    return ids, writes


def wait_indexed(client: Client, namespace: str, writes: list[NewMemory]) -> None:
    """The writes sent again in one batch with an index wait (a retry of the same writes
    stores nothing)."""
    if writes:
        store_batch_indexed(client, namespace, writes)


def load_large_namespace(client: Client, namespace: str) -> None:
    texts = large_namespace_texts()
    for start in range(0, len(texts), _LARGE_BATCH):
        store_batch_indexed(client, namespace,
                            [NewMemory(t) for t in texts[start:start + _LARGE_BATCH]])


def ask(client: Client, namespace: str, case: Case, ids: list[str],
        fusion: dict[str, Any] | None = None) -> CaseResult:
    options: dict[str, Any] = dict(case.filters)
    if case.as_of_after is not None:  # just after that memory was created
        created = client.get(ids[case.as_of_after], namespace=namespace).created_at
        assert created is not None
        options["as_of"] = created + timedelta(seconds=WRITE_GAP_S / 2)
    if case.context:
        return ask_context(client, namespace, case, ids, options)
    response = client.recall(case.query, namespace=namespace, k=K, timeout=30,
                             **({"fusion": fusion} if fusion is not None else {}), **options)
    hit_ids = [h.memory.id for h in response.hits]
    expected = ids[case.expect] if case.expect is not None else None
    rank = hit_ids.index(expected) + 1 if expected in hit_ids else 0
    unwanted = {ids[i] for i in case.absent}
    intruder = next((n for n, memory_id in enumerate(hit_ids[:ABSENT_WITHIN], 1)
                     if memory_id in unwanted), 0)
    first = [h.memory.content for h in response.hits[:ABSENT_WITHIN]]
    return CaseResult(case.name, case.kind, case.within, rank,
                      tuple(h.memory.content for h in response.hits[:3]), intruder,
                      len(response.hits), response.hits[rank - 1].score if rank else 0.0,
                      len(set(first)) < len(first), case.expect is None,
                      response.hits[0].score if response.hits else 0.0)


def ask_context(client: Client, namespace: str, case: Case, ids: list[str],
                options: dict[str, Any]) -> CaseResult:
    """A Context case: the block with Context's defaults; its lines stand for the hits (rank:
    the expected memory's line; intruder: the first line of an `absent` memory, anywhere).
    Context takes no fusion overrides: every configuration asks it with the deployment's."""
    block = client.context(case.query, namespace=namespace, timeout=30, **options)
    packed = [item.id for item in block.items]
    expected = ids[case.expect] if case.expect is not None else None
    rank = packed.index(expected) + 1 if expected in packed else 0
    unwanted = {ids[i] for i in case.absent}
    intruder = next((n for n, memory_id in enumerate(packed, 1) if memory_id in unwanted), 0)
    lines = tuple(block.text.splitlines()[1:4])
    return CaseResult(case.name, case.kind, case.within, rank, lines, intruder, len(packed),
                      block.items[rank - 1].score if rank else 0.0, False, expected is None,
                      block.items[0].score if block.items else 0.0)


def load_cases(client: Client, cases: tuple[Case, ...] | list[Case], prefix: str
               ) -> list[tuple[Case, str, list[str]]]:
    """Every case stored and indexed: (case, its namespace, its memories' ids), in the order
    of `cases`."""
    loaded: dict[str, tuple[Case, str, list[str]]] = {}
    pending = []
    large = [c for c in cases if c.large]
    if large:
        namespace = f"{prefix}-large"
        log(f"{LARGE_NAMESPACE} unrelated memories ...")
        load_large_namespace(client, namespace)
        log("the cases' memories ...")
        for case in large:
            ids, writes = load_case(client, namespace, replace(case, fillers=0))
            loaded[case.name] = (case, namespace, ids)
            pending.append((namespace, writes))
    for i, case in enumerate(c for c in cases if not c.large):
        namespace = f"{prefix}-{i}"
        ids, writes = load_case(client, namespace, case)
        loaded[case.name] = (case, namespace, ids)
        pending.append((namespace, writes))
    log(f"waiting for {sum(len(w) for _, w in pending)} memories to be indexed ...")
    for namespace, writes in pending:
        wait_indexed(client, namespace, writes)
    log("stored")
    return [loaded[c.name] for c in cases]


def run(client: Client, configs: list[str], cases: tuple[Case, ...] = ALL_CASES
        ) -> dict[str, list[CaseResult]]:
    legs = gateway_legs(client)
    loaded = load_cases(client, cases, f"behaviour-{uuid.uuid4().hex[:8]}")
    return {name: [ask(client, ns, case, ids, CONFIGS[name].client_fusion(legs))
                   for case, ns, ids in loaded] for name in configs}


def report(results: dict[str, list[CaseResult]], argv: list[str], seconds: float) -> str:
    configs = list(results)
    cases = results[configs[0]]
    lines = [
        "# Behaviour suite: does recall find the obvious memory?",
        "",
        f"Generated by `python -m benchmarks.behaviour.suite {' '.join(argv)}` "
        f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {seconds:.0f} s); the cases "
        "and how they are stored: benchmarks/behaviour/cases.py and the suite's docstring. "
        "Rank of the expected memory among 10 hits (-: not among them); a case passes at rank 1, "
        f"or in the top 3 where it says so, with none of its unwanted memories (a secret the "
        f"question does not ask for) in the first {ABSENT_WITHIN} hits (`unwanted at N`). "
        "Machine: "
        + ", ".join(f"{k} {v}" for k, v in machine_info().items()) + ".",
        "",
        "| configuration | passed | " + " | ".join(sorted({c.kind for c in cases})) + " |",
        "|---|---:|" + "---:|" * len({c.kind for c in cases}),
    ]
    for name in configs:
        rows = results[name]
        per_kind = {kind: [r for r in rows if r.kind == kind] for kind in sorted({c.kind
                                                                                 for c in rows})}
        lines.append(f"| {name} | {sum(r.passed for r in rows)} of {len(rows)} | " + " | ".join(
            f"{sum(r.passed for r in rs)}/{len(rs)}" for rs in per_kind.values()) + " |")
    lines += ["", "| kind | case | wanted | " + " | ".join(configs) + " |",
              "|---|---|---|" + "---:|" * len(configs)]
    for i, case in enumerate(cases):
        ranks = []
        for name in configs:
            r = results[name][i]
            unwanted = f" (unwanted at {r.intruder})" if r.intruder else ""
            got = (f"{r.hits} hits" + (f" (first {r.top_score:.3f})" if r.hits else "")
                   if r.empty_wanted else f"{r.rank or '-'}"
                   + (f" ({r.score:.3f})" if r.rank else ""))
            ranks.append(f"{got}{unwanted}{'' if r.passed else ' ✗'}")
        wanted = ("nothing" if case.empty_wanted else "1" if case.within == 1
                  else f"≤{case.within}")
        lines.append(f"| {case.kind} | {case.name} | {wanted} | " + " | ".join(ranks) + " |")
    failed = [(name, r) for name in configs for r in results[name] if not r.passed]
    if failed:
        lines += ["", "## What came first where a case failed", ""]
        for name, r in failed:
            lines.append(f"- {name}, {r.name}: " + " / ".join(f"`{t[:70]}`" for t in r.top))
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", type=names, default="default,hybrid_cc_bounded,hybrid_rrf")
    parser.add_argument("--report-to", type=Path)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    unknown = [c for c in args.configs if c not in CONFIGS]
    if unknown:
        raise SystemExit(f"unknown configurations {unknown} (known: {', '.join(CONFIGS)})")
    started = time.perf_counter()
    with gateway_of_own_stack("recallmesh-behaviour-") as gateway:
        log(f"storing {len(ALL_CASES)} cases and asking them ...")
        results = run(gateway, args.configs)
    seconds = time.perf_counter() - started
    publish(report(results, argv, seconds), args.report_to, args.json,
            {name: [asdict(r) | {"passed": r.passed} for r in rows]
             for name, rows in results.items()}, indent=1)


if __name__ == "__main__":
    main()
