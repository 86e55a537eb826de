"""Request validation: proto messages in, plain validated values out.

Every limit a caller can hit is defined here and documented in docs/api.md.
Violations raise InvalidArgument with a message naming the field.
"""

from __future__ import annotations

import math
import unicodedata
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from recallmesh.policy import Overrides, SortBy, checked
from recallmesh.shared.errors import InvalidArgument
from recallmesh.v1 import memory_pb2
from recallmesh.wire.enums import RELATION_TYPE_NAMES, sort_by
from recallmesh.wire.filters import (
    MAX_LABEL_CHARS,
    Filters,
    filters_from_proto,
    metadata_key_problem,
)
from recallmesh.wire.memory_fields import (
    DEFAULT_IMPORTANCE,
    UPDATE_PATHS,
    NewMemory,
    column_values,
)
from recallmesh.wire.real import as_real
from recallmesh.wire.timestamps import from_proto_timestamp

MAX_NAMESPACE_CHARS = 128
MAX_CONTENT_BYTES = 32 * 1024
MAX_QUERY_BYTES = 4 * 1024
MAX_TAGS = 32
MAX_METADATA_ENTRIES = 64
MAX_METADATA_VALUE_CHARS = 1024
MAX_THREAD_CHARS = 128  # the column's CHECK (migration 0012)
MAX_BATCH = 1000
MAX_RELATIONS = 16
DEFAULT_K = 10
MAX_K = 100
# A recall's budget holds a concurrency slot, a connection per leg and the embedding queue
# for as long as it runs: far above any recall's need, short enough that a client cannot park
# work on the gateway (docs/decisions/0017-smaller-settings-and-limits.md).
MAX_BUDGET_MS = 10_000
# The largest request the gateway's public port accepts (gRPC's own default): a StoreBatch of
# MAX_BATCH memories of about 4 KiB each, or of 127 memories at MAX_CONTENT_BYTES. Larger is
# RESOURCE_EXHAUSTED from gRPC itself, before any code runs; split the batch. What 64 RPCs in
# progress hold at once stays within the gateway's memory limit (k8s/base/gateway.yaml;
# docs/decisions/0017-smaller-settings-and-limits.md).
MAX_REQUEST_BYTES = 4 * 1024 * 1024

@dataclass(frozen=True)
class RecallQuery:
    namespace: str
    query: str
    k: int = DEFAULT_K
    sort_by: SortBy = "relevance"
    filters: Filters = Filters()
    budget_ms: int | None = None
    explain: bool = False
    fusion: Overrides = Overrides()  # the request's recall settings (recallmesh/policy.py)
    reference_time: datetime | None = None  # None: the server's clock
    # The relevance floor cuts each hit (Context) instead of the answer as a whole (Recall).
    floor_each_hit: bool = False


def _no_nul(value: str, name: str) -> str:
    if "\x00" in value:
        raise InvalidArgument(f"{name} must not contain NUL characters")
    return value


# Default_Ignorable_Code_Point characters (Unicode DerivedCoreProperties) that are not
# format (Cf) or unassigned (Cn) characters, which namespace() rejects by category anyway:
# invisible fillers, variation selectors and the combining grapheme joiner.
_INVISIBLE = frozenset(
    [0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x180B, 0x180C, 0x180D, 0x180F, 0x3164, 0xFFA0]
    + list(range(0xFE00, 0xFE10)) + list(range(0xE0100, 0xE01F0))
)
# Unicode general categories a namespace must not contain, and how a message names them.
_NAMESPACE_FORBIDDEN = {
    "Cc": "control character",
    "Cf": "format character: zero-width, bidi control or similar",
    "Cs": "surrogate",
    "Co": "private-use character",
    "Cn": "unassigned code point",
    "Zl": "line separator",
    "Zp": "paragraph separator",
    "Zs": "space other than U+0020",
}


def _namespace_problem(char: str) -> str:
    """Why `char` may not appear in a namespace, or "" when it may."""
    if char == " ":
        return ""
    if ord(char) in _INVISIBLE:
        return "invisible character"
    return _NAMESPACE_FORBIDDEN.get(unicodedata.category(char), "")


def namespace(value: str, name: str = "namespace") -> str:
    """A request's namespace: NFC-normalised, trimmed, 1..128 printable characters.

    Printable: no character of the categories in _NAMESPACE_FORBIDDEN (control, format,
    surrogate, private use, unassigned, separators; U+0020 is allowed inside) and none of
    _INVISIBLE. A rejection names the field and the first offending code point, never the
    raw input.
    """
    value = unicodedata.normalize("NFC", value).strip()
    if not value:
        raise InvalidArgument(f"{name} is required")
    return _namespace_chars(value, name)


