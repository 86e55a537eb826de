"""A Memory's fields, declared once.

`FIELDS` holds one row per field of recallmesh.v1.Memory: its name (the proto field, and the
attribute of NewMemory, StoredMemory and the client's Memory), its `memories` column, its kind
(how it converts) and who may set it. Everything that maps a memory between the database, the
wire and Python reads it: the store's SELECT list and its INSERT and version parameters, the
Update paths, History's version rows, the reply writer (`memory_to_proto`), the client's
request builders and reply readers, and the CLI's JSONL records. A test fails when a field of
the proto is missing here (tests/unit/test_memory_fields.py); docs/reference/layout.md walks
through adding one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from recallmesh.v1 import memory_pb2
from recallmesh.wire.timestamps import optional_datetime

DEFAULT_IMPORTANCE = 0.5


class SetBy(StrEnum):
    """Who may set a field."""

    CLIENT = "client"  # on Store and Update (an update_mask path; a version keeps it)
    STORE = "store"  # on Store and Import only (never changed afterwards)
    IMPORT = "import"  # by an Import only (it restores what the server set where it was made)
    SERVER = "server"  # the server alone (output only)


@dataclass(frozen=True)
class MemoryField:
    name: str  # the proto field and the Python attribute
    column: str | None  # the memories column; None: not a column of its own
    kind: str  # id, text, labels, real, flag, time, map, relations
    set_by: SetBy

    @property
    def updatable(self) -> bool:
        """An update_mask path: an Update may change it, and a version keeps it."""
        return self.set_by is SetBy.CLIENT


FIELDS: tuple[MemoryField, ...] = (
    MemoryField("id", "id", "id", SetBy.STORE),  # empty on Store: the server assigns one
    MemoryField("namespace", "namespace", "text", SetBy.SERVER),  # the request's
    MemoryField("content", "content", "text", SetBy.CLIENT),
    MemoryField("category", "category", "text", SetBy.CLIENT),
    MemoryField("tags", "tags", "labels", SetBy.CLIENT),
    MemoryField("importance", "importance", "real", SetBy.CLIENT),
    MemoryField("sensitive", "is_sensitive", "flag", SetBy.CLIENT),
    MemoryField("created_at", "created_at", "time", SetBy.STORE),
    MemoryField("updated_at", "updated_at", "time", SetBy.IMPORT),
    MemoryField("valid_from", "valid_from", "time", SetBy.CLIENT),
    MemoryField("valid_to", "valid_to", "time", SetBy.CLIENT),
    MemoryField("metadata", "metadata", "map", SetBy.CLIENT),
    MemoryField("relations", None, "relations", SetBy.STORE),  # memory_edges; input only
    MemoryField("expires_at", "expires_at", "time", SetBy.CLIENT),
    MemoryField("thread", "thread", "text", SetBy.CLIENT),
    MemoryField("superseded_by", None, "id", SetBy.SERVER),  # read from memory_edges
    MemoryField("deleted_at", "deleted_at", "time", SetBy.SERVER),
    MemoryField("pinned", "pinned", "flag", SetBy.CLIENT),
)
BY_NAME = {f.name: f for f in FIELDS}

# The fields a memories row holds, in the order every SELECT of a memory reads them.
STORED = tuple(f for f in FIELDS if f.column is not None)
COLUMNS = ", ".join("id::text" if f.name == "id" else f.column or "" for f in STORED)
# Update paths a client may name, and the column each one writes; a version keeps the same.
UPDATE_PATHS = {f.name: f.column or "" for f in FIELDS if f.updatable}
UPDATABLE = tuple(UPDATE_PATHS)
# The kept fields' columns, and their statement parameters (named like the fields), in order.
VERSIONED_COLUMNS = ", ".join(UPDATE_PATHS.values())
VERSIONED_PARAMS = ", ".join(f"%({name})s" for name in UPDATABLE)
# What a client may give on Store (and a JSONL record may hold): every field it may set.
STORE_FIELDS = tuple(f.name for f in FIELDS if f.set_by in (SetBy.CLIENT, SetBy.STORE))
# What a reply carries (relations are input only; History returns them as links).
RETURNED = tuple(f for f in FIELDS if f.kind != "relations")


def from_column(kind: str, value: Any) -> Any:
    """A column's value as its field holds it."""
    if kind == "labels":
        return tuple(value)
    if kind == "real":
        return float(value)
    if kind == "flag":
        return bool(value)
    if kind == "map":
        return dict(value or {})
    return value


