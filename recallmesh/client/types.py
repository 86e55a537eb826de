"""What the client returns: plain, typed, immutable values (no protobuf messages)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime


@dataclass(frozen=True)
class Memory:
    """A stored memory, as Get / Recall / Store return it."""

    id: str
    namespace: str
    content: str
    category: str = ""
    tags: tuple[str, ...] = ()
    importance: float = 0.5
    sensitive: bool = False
    thread: str = ""
    metadata: dict[str, str] = field(default_factory=dict)
    created_at: datetime | None = None
    updated_at: datetime | None = None
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    expires_at: datetime | None = None
    superseded_by: str = ""  # the memory that replaced this one (an ended fact); "" if none


@dataclass(frozen=True)
class Relation:
    """An edge to an earlier memory of the namespace: type is "supersedes", "derived_from",
    "references" or "about"."""

    type: str
    target_id: str


@dataclass(frozen=True)
class NewMemory:
    """One memory of a store_batch (the fields of `store`)."""

    content: str
    category: str = ""
    tags: tuple[str, ...] = ()
    importance: float | None = None
    sensitive: bool = False
    thread: str = ""
    metadata: dict[str, str] = field(default_factory=dict)
    created_at: datetime | None = None
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    expires_at: datetime | None = None
    relations: tuple[Relation, ...] = ()
    id: str = ""  # empty: the client assigns a UUID (the write's idempotency key)


@dataclass(frozen=True)
class StoreResult:
    memory: Memory
    indexed: bool  # embedded and searchable by the vector leg (always True when sensitive)
    existing: bool = False  # a live memory already said this: nothing new was stored


@dataclass(frozen=True)
class BatchResult:
    ids: tuple[str, ...]
    indexed: bool
    existing: tuple[bool, ...] = ()  # per id: already stored, nothing new written


@dataclass(frozen=True)
class Deleted:
    id: str
    deleted_at: datetime | None
    purged: bool


@dataclass(frozen=True)
class LegContribution:
    leg: str
    rank: int
    score: float
    reason: str = ""


@dataclass(frozen=True)
class Hit:
    memory: Memory
    score: float
    legs: tuple[LegContribution, ...] = ()  # with explain=True


@dataclass(frozen=True)
class LegReport:
    leg: str
    state: str  # OK, TIMEOUT, ERROR, SKIPPED
    latency_ms: float
    candidates: int
    detail: str = ""


@dataclass(frozen=True)
class RecallResult:
    hits: tuple[Hit, ...]
    legs: tuple[LegReport, ...]
    degraded: bool
    fusion: str
    latency_ms: float

    @property
    def memories(self) -> list[Memory]:
        return [hit.memory for hit in self.hits]


@dataclass(frozen=True)
class ContextItem:
    id: str
    score: float
    tokens: int
    created_at: datetime | None


@dataclass(frozen=True)
class ContextResult:
    """A block of memories to put before a prompt, packed into the token budget."""

    text: str
    items: tuple[ContextItem, ...]
    tokens: int
    tokenizer: str
    dated: bool
    degraded: bool
    latency_ms: float
    superseded_omitted: int = 0
    sensitive_omitted: int = 0
    over_budget_omitted: int = 0

    @property
    def ids(self) -> list[str]:
        return [item.id for item in self.items]
