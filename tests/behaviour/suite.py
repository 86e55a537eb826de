"""The behaviour suite (issue 27), the product's promise to agents: each case stored one memory
at a time and recalled through a real stack. tests/integration/test_behaviour.py runs it on
the deployment's defaults; the lab's benchmark (benchmarks/behaviour/suite.py) asks the same
cases under other configurations and reports them.

A case's memories go into a namespace of its own between unrelated one-line memories
(tests/behaviour/cases.py), each written by its own StoreBatch of one memory, created
WRITE_GAP_S apart (as an agent writes them during a conversation; the writes themselves go out
back to back, then every one is waited for until indexed). The cases marked `large` share one
namespace that first receives LARGE_NAMESPACE unrelated memories in batches, then each case's
own memories (no fillers). Then each case's query is asked (k=10) and the expected memory's
rank is read from the hits.
"""

from __future__ import annotations

import itertools
import sys
import time
import uuid
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from recallmesh.client import Client, NewMemory, Relation
from tests.behaviour.cases import ABSENT_WITHIN, FILLERS, Case, Memory
from tests.helpers import store_batch_indexed


def log(message: str) -> None:
    """A timestamped progress line on stderr."""
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


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
    writes: list[NewMemory] = []
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
    if fusion is not None:
        options["fusion"] = fusion
    response = client.recall(case.query, namespace=namespace, k=K, timeout=30, **options)
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
