"""A memory's fields as Store, StoreBatch, Update and Import send them (new_memory, per field
group), a batch's size and ids, an Update's mask, and a write's wait for indexing."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from recallmesh.shared.errors import InvalidArgument
from recallmesh.v1 import memory_pb2
from recallmesh.wire.enums import RELATION_TYPE_NAMES
from recallmesh.wire.filters import MAX_LABEL_CHARS, metadata_key_problem
from recallmesh.wire.memory_fields import (
    DEFAULT_IMPORTANCE,
    UPDATE_PATHS,
    NewMemory,
    column_values,
)
from recallmesh.wire.real import as_real
from recallmesh.wire.timestamps import from_proto_timestamp
from recallmesh.wire.validation.names import memory_id, namespace, no_nul

MAX_CONTENT_BYTES = 32 * 1024
MAX_TAGS = 32
MAX_METADATA_ENTRIES = 64
MAX_METADATA_VALUE_CHARS = 1024
MAX_THREAD_CHARS = 128  # the column's CHECK (migration 0012)
MAX_BATCH = 1000
MAX_RELATIONS = 16
# The largest request the gateway's public port accepts (gRPC's own default): a StoreBatch of
# MAX_BATCH memories of about 4 KiB each, or of 127 memories at MAX_CONTENT_BYTES. Larger is
# RESOURCE_EXHAUSTED from gRPC itself, before any code runs; split the batch. What 64 RPCs in
# progress hold at once stays within the gateway's memory limit (k8s/base/gateway.yaml;
# docs/decisions/0017-smaller-settings-and-limits.md).
MAX_REQUEST_BYTES = 4 * 1024 * 1024


def new_memory(msg: memory_pb2.Memory, ns: str, where: str = "memory",
               imported: bool = False) -> NewMemory:
    """Validate a recallmesh.v1.Memory for Store / StoreBatch (`imported`: for Import, where
    an expiry may have passed since the export: the memory is written expired, never read, and
    the sweeper purges it). The field groups are checked in this order, each by its helper;
    the first violation is the answer."""
    new_id = _new_id(msg, where)
    _same_namespace(msg, ns, where)
    content = _content(msg, where)
    category, thread, tags = _labels(msg, where)
    importance = _importance(msg, where)
    metadata = _metadata(msg, where)
    created_at, valid_from, valid_to, expires_at = _times(msg, where, imported)
    relations = _relations(msg, where)
    return NewMemory(
        content=content,
        id=new_id,
        category=category,
        tags=tags,
        importance=float(importance),
        sensitive=bool(msg.sensitive),
        created_at=created_at,
        valid_from=valid_from,
        valid_to=valid_to,
        metadata=metadata,
        relations=relations,
        expires_at=expires_at,
        thread=thread,
        pinned=bool(msg.pinned),
    )


def _new_id(msg: memory_pb2.Memory, where: str) -> str | None:
    """The client's id (None: the server makes one)."""
    if not msg.id.strip():
        return None
    try:
        return memory_id(msg.id)
    except InvalidArgument:
        raise InvalidArgument(f"{where}.id must be a UUID (or empty)") from None


def _same_namespace(msg: memory_pb2.Memory, ns: str, where: str) -> None:
    """A memory's namespace, when set, is the request's."""
    if msg.namespace and (not msg.namespace.strip()
                          or namespace(msg.namespace, f"{where}.namespace") != ns):
        raise InvalidArgument(f"{where}.namespace differs from the request namespace")


def _content(msg: memory_pb2.Memory, where: str) -> str:
    content = no_nul(msg.content, f"{where}.content")
    if not content.strip():
        raise InvalidArgument(f"{where}.content must not be empty")
    if len(content.encode("utf-8")) > MAX_CONTENT_BYTES:
        raise InvalidArgument(f"{where}.content exceeds {MAX_CONTENT_BYTES} bytes")
    return content