def namespace_prefix(value: str, name: str = "prefix") -> str:
    """The start of namespace names (ListNamespaces): "" for every one, else NFC-normalised
    characters as namespace() takes them, not trimmed (a prefix may end with a space inside a
    name)."""
    value = unicodedata.normalize("NFC", value)
    return _namespace_chars(value, name) if value else ""


def _namespace_chars(value: str, name: str) -> str:
    if len(value) > MAX_NAMESPACE_CHARS:
        raise InvalidArgument(f"{name} must be at most {MAX_NAMESPACE_CHARS} characters")
    for i, char in enumerate(value):
        if problem := _namespace_problem(char):
            raise InvalidArgument(
                f"{name} must not contain U+{ord(char):04X} ({problem}) at character "
                f"{i + 1}; a namespace holds printable characters only"
            )
    return value


def memory_id(value: str) -> str:
    try:
        return str(uuid.UUID(value.strip()))
    except ValueError:
        raise InvalidArgument(f"id must be a UUID, got {value[:64]!r}") from None


def _same_id(value: str) -> str | None:
    """`value` as the id it names (ids compare as UUIDs: case and braces aside), or None."""
    try:
        return memory_id(value)
    except InvalidArgument:
        return None


def new_memory(msg: memory_pb2.Memory, ns: str, where: str = "memory",
               imported: bool = False) -> NewMemory:
    """Validate a recallmesh.v1.Memory for Store / StoreBatch (`imported`: for Import, where
    an expiry may have passed since the export: the memory is written expired, never read, and
    the sweeper purges it)."""
    new_id = None
    if msg.id.strip():
        try:
            new_id = memory_id(msg.id)
        except InvalidArgument:
            raise InvalidArgument(f"{where}.id must be a UUID (or empty)") from None
    if msg.namespace and (not msg.namespace.strip()
                          or namespace(msg.namespace, f"{where}.namespace") != ns):
        raise InvalidArgument(f"{where}.namespace differs from the request namespace")
    content = _no_nul(msg.content, f"{where}.content")
    if not content.strip():
        raise InvalidArgument(f"{where}.content must not be empty")
    if len(content.encode("utf-8")) > MAX_CONTENT_BYTES:
        raise InvalidArgument(f"{where}.content exceeds {MAX_CONTENT_BYTES} bytes")
    category = _no_nul(msg.category.strip(), f"{where}.category")
    if len(category) > MAX_LABEL_CHARS:
        raise InvalidArgument(f"{where}.category must be at most {MAX_LABEL_CHARS} characters")
    thread = _no_nul(msg.thread.strip(), f"{where}.thread")
    if len(thread) > MAX_THREAD_CHARS:
        raise InvalidArgument(f"{where}.thread must be at most {MAX_THREAD_CHARS} characters")
    if len(msg.tags) > MAX_TAGS:
        raise InvalidArgument(f"{where}.tags: at most {MAX_TAGS} tags")
    tags: list[str] = []
    for i, raw in enumerate(msg.tags):
        tag = _no_nul(raw.strip(), f"{where}.tags[{i}]")
        if not tag or len(tag) > MAX_LABEL_CHARS:
            raise InvalidArgument(f"{where}.tags[{i}] must be 1..{MAX_LABEL_CHARS} characters")
        if tag not in tags:
            tags.append(tag)
    importance = DEFAULT_IMPORTANCE
    if msg.HasField("importance"):
        importance = as_real(msg.importance)  # as the `real` column stores it
        if not math.isfinite(importance) or not 0.0 <= importance <= 1.0:
            raise InvalidArgument(f"{where}.importance must be within [0, 1], got "
                                  f"{msg.importance}")
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
        metadata[key] = _no_nul(value, f"{where}.metadata value")

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
    return NewMemory(
        content=content,
        id=new_id,
        category=category,
        tags=tuple(tags),
        importance=float(importance),
        sensitive=bool(msg.sensitive),
        created_at=created_at,
        valid_from=valid_from,
        valid_to=valid_to,
        metadata=metadata,
        relations=tuple(relations),
        expires_at=expires_at,
        thread=thread,
        pinned=bool(msg.pinned),
    )


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


def query_text(value: str) -> str:
    _no_nul(value, "query")
    if not value.strip():
        raise InvalidArgument("query must not be empty")
    if len(value.encode("utf-8")) > MAX_QUERY_BYTES:
        raise InvalidArgument(f"query exceeds {MAX_QUERY_BYTES} bytes")
    return value


