"""Benchmark folders of the common shape, and how their memories are stored.

A folder holds corpus.jsonl (id, text, ...), queries.jsonl (query_id, text,
category, category_name, ...), qrels.jsonl (query_id, relevant_ids), and
optionally haystacks.jsonl (query_id, session_ids, timestamps). Scope rule:
  * queries with `conversation_id`: each conversation is its own namespace;
  * a folder with haystacks.jsonl: each haystack is its own namespace holding
    exactly its sessions' memories (a memory in several haystacks is stored
    once per haystack, identically);
  * otherwise: one namespace for the whole corpus.
What is stored, identically for every configuration (see benchmarks/reports/retrieval.md):
  * content: "<speaker>: <text>" when the record has a speaker, plus
    " [shared image: <caption>]" when it has an image caption; "<title>\\n<text>"
    when it has a title; else the text. Cut to the API's 32 KiB limit.
  * created_at: the record's `timestamp`, else its haystack session timestamp, plus one
    second per `turn` (the turns of a session share its time; this keeps their order).
  * a query's `timestamp` (LongMemEval's question date) is sent as the Recall's
    reference_time, which relative times in the query ("last Saturday") are read against.
  * unanswerable questions (`load(..., unanswerable=True)`): the excluded queries whose
    reason says nothing can answer them (LoCoMo's adversarial category, LongMemEval's
    abstention questions), ranked in their own scope like the others, with no relevant id:
    what a relevance floor should leave empty (Dataset.unanswerable; never scored as recall).
  * a corpus sample (`load(..., corpus_sample=N)`, one-namespace folders such as SciFact): the
    kept queries' relevant documents plus the first others in a fixed hash order, N in all, so
    a subset loads in minutes and is the same subset on every machine.
  * metadata: {"corpus_id": id} (and "session_id" when the record has a session: LongMemEval's
    session_id, LoCoMo's conversation and session number), which maps recalled memories back
    to corpus ids; the session is also the memory's thread (Memory.thread), along which the
    gateway propagates context.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from recallmesh.wire.validation import MAX_CONTENT_BYTES

# Where a benchmark set is found by name: the shared development splits (BENCH_DATASETS,
# default ../shared/datasets), then the sets this repository ships (benchmarks/datasets/README.md).
OWN_SETS = Path(__file__).resolve().parents[1] / "datasets"


def dataset_path(name: str) -> Path:
    """The folder of the benchmark set `name` (see OWN_SETS)."""
    shared = Path(os.environ.get("BENCH_DATASETS", "../shared/datasets")) / name
    return shared if shared.is_dir() or not (OWN_SETS / name).is_dir() else OWN_SETS / name


@dataclass(frozen=True)
class Query:
    query_id: str
    text: str
    category: str
    scope: str  # namespace suffix the query is ranked in
    relevant: frozenset[str]
    relevant_sessions: frozenset[str] = frozenset()
    cluster: str = ""  # for the cluster bootstrap (LoCoMo: the conversation)
    reference_time: datetime | None = None  # when it was asked (the record's `timestamp`)


@dataclass(frozen=True)
class Memory:
    corpus_id: str
    content: str
    created_at: datetime | None
    session_id: str = ""


@dataclass
class Dataset:
    path: Path
    name: str
    files_sha256: str
    queries: list[Query]
    scopes: dict[str, list[Memory]] = field(default_factory=dict)  # scope -> memories
    unanswerable: list[Query] = field(default_factory=list)  # nothing relevant is stored
    namespace_tag: str = ""  # keeps two loads of one folder apart on one stack

    def namespace(self, scope: str) -> str:
        """The namespace a scope's memories are stored in (and its queries ranked in)."""
        tag = f"-{self.namespace_tag}" if self.namespace_tag else ""
        return f"bench-{self.files_sha256[:10]}{tag}-{scope}"[:128]

    @property
    def memories_stored(self) -> int:
        return sum(len(m) for m in self.scopes.values())