def _labels(msg: memory_pb2.Memory, where: str) -> tuple[str, str, tuple[str, ...]]:
    """Category, thread and tags (trimmed; a repeated tag once)."""
    category = no_nul(msg.category.strip(), f"{where}.category")
    if len(category) > MAX_LABEL_CHARS:
        raise InvalidArgument(f"{where}.category must be at most {MAX_LABEL_CHARS} characters")
    thread = no_nul(msg.thread.strip(), f"{where}.thread")
    if len(thread) > MAX_THREAD_CHARS:
        raise InvalidArgument(f"{where}.thread must be at most {MAX_THREAD_CHARS} characters")
    if len(msg.tags) > MAX_TAGS:
        raise InvalidArgument(f"{where}.tags: at most {MAX_TAGS} tags")
    tags: list[str] = []
    for i, raw in enumerate(msg.tags):
        tag = no_nul(raw.strip(), f"{where}.tags[{i}]")
        if not tag or len(tag) > MAX_LABEL_CHARS:
            raise InvalidArgument(f"{where}.tags[{i}] must be 1..{MAX_LABEL_CHARS} characters")
        if tag not in tags:
            tags.append(tag)
    return category, thread, tuple(tags)


def _importance(msg: memory_pb2.Memory, where: str) -> float:
    if not msg.HasField("importance"):
        return DEFAULT_IMPORTANCE
    importance = as_real(msg.importance)  # as the `real` column stores it
    if not math.isfinite(importance) or not 0.0 <= importance <= 1.0:
        raise InvalidArgument(f"{where}.importance must be within [0, 1], got "
                              f"{msg.importance}")
    return importance


def _metadata(msg: memory_pb2.Memory, where: str) -> dict[str, str]:
    if len(msg.metadata) > MAX_METADATA_ENTRIES:
        raise InvalidArgument(f"{where}.metadata: at most {MAX_METADATA_ENTRIES} entries")
    metadata: dict[str, str] = {}
    for key, value in msg.metadata.items():
        if problem := metadata_key_problem(key):
            raise InvalidArgument(f"{where}.metadata key {key[:32]!r} {problem}")
        if len(value) > MAX_METADATA_VALUE_CHARS:
            raise InvalidArgument(
                f"{where}.metadata[{key[:32]!r}] exceeds {MAX_METADATA_VALUE_CHARS} characters"
            )
        metadata[key] = no_nul(value, f"{where}.metadata value")
    return metadata


def _times(msg: memory_pb2.Memory, where: str, imported: bool
           ) -> tuple[datetime | None, datetime | None, datetime | None, datetime | None]:
    """created_at, valid_from, valid_to and expires_at (None: unset)."""

    def ts(name: str) -> datetime | None:
        return (
            from_proto_timestamp(getattr(msg, name), f"{where}.{name}")
            if msg.HasField(name)
            else None
        )

    valid_from, valid_to = ts("valid_from"), ts("valid_to")
    if valid_from is not None and valid_to is not None and valid_from > valid_to:
        raise InvalidArgument(f"{where}.valid_from must not be after {where}.valid_to")
    created_at, expires_at = ts("created_at"), ts("expires_at")
    if expires_at is not None:
        if expires_at <= datetime.now(UTC) and not imported:
            raise InvalidArgument(f"{where}.expires_at must be in the future (or unset), got "
                                  f"{expires_at.isoformat()}")
        if created_at is not None and expires_at <= created_at:
            raise InvalidArgument(f"{where}.expires_at must be after {where}.created_at")
    return created_at, valid_from, valid_to, expires_at