def _recall_basics(msg: memory_pb2.RecallRequest | memory_pb2.ContextRequest,
                   default_k: int) -> tuple[str, str, int, int | None]:
    """A RecallRequest's or ContextRequest's namespace, query, k and budget_ms (None: the
    server's), validated in this order."""
    ns = namespace(msg.namespace)
    query = query_text(msg.query)
    k = msg.k or default_k
    if not 1 <= k <= MAX_K:
        raise InvalidArgument(f"k must be within 1..{MAX_K}, got {msg.k}")
    if not 0 <= msg.budget_ms <= MAX_BUDGET_MS:
        raise InvalidArgument(f"budget_ms must be within 0..{MAX_BUDGET_MS}, got {msg.budget_ms}")
    return ns, query, k, msg.budget_ms or None


def _filters_and_reference_time(
    msg: memory_pb2.RecallRequest | memory_pb2.ContextRequest,
) -> tuple[Filters, datetime | None]:
    return (filters_from_proto(msg.filters if msg.HasField("filters") else None),
            from_proto_timestamp(msg.reference_time, "reference_time")
            if msg.HasField("reference_time") else None)


def recall_query(msg: memory_pb2.RecallRequest) -> RecallQuery:
    """Validate a recallmesh.v1.RecallRequest."""
    ns, query, k, budget_ms = _recall_basics(msg, DEFAULT_K)
    order = sort_by(msg.sort_by)
    filters, reference_time = _filters_and_reference_time(msg)
    return RecallQuery(
        namespace=ns,
        query=query,
        k=k,
        sort_by=order,
        filters=filters,
        budget_ms=budget_ms,
        explain=msg.explain,
        fusion=Overrides.from_proto(msg.fusion) if msg.HasField("fusion") else Overrides(),
        reference_time=reference_time,
    )


# Context (a recall packed into a token budget): its limits.
DEFAULT_CONTEXT_TOKENS = 1000
MIN_CONTEXT_TOKENS = 16  # the heading line always fits
MAX_CONTEXT_TOKENS = 32_768
DEFAULT_CONTEXT_K = 20


@dataclass(frozen=True)
class ContextQuery:
    recall: RecallQuery
    max_tokens: int = DEFAULT_CONTEXT_TOKENS
    include_sensitive: bool = False


def context_query(msg: memory_pb2.ContextRequest) -> ContextQuery:
    """Validate a recallmesh.v1.ContextRequest."""
    ns, query, k, budget_ms = _recall_basics(msg, DEFAULT_CONTEXT_K)
    max_tokens = msg.max_tokens or DEFAULT_CONTEXT_TOKENS
    if not MIN_CONTEXT_TOKENS <= max_tokens <= MAX_CONTEXT_TOKENS:
        raise InvalidArgument(f"max_tokens must be within {MIN_CONTEXT_TOKENS}.."
                              f"{MAX_CONTEXT_TOKENS}, got {msg.max_tokens}")
    filters, reference_time = _filters_and_reference_time(msg)
    fusion = Overrides()
    if msg.HasField("min_score"):
        fusion = Overrides({"min_score": checked("min_score", msg.min_score, "min_score")})
    recall = RecallQuery(namespace=ns, query=query, k=k, filters=filters, budget_ms=budget_ms,
                         reference_time=reference_time, fusion=fusion, floor_each_hit=True)
    return ContextQuery(recall, max_tokens, msg.include_sensitive)


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


# Listing: List / Count / Export / DeleteMatching (recallmesh/gateway/listing.py).
DEFAULT_PAGE_SIZE = 100
DEFAULT_EXPORT_PAGE_SIZE = 200
MAX_PAGE_SIZE = 1000
MAX_PAGE_TOKEN_CHARS = 1024
PAGE_TOKEN_NOT_OURS = "page_token is not one this server made"
DEFAULT_SAMPLE = 10
MAX_SAMPLE = 100
LIST_ORDERS = {
    memory_pb2.LIST_ORDER_UNSPECIFIED: "created_at",
    memory_pb2.LIST_ORDER_CREATED: "created_at",
    memory_pb2.LIST_ORDER_UPDATED: "updated_at",
    memory_pb2.LIST_ORDER_IMPORTANCE: "importance",
}


@dataclass(frozen=True)
class ListQuery:
    """Which memories of a namespace a List, Count, Export or DeleteMatching reads."""

    namespace: str
    filters: Filters = Filters()
    order_by: str = "created_at"  # a column: created_at, updated_at or importance
    ascending: bool = False
    page_size: int = DEFAULT_PAGE_SIZE
    page_token: str = ""
    include_deleted: bool = False
    include_ended: bool = False