def _read(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _timestamp(raw: object) -> datetime | None:
    if not raw or not isinstance(raw, str):
        return None
    try:
        value = datetime.fromisoformat(raw)
    except ValueError:
        return None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def content_of(record: dict) -> str:
    text = str(record.get("text") or "").strip()
    if record.get("speaker"):
        text = f"{record['speaker']}: {text}"
    if record.get("image_caption"):
        text = f"{text} [shared image: {record['image_caption']}]"
    if record.get("title"):
        text = f"{str(record['title']).strip()}\n{text}"
    data = text.encode("utf-8")
    if len(data) > MAX_CONTENT_BYTES:
        text = data[:MAX_CONTENT_BYTES].decode("utf-8", errors="ignore")
    return text or "(empty)"


def files_hash(path: Path) -> str:
    digest = hashlib.sha256()
    for name in sorted(p.name for p in path.iterdir() if p.suffix in (".jsonl", ".json")):
        digest.update(name.encode())
        digest.update((path / name).read_bytes())
    return digest.hexdigest()


UNANSWERABLE_REASONS = ("adversarial", "abstention")  # excluded_queries.jsonl reasons


def _hash_order(corpus_id: str) -> str:
    return hashlib.sha256(corpus_id.encode()).hexdigest()


def load(path: Path, limit: int | None = None, unanswerable: bool = False,
         corpus_sample: int | None = None) -> Dataset:
    """Read a benchmark folder; `limit` keeps the first N scored queries (quick mode);
    `unanswerable` adds the questions nothing answers; `corpus_sample` cuts a one-namespace
    corpus to N documents (the module's docstring says how)."""
    path = path.resolve()
    for required in ("corpus.jsonl", "queries.jsonl", "qrels.jsonl"):
        if not (path / required).is_file():
            raise SystemExit(f"{path} has no {required}: not a benchmark folder")
    corpus = {str(r["id"]): r for r in _read(path / "corpus.jsonl")}
    qrels = {str(r["query_id"]): r for r in _read(path / "qrels.jsonl")}
    raw_queries = [q for q in _read(path / "queries.jsonl") if qrels.get(str(q["query_id"]))]
    # Never rank a query without relevant ids (the excluded files hold those).
    raw_queries = [q for q in raw_queries if qrels[str(q["query_id"])].get("relevant_ids")]
    if limit:
        raw_queries = raw_queries[:limit]
    haystacks = {}
    if (path / "haystacks.jsonl").is_file():
        haystacks = {str(h["query_id"]): h for h in _read(path / "haystacks.jsonl")}

    excluded = []
    if unanswerable and (path / "excluded_queries.jsonl").is_file():
        excluded = [q for q in _read(path / "excluded_queries.jsonl")
                    if any(r in str(q.get("reason", "")) for r in UNANSWERABLE_REASONS)]
    if corpus_sample and "conversation_id" not in (raw_queries or [{}])[0]:
        keep = {str(i) for q in raw_queries for i in qrels[str(q["query_id"])]["relevant_ids"]}
        others = sorted((i for i in corpus if i not in keep), key=_hash_order)
        keep.update(others[:max(0, corpus_sample - len(keep))])
        corpus = {i: r for i, r in corpus.items() if i in keep}

    scopes: dict[str, list[Memory]] = {}
    queries: list[Query] = []
    unanswered: list[Query] = []
    by_session: dict[str, list[dict]] = defaultdict(list)
    if haystacks:
        for record in corpus.values():
            by_session[str(record.get("session_id", ""))].append(record)
    for q, answerable in [*((q, True) for q in raw_queries), *((q, False) for q in excluded)]:
        qid = str(q["query_id"])
        rel = qrels[qid] if answerable else {}
        if "conversation_id" in q:
            scope, cluster = str(q["conversation_id"]), str(q["conversation_id"])
            if scope not in scopes:
                scopes[scope] = [
                    _memory(r) for r in corpus.values()
                    if str(r.get("conversation_id")) == scope
                ]
        elif haystacks:
            if qid not in haystacks:
                continue
            scope, cluster = f"haystack-{qid}", qid
            hay = haystacks[qid]
            times: dict[str, str] = {}
            for sid, when in zip(hay["session_ids"], hay.get("timestamps", []), strict=False):
                times.setdefault(sid, when)  # a session listed twice keeps its first time
            # A session a haystack lists twice (13 LongMemEval dev haystacks) is stored once:
            # its turns twice would be the same corpus items twice, which the gateway's
            # duplicate rule rightly answers with the memory already holding them.
            scopes[scope] = [
                _memory(r, times.get(sid)) for sid in dict.fromkeys(hay["session_ids"])
                for r in by_session.get(sid, [])
            ]
        else:
            scope, cluster = "all", qid
            if scope not in scopes:
                scopes[scope] = [_memory(r) for r in corpus.values()]
        category = str(q.get("category_name") or q.get("category") or "all")
        query = Query(
            qid, str(q["text"]), category, scope, frozenset(map(str, rel.get("relevant_ids", []))),
            frozenset(map(str, rel.get("relevant_sessions", []))), cluster,
            _timestamp(q.get("timestamp")),
        )
        (queries if query.relevant else unanswered).append(query)
    return Dataset(path, path.name, files_hash(path), queries, scopes, unanswered)


def _memory(record: dict, session_time: str | None = None) -> Memory:
    created_at = _timestamp(record.get("timestamp")) or _timestamp(session_time)
    turn = record.get("turn")
    if created_at is not None and isinstance(turn, int) and turn >= 0:
        # The turns of a session share its time; one second per turn keeps their order.
        created_at += timedelta(seconds=turn)
    return Memory(
        corpus_id=str(record["id"]),
        content=content_of(record),
        created_at=created_at,
        session_id=session_of(record),
    )


def session_of(record: dict) -> str:
    """The session a record belongs to: its `session_id` (LongMemEval), else its conversation
    and session number (LoCoMo: "conv-26:session 1"); '' when it has neither."""
    if record.get("session_id"):
        return str(record["session_id"])
    if record.get("conversation_id") and record.get("session") is not None:
        return f"{record['conversation_id']}:session {record['session']}"
    return ""