def to_column(kind: str, value: Any) -> Any:
    """A field's value as its column takes it (a map is wrapped by the caller: psycopg's
    Jsonb stays out of the wire package)."""
    return list(value) if kind == "labels" else value


def column_values(memory: Any, names: Iterable[str]) -> dict[str, Any]:
    """{field name: value for its column} of `memory` (a NewMemory or a StoredMemory)."""
    return {n: to_column(BY_NAME[n].kind, getattr(memory, n)) for n in names}


@dataclass(frozen=True)
class NewMemory:
    """A validated write (Store, StoreBatch, Import): the fields a client may set."""

    content: str
    id: str | None = None  # client-supplied: the write's idempotency key (None: server assigns)
    category: str = ""
    tags: tuple[str, ...] = ()
    importance: float = DEFAULT_IMPORTANCE
    sensitive: bool = False
    created_at: datetime | None = None
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    relations: tuple[tuple[str, str], ...] = ()  # (relation type, target memory id)
    expires_at: datetime | None = None  # None: the namespace's default TTL, if any
    thread: str = ""  # the conversation / session it belongs to ('' = none)
    pinned: bool = False  # always in Context, first


@dataclass(frozen=True)
class StoredMemory:
    """A memory as stored (a memories row, and who superseded it)."""

    id: str
    namespace: str
    content: str
    category: str
    tags: tuple[str, ...]
    importance: float
    sensitive: bool
    created_at: datetime
    updated_at: datetime
    valid_from: datetime | None
    valid_to: datetime | None
    metadata: dict[str, str]
    expires_at: datetime | None = None
    thread: str = ""
    superseded_by: str = ""  # the memory that superseded this one (read with it)
    pinned: bool = False
    deleted_at: datetime | None = None

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> StoredMemory:
        """A row read as `SELECT {COLUMNS}`."""
        return cls(**{f.name: from_column(f.kind, v) for f, v in zip(STORED, row, strict=True)})


def memory_from_proto_fields(msg: memory_pb2.Memory) -> dict[str, Any]:
    """A returned recallmesh.v1.Memory's fields as plain values, by name (the client's Memory
    is built from them): an absent time is None, an absent importance the default."""
    values: dict[str, Any] = {}
    for f in RETURNED:
        if f.kind == "time":
            values[f.name] = optional_datetime(msg, f.name)
        elif f.kind == "labels":
            values[f.name] = tuple(getattr(msg, f.name))
        elif f.kind == "map":
            values[f.name] = dict(getattr(msg, f.name))
        elif f.name == "importance":
            values[f.name] = msg.importance if msg.HasField("importance") else DEFAULT_IMPORTANCE
        else:
            values[f.name] = getattr(msg, f.name)
    return values


@dataclass(frozen=True)
class Link:
    type: str  # supersedes, derived_from, references, about
    source_id: str
    target_id: str
    created_at: datetime


@dataclass(frozen=True)
class Version:
    version: int
    memory: StoredMemory  # the fields as they were
    replaced_at: datetime
    replaced_by: str
    changed: tuple[str, ...]
    imported_by: str = ""  # who wrote it here by Import ("" for a version an Update kept)


@dataclass(frozen=True)
class Record:
    memory: StoredMemory
    relations: list[Link]  # the ones it states
    versions: list[Version]