def _relations(msg: memory_pb2.Memory, where: str) -> tuple[tuple[str, str], ...]:
    """(type, target id) pairs, a repeated one once."""
    if len(msg.relations) > MAX_RELATIONS:
        raise InvalidArgument(f"{where}.relations: at most {MAX_RELATIONS}")
    relations: list[tuple[str, str]] = []
    for i, rel in enumerate(msg.relations):
        if rel.type not in RELATION_TYPE_NAMES:
            raise InvalidArgument(
                f"{where}.relations[{i}].type must be one of "
                f"{', '.join(RELATION_TYPE_NAMES.values())} (RELATION_TYPE_*)")
        try:
            target = memory_id(rel.target_id)
        except InvalidArgument:
            raise InvalidArgument(f"{where}.relations[{i}].target_id must be a UUID") from None
        if (RELATION_TYPE_NAMES[rel.type], target) not in relations:
            relations.append((RELATION_TYPE_NAMES[rel.type], target))
    return tuple(relations)


def new_memories(msgs: Sequence[memory_pb2.Memory], ns: str) -> list[NewMemory]:
    if not msgs:
        raise InvalidArgument("memories must not be empty")
    if len(msgs) > MAX_BATCH:
        raise InvalidArgument(f"a batch holds at most {MAX_BATCH} memories, got {len(msgs)}")
    memories = [new_memory(m, ns, where=f"memories[{i}]") for i, m in enumerate(msgs)]
    first: dict[str, int] = {}
    for i, memory in enumerate(memories):
        if memory.id is not None:
            if memory.id in first:
                raise InvalidArgument(f"memories[{i}].id repeats memories[{first[memory.id]}].id")
            first[memory.id] = i
    return memories


def memory_update(msg: memory_pb2.Memory, paths: Sequence[str], ns: str) -> dict[str, Any]:
    """Validate an UpdateRequest's memory + update_mask: {column: new value}.

    Each named field is validated exactly like on Store; fields not named are
    ignored (and may be anything). An importance named but absent resets to
    the default, like on Store; an expires_at named but absent clears it (the
    namespace's default TTL applies on Store only).
    """
    names = [p.strip() for p in paths]
    if not names:
        raise InvalidArgument("update_mask must name at least one field")
    unknown = sorted({n for n in names if n not in UPDATE_PATHS})
    if unknown:
        raise InvalidArgument(
            f"update_mask: cannot update {', '.join(unknown)} "
            f"(allowed: {', '.join(UPDATE_PATHS)})"
        )
    # Validate only the named fields: copy them onto an otherwise valid memory.
    probe = memory_pb2.Memory(content="-")
    for name in dict.fromkeys(names):
        if name in ("tags", "metadata"):
            getattr(probe, name).MergeFrom(getattr(msg, name))
        elif name in ("importance", "valid_from", "valid_to", "expires_at"):
            if msg.HasField(name):
                field = getattr(msg, name)
                if name == "importance":
                    probe.importance = field
                else:
                    getattr(probe, name).CopyFrom(field)
        else:
            setattr(probe, name, getattr(msg, name))
    checked = new_memory(probe, ns)
    # named but unset, expires_at is None: the memory no longer expires
    values = column_values(checked, dict.fromkeys(names))
    return {UPDATE_PATHS[n]: value for n, value in values.items()}


# A write's wait for indexing holds a concurrency slot and polls the database every 100 ms:
# long enough for a StoreBatch of MAX_BATCH memories on a CPU indexer several times over
# (docs/decisions/0017-smaller-settings-and-limits.md). A bulk load that needs longer stores
# without waiting (or in smaller batches); `indexed` says whether the wait was enough.
MAX_INDEX_WAIT_MS = 60_000


def index_wait(msg: memory_pb2.IndexWait, has_field: bool) -> int | None:
    """Milliseconds a write may wait for indexing (0 = server default), or None for no wait."""
    if not has_field or not msg.wait:
        return None
    if not 0 <= msg.timeout_ms <= MAX_INDEX_WAIT_MS:
        raise InvalidArgument(
            f"index_wait.timeout_ms must be within 0..{MAX_INDEX_WAIT_MS}, got {msg.timeout_ms}"
        )
    return msg.timeout_ms