def _page(size: int, default: int, token: str) -> tuple[int, str]:
    if not 0 <= size <= MAX_PAGE_SIZE:
        raise InvalidArgument(f"page_size must be within 0..{MAX_PAGE_SIZE}, got {size}")
    if len(token) > MAX_PAGE_TOKEN_CHARS:
        raise InvalidArgument(PAGE_TOKEN_NOT_OURS)
    return size or default, token


def _filters(msg: Any) -> Filters:
    return filters_from_proto(msg.filters if msg.HasField("filters") else None)


def list_query(msg: memory_pb2.ListRequest) -> ListQuery:
    ns = namespace(msg.namespace)
    if msg.order_by not in LIST_ORDERS:
        raise InvalidArgument(f"order_by must be one of LIST_ORDER_*, got {msg.order_by}")
    size, token = _page(msg.page_size, DEFAULT_PAGE_SIZE, msg.page_token)
    return ListQuery(ns, _filters(msg), LIST_ORDERS[msg.order_by], msg.ascending, size, token,
                     msg.include_deleted, msg.include_ended)


@dataclass(frozen=True)
class NamespacesQuery:
    """Which namespaces a ListNamespaces reads (of those the caller's grants cover)."""

    prefix: str = ""
    page_size: int = DEFAULT_PAGE_SIZE
    page_token: str = ""


def namespaces_query(msg: memory_pb2.ListNamespacesRequest) -> NamespacesQuery:
    size, token = _page(msg.page_size, DEFAULT_PAGE_SIZE, msg.page_token)
    return NamespacesQuery(namespace_prefix(msg.prefix), size, token)


def count_query(msg: memory_pb2.CountRequest) -> ListQuery:
    return ListQuery(namespace(msg.namespace), _filters(msg),
                     include_deleted=msg.include_deleted, include_ended=msg.include_ended)


def export_query(msg: memory_pb2.ExportRequest) -> ListQuery:
    """Export: the live memories, current and ended, oldest first."""
    ns = namespace(msg.namespace)
    size, token = _page(msg.page_size, DEFAULT_EXPORT_PAGE_SIZE, msg.page_token)
    return ListQuery(ns, _filters(msg), "created_at", True, size, token,
                     include_deleted=False, include_ended=True)


def delete_matching(msg: memory_pb2.DeleteMatchingRequest) -> tuple[ListQuery, int]:
    """The memories a DeleteMatching names (live ones, current and ended), and its sample
    size. Filters are required: DeleteNamespace is the call that removes everything."""
    ns = namespace(msg.namespace)
    filters = _filters(msg)
    if filters.empty:
        raise InvalidArgument("filters must name at least one condition (DeleteNamespace "
                              "removes a whole namespace)")
    if msg.purge and not msg.confirm:
        raise InvalidArgument("purge needs confirm (a dry run deletes nothing)")
    if not 0 <= msg.sample_size <= MAX_SAMPLE:
        raise InvalidArgument(f"sample_size must be within 0..{MAX_SAMPLE}, got "
                              f"{msg.sample_size}")
    return (ListQuery(ns, filters, include_deleted=False, include_ended=True),
            msg.sample_size or DEFAULT_SAMPLE)


# Versions and the answers that carry them are bounded (docs/decisions/0011-hostile-input-rules.md,
# which holds the measurements). A memory keeps its newest
# MAX_VERSIONS earlier states: the Update that makes one more drops the oldest, so History's
# first version may be later than 1. One Import writes at most MAX_IMPORT_VERSIONS versions
# under its namespace's lock, which it holds for as long as it writes. A History or Export
# answer stays within MAX_RESPONSE_BYTES, below gRPC's 4 MiB default for what a client
# receives: an Export page ends early (its token continues it), and a memory whose versions
# alone would pass it leaves out its oldest versions and says how many (versions_left_out).
MAX_VERSIONS = 100
MAX_IMPORT_VERSIONS = 2000
MAX_RESPONSE_BYTES = 3 * 1024 * 1024
MAX_VERSION_NUMBER = 2**30  # an imported version's number; far from the column's int4 end


@dataclass(frozen=True)
class ImportedVersion:
    version: int
    fields: NewMemory
    updated_at: datetime
    replaced_at: datetime
    replaced_by: str
    changed: tuple[str, ...]


@dataclass(frozen=True)
class ImportedMemory:
    """One Import record: the memory exactly as exported (id, timestamps, validity), the
    relations it states and its earlier versions."""

    memory: NewMemory  # id and created_at always set
    updated_at: datetime
    relations: tuple[tuple[str, str, datetime | None], ...]  # (type, target id, created_at)
    versions: tuple[ImportedVersion, ...]


