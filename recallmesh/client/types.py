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
    pinned: bool = False  # always in context, first
    deleted_at: datetime | None = None  # set only on deleted memories (list include_deleted)


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
    pinned: bool = False


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
class QueryIntent:
    """The intent a recall query was routed by (e.g. "advice") and the words that said it."""

    name: str
    phrase: str


@dataclass(frozen=True)
class TimeWindow:
    """The time window a recall query named ("last saturday"), and how many candidates
    created inside it were raised."""

    phrase: str
    start: datetime | None
    end: datetime | None
    boosted: int


@dataclass(frozen=True)
class RecallResult:
    hits: tuple[Hit, ...]
    legs: tuple[LegReport, ...]
    degraded: bool
    fusion: str
    latency_ms: float
    intent: QueryIntent | None = None
    time_window: TimeWindow | None = None
    # the relevance floor the recall applied (0.0: none); None from a server that does not say
    relevance_floor: float | None = None

    @property
    def memories(self) -> list[Memory]:
        return [hit.memory for hit in self.hits]


@dataclass(frozen=True)
class ContextItem:
    id: str
    score: float
    tokens: int
    created_at: datetime | None
    pinned: bool = False


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


@dataclass(frozen=True)
class Page:
    """One page of `list`; next_page_token is "" on the last page."""

    memories: tuple[Memory, ...]
    next_page_token: str


@dataclass(frozen=True)
class Link:
    """A relation between two memories: source_id states it about target_id (e.g. the newer
    fact supersedes the older)."""

    type: str
    source_id: str
    target_id: str
    created_at: datetime | None


@dataclass(frozen=True)
class Version:
    """An earlier state of a memory, kept by the update that replaced it."""

    version: int
    memory: Memory
    replaced_at: datetime | None
    replaced_by: str
    changed: tuple[str, ...]
    imported_by: str = ""  # who imported it here ("" for a version an update here kept)


@dataclass(frozen=True)
class History:
    memory: Memory
    versions: tuple[Version, ...]  # oldest first (the newest that fit: versions_left_out)
    relations: tuple[Link, ...]  # both ways
    versions_left_out: int = 0  # oldest versions left out to keep the answer within 3 MiB
    relations_left_out: int = 0

    @property
    def supersedes(self) -> list[str]:
        """The memories this one supersedes."""
        return [r.target_id for r in self.relations
                if r.type == "supersedes" and r.source_id == self.memory.id]

    @property
    def superseded_by(self) -> list[str]:
        """The memories that superseded this one."""
        return [r.source_id for r in self.relations
                if r.type == "supersedes" and r.target_id == self.memory.id]


@dataclass(frozen=True)
class ImportResult:
    imported: int
    unchanged: int
    relations_written: int
    relations_skipped: int


@dataclass(frozen=True)
class DeleteMatchingResult:
    matched: int
    deleted: int  # 0 on a dry run
    sample: tuple[Memory, ...]
    purged: bool


@dataclass(frozen=True)
class NamespaceSummary:
    """A namespace the caller may see, with what it holds now."""

    namespace: str
    memories: int  # what count() answers for it: not deleted, not expired, not ended
    pinned: int  # of those
    sensitive: int  # of those
    last_updated: datetime | None  # the newest change of any of its memories (deletes too)


@dataclass(frozen=True)
class Caller:
    """Who the gateway took the caller to be (never a secret): kind is "api_key", "jwt" or
    "local" (authentication off: grants ("*",), every scope)."""

    subject: str
    grants: tuple[str, ...]  # exact namespaces and prefix patterns ("acme-*", "*")
    scopes: tuple[str, ...]  # "read", "write", "admin"
    kind: str


@dataclass(frozen=True)
class NamespaceList:
    """Every namespace the caller's grants cover that holds memories, in the database's text
    order, and who the caller is."""

    namespaces: tuple[NamespaceSummary, ...]
    caller: Caller