def _required_time(msg: Any, name: str, where: str) -> datetime:
    if not msg.HasField(name):
        raise InvalidArgument(f"{where}.{name} is required")
    return from_proto_timestamp(getattr(msg, name), f"{where}.{name}")


def imported_records(msg: memory_pb2.ImportRequest) -> tuple[str, list[ImportedMemory]]:
    ns = namespace(msg.namespace)
    if not msg.records:
        raise InvalidArgument("records must not be empty")
    if len(msg.records) > MAX_BATCH:
        raise InvalidArgument(f"an import holds at most {MAX_BATCH} records, got "
                              f"{len(msg.records)}")
    out: list[ImportedMemory] = []
    seen: dict[str, int] = {}
    total_versions = 0
    for i, record in enumerate(msg.records):
        where = f"records[{i}].memory"
        if not record.memory.id.strip():
            raise InvalidArgument(f"{where}.id is required (an export carries every id)")
        probe = memory_pb2.Memory()
        probe.CopyFrom(record.memory)
        del probe.relations[:]  # an import's relations are records[i].relations
        memory = new_memory(probe, ns, where, imported=True)
        assert memory.id is not None
        if memory.id in seen:
            raise InvalidArgument(f"{where}.id repeats records[{seen[memory.id]}].memory.id")
        seen[memory.id] = i
        created = _required_time(record.memory, "created_at", where)
        updated = _required_time(record.memory, "updated_at", where)
        memory = replace(memory, created_at=created)
        if len(record.relations) > MAX_RELATIONS:
            raise InvalidArgument(f"records[{i}].relations: at most {MAX_RELATIONS}")
        relations = []
        for j, link in enumerate(record.relations):
            lw = f"records[{i}].relations[{j}]"
            if link.type not in RELATION_TYPE_NAMES:
                raise InvalidArgument(f"{lw}.type must be one of RELATION_TYPE_*")
            if link.source_id.strip() and _same_id(link.source_id) != memory.id:
                raise InvalidArgument(f"{lw}.source_id must be the record's memory id")
            try:
                target = memory_id(link.target_id)
            except InvalidArgument:
                raise InvalidArgument(f"{lw}.target_id must be a UUID") from None
            if target == memory.id:
                raise InvalidArgument(f"{lw}.target_id names the memory itself")
            relations.append((RELATION_TYPE_NAMES[link.type], target,
                              from_proto_timestamp(link.created_at, f"{lw}.created_at")
                              if link.HasField("created_at") else None))
        if len(record.versions) > MAX_VERSIONS:
            raise InvalidArgument(f"records[{i}].versions: at most {MAX_VERSIONS} (a memory "
                                  f"keeps its newest {MAX_VERSIONS})")
        total_versions += len(record.versions)
        if total_versions > MAX_IMPORT_VERSIONS:
            raise InvalidArgument(f"an import holds at most {MAX_IMPORT_VERSIONS} versions in "
                                  "all: split the records over several imports")
        versions = []
        first_version = record.versions[0].version if record.versions else 1
        for j, version in enumerate(record.versions):
            vw = f"records[{i}].versions[{j}]"
            if not 1 <= first_version <= MAX_VERSION_NUMBER or version.version != first_version + j:
                raise InvalidArgument(f"{vw}.version must be {max(first_version, 1) + j} "
                                      "(oldest first, consecutive, from 1 or later)")
            vprobe = memory_pb2.Memory()
            vprobe.CopyFrom(version.memory)
            vprobe.id, vprobe.namespace = "", ""
            del vprobe.relations[:]
            fields = new_memory(vprobe, ns, f"{vw}.memory", imported=True)
            unknown = sorted(set(version.changed) - set(UPDATE_PATHS))
            if unknown:
                raise InvalidArgument(f"{vw}.changed names unknown fields: {', '.join(unknown)}")
            by = _no_nul(version.replaced_by, f"{vw}.replaced_by")
            if len(by) > MAX_NAMESPACE_CHARS:
                raise InvalidArgument(f"{vw}.replaced_by must be at most "
                                      f"{MAX_NAMESPACE_CHARS} characters")
            versions.append(ImportedVersion(
                version.version, fields, _required_time(version.memory, "updated_at", vw),
                _required_time(version, "replaced_at", vw), by, tuple(version.changed)))
        out.append(ImportedMemory(memory, updated, tuple(relations), tuple(versions)))
    return ns, out
