"""Requests from the client's arguments, results from the gateway's replies (shared by the
blocking and the asyncio client)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any, TypedDict

from google.protobuf import json_format, timestamp_pb2

from recallmesh.client.types import (
    BatchResult,
    Caller,
    ContextItem,
    ContextResult,
    Deleted,
    DeleteMatchingResult,
    History,
    Hit,
    ImportResult,
    LegContribution,
    LegReport,
    Link,
    Memory,
    NamespaceList,
    NamespaceSummary,
    NewMemory,
    Page,
    QueryIntent,
    RecallResult,
    Relation,
    StoreResult,
    TimeWindow,
    Version,
)
from recallmesh.v1 import memory_pb2 as memory_pb2  # sync and aio build requests with it
from recallmesh.wire.enums import (
    LEG_STATE_NAMES,
    RELATION_TYPE_NAMES,
    RELATION_TYPE_VALUES,
    SORT_BY_VALUES,
)
from recallmesh.wire.filters import FILTER_FIELDS, Filters, filters_to_proto
from recallmesh.wire.memory_fields import BY_NAME, UPDATABLE, memory_from_proto_fields
from recallmesh.wire.timestamps import optional_datetime, to_proto_timestamp
from recallmesh.wire.validation import MAX_BATCH, MAX_IMPORT_VERSIONS


class MemoryFields(TypedDict, total=False):
    """The optional fields of a memory on `store` (docs/api.md has their limits)."""

    category: str
    tags: Sequence[str]
    importance: float
    sensitive: bool
    thread: str
    metadata: Mapping[str, str]
    created_at: datetime
    valid_from: datetime
    valid_to: datetime
    expires_at: datetime
    supersedes: Sequence[str]  # ids this memory replaces (their validity ends now)
    relations: Sequence[Relation]
    id: str  # a client-chosen UUID; default: a new one
    pinned: bool  # always in context, first


class UpdateFields(TypedDict, total=False):
    """The fields `update` changes: only those given. expires_at=None: never expires."""

    content: str
    category: str
    tags: Sequence[str]
    importance: float
    sensitive: bool
    thread: str
    metadata: Mapping[str, str]
    valid_from: datetime | None  # None: no longer set
    valid_to: datetime | None
    expires_at: datetime | None
    pinned: bool


class FilterOptions(TypedDict, total=False):
    """Which memories a call sees (docs/api.md "Filters"): every condition given must hold."""

    categories: Sequence[str]  # any of
    tags: Sequence[str]  # any of
    tags_all: Sequence[str]
    tags_none: Sequence[str]
    threads: Sequence[str]  # any of
    metadata: Mapping[str, str | Sequence[str]]  # key -> a value, or the values it may hold
    importance_min: float
    importance_max: float
    created_after: datetime  # inclusive
    created_before: datetime  # exclusive
    updated_after: datetime
    updated_before: datetime
    as_of: datetime  # valid at this time


class ListOptions(FilterOptions, total=False):
    order_by: str  # created (default), updated, importance
    ascending: bool  # default: newest / most important first
    include_deleted: bool
    include_ended: bool  # superseded and other ended memories


class RecallOptions(FilterOptions, total=False):
    k: int  # 1..100 (default 10)
    sort_by: str  # relevance, importance, recency
    budget_ms: int
    explain: bool
    reference_time: datetime
    fusion: Mapping[str, Any]  # FusionOverrides as JSON names, e.g. {"method": "rrf"}
    min_score: float  # the relevance floor, 0..1 (default: the deployment's); best below: no hits


class ContextOptions(FilterOptions, total=False):
    max_tokens: int  # 16..32768 (default 1000)
    k: int  # memories recalled before packing, 1..100 (default 20)
    budget_ms: int
    reference_time: datetime
    include_sensitive: bool
    min_score: float  # the relevance floor, 0..1 (default: the deployment's); none above: empty


def _ts(value: datetime, target: timestamp_pb2.Timestamp) -> None:
    if value.tzinfo is None:
        raise ValueError(f"{value!r} needs a timezone (e.g. datetime.now(UTC))")
    to_proto_timestamp(value, target)


def _set(memory: memory_pb2.Memory, name: str, value: Any) -> None:
    """Set one field of a Memory message the way its kind takes it (wire/memory_fields.py)."""
    kind = BY_NAME[name].kind
    if kind == "time":
        _ts(value, getattr(memory, name))
    elif kind == "labels":
        getattr(memory, name).extend(value)
    elif kind == "map":
        getattr(memory, name).update(value)
    else:
        setattr(memory, name, value)


def memory_message(content: str, fields: MemoryFields) -> memory_pb2.Memory:
    memory = memory_pb2.Memory(id=fields.get("id") or str(uuid.uuid4()), content=content)
    relations = [Relation("supersedes", i) for i in fields.get("supersedes", ())]
    for name, value in fields.items():
        if name == "relations":
            relations += value  # type: ignore[arg-type]  # MemoryFields types it
        elif name not in ("id", "supersedes") and value is not None:
            _set(memory, name, value)
    for relation in relations:
        if relation.type not in RELATION_TYPE_VALUES:
            raise ValueError(f"relation type must be one of {', '.join(RELATION_TYPE_VALUES)}, "
                             f"got {relation.type!r}")
        memory.relations.add(type=RELATION_TYPE_VALUES[relation.type], target_id=relation.target_id)
    return memory


def new_memory_message(new: NewMemory) -> memory_pb2.Memory:
    fields: dict[str, Any] = {k: getattr(new, k) for k in MemoryFields.__annotations__
                              if k != "supersedes" and getattr(new, k) not in (None, "", ())}
    # a TypedDict cannot be built by a comprehension: the keys are MemoryFields' own
    return memory_message(new.content, fields)  # type: ignore[arg-type]


def encoded_size(new: NewMemory) -> int:
    """The bytes `new` takes in a StoreBatch request (its id included): a bulk import splits
    its batches by it, the gateway taking recallmesh.wire.validation.MAX_REQUEST_BYTES."""
    message = new_memory_message(new if new.id else replace(new, id=str(uuid.uuid4())))
    size: int = message.ByteSize()
    return size + 8  # the field's tag and length


def _index_wait(wait_indexed: bool | float) -> memory_pb2.IndexWait | None:
    if wait_indexed is False:
        return None
    timeout_ms = 0 if wait_indexed is True else int(float(wait_indexed) * 1000)
    return memory_pb2.IndexWait(wait=True, timeout_ms=timeout_ms)


def store_request(namespace: str, content: str, fields: MemoryFields,
                  wait_indexed: bool | float) -> memory_pb2.StoreRequest:
    return memory_pb2.StoreRequest(namespace=namespace, memory=memory_message(content, fields),
                                   index_wait=_index_wait(wait_indexed))


def store_batch_request(namespace: str, memories: Iterable[NewMemory | str],
                        wait_indexed: bool | float) -> memory_pb2.StoreBatchRequest:
    messages = [new_memory_message(NewMemory(m) if isinstance(m, str) else m) for m in memories]
    return memory_pb2.StoreBatchRequest(namespace=namespace, memories=messages,
                                        index_wait=_index_wait(wait_indexed))


def update_request(namespace: str, memory_id: str, fields: UpdateFields,
                   wait_indexed: bool | float) -> memory_pb2.UpdateRequest:
    if not fields:
        raise ValueError("update needs at least one field to change")
    memory = memory_pb2.Memory()
    for name, value in fields.items():
        if name not in UPDATABLE:
            raise ValueError(f"update cannot change {name!r}")
        if value is not None:  # a time given as None: no longer set (named, left unset)
            _set(memory, name, value)
    request = memory_pb2.UpdateRequest(namespace=namespace, id=memory_id, memory=memory,
                                       index_wait=_index_wait(wait_indexed))
    request.update_mask.paths.extend(fields)
    return request


def _filters(options: FilterOptions) -> memory_pb2.RecallFilters:
    """The RecallFilters message of `options` (the server's own Filters, built by
    recallmesh.wire.filters.filters_to_proto)."""
    for name in ("categories", "tags", "tags_all", "tags_none", "threads"):
        if isinstance(values := options.get(name, ()), str):
            raise ValueError(f"{name} takes a list of strings, got the string {values!r}")
    for name in ("created_after", "created_before", "updated_after", "updated_before", "as_of"):
        if (when := options.get(name)) is not None and when.tzinfo is None:  # type: ignore[attr-defined]
            raise ValueError(f"{when!r} needs a timezone (e.g. datetime.now(UTC))")
    conditions: dict[str, Any] = {
        name: tuple(value) if isinstance(value, (list, tuple)) else value
        for name, value in options.items() if name in FILTER_FIELDS and name != "metadata"}
    conditions["metadata"] = tuple(
        (key, (value,) if isinstance(value, str) else tuple(value))
        for key, value in options.get("metadata", {}).items())
    filters = Filters(**conditions)
    message = memory_pb2.RecallFilters()
    filters_to_proto(filters, message)
    return message


LIST_ORDERS = {"created": memory_pb2.LIST_ORDER_CREATED, "updated": memory_pb2.LIST_ORDER_UPDATED,
               "importance": memory_pb2.LIST_ORDER_IMPORTANCE}


def list_request(namespace: str, page_size: int, page_token: str, options: ListOptions
                 ) -> memory_pb2.ListRequest:
    order = options.get("order_by", "created")
    if order not in LIST_ORDERS:
        raise ValueError(f"order_by must be one of {', '.join(LIST_ORDERS)}, got {order!r}")
    return memory_pb2.ListRequest(
        namespace=namespace, filters=_filters(options), order_by=LIST_ORDERS[order],
        ascending=options.get("ascending", False), page_size=page_size, page_token=page_token,
        include_deleted=options.get("include_deleted", False),
        include_ended=options.get("include_ended", False))


def count_request(namespace: str, options: ListOptions) -> memory_pb2.CountRequest:
    return memory_pb2.CountRequest(
        namespace=namespace, filters=_filters(options),
        include_deleted=options.get("include_deleted", False),
        include_ended=options.get("include_ended", False))


def delete_matching_request(namespace: str, confirm: bool, purge: bool, sample_size: int,
                            options: FilterOptions) -> memory_pb2.DeleteMatchingRequest:
    return memory_pb2.DeleteMatchingRequest(
        namespace=namespace, filters=_filters(options), confirm=confirm, purge=purge,
        sample_size=sample_size)


def export_request(namespace: str, page_size: int, page_token: str,
                   options: FilterOptions) -> memory_pb2.ExportRequest:
    return memory_pb2.ExportRequest(namespace=namespace, filters=_filters(options),
                                    page_size=page_size, page_token=page_token)





def recall_request(namespace: str, query: str, options: RecallOptions) -> memory_pb2.RecallRequest:
    sort_by = options.get("sort_by", "relevance")
    if sort_by not in SORT_BY_VALUES:
        raise ValueError(f"sort_by must be one of {', '.join(SORT_BY_VALUES)}, "
                         f"got {sort_by!r}")
    request = memory_pb2.RecallRequest(
        namespace=namespace, query=query, k=options.get("k", 0), sort_by=SORT_BY_VALUES[sort_by],
        filters=_filters(options), budget_ms=options.get("budget_ms", 0),
        explain=options.get("explain", False))
    if (reference := options.get("reference_time")) is not None:
        _ts(reference, request.reference_time)
    if (fusion := options.get("fusion")) is not None:
        json_format.ParseDict(dict(fusion), request.fusion)
    if (floor := options.get("min_score")) is not None:
        request.fusion.min_score = floor
    return request


def context_request(namespace: str, query: str, options: ContextOptions
                    ) -> memory_pb2.ContextRequest:
    request = memory_pb2.ContextRequest(
        namespace=namespace, query=query, max_tokens=options.get("max_tokens", 0),
        k=options.get("k", 0), filters=_filters(options), budget_ms=options.get("budget_ms", 0),
        include_sensitive=options.get("include_sensitive", False))
    if (reference := options.get("reference_time")) is not None:
        _ts(reference, request.reference_time)
    if (floor := options.get("min_score")) is not None:
        request.min_score = floor
    return request


def memory_from(msg: memory_pb2.Memory) -> Memory:
    return Memory(**memory_from_proto_fields(msg))


def store_result(reply: memory_pb2.StoreResponse | memory_pb2.UpdateResponse) -> StoreResult:
    """A StoreResponse or an UpdateResponse (which never answers an existing memory)."""
    existing = reply.existing if isinstance(reply, memory_pb2.StoreResponse) else False
    return StoreResult(memory_from(reply.memory), reply.indexed, existing)


def batch_result(reply: memory_pb2.StoreBatchResponse) -> BatchResult:
    return BatchResult(tuple(reply.ids), reply.indexed, tuple(reply.existing))


def get_result(reply: memory_pb2.GetResponse) -> Memory:
    return memory_from(reply.memory)


def namespace_deleted(reply: memory_pb2.DeleteNamespaceResponse) -> int:
    return int(reply.memories_removed)


def deleted_result(reply: memory_pb2.DeleteResponse) -> Deleted:
    return Deleted(reply.id, optional_datetime(reply, "deleted_at"), reply.purged)


def recall_result(reply: memory_pb2.RecallResponse) -> RecallResult:
    hits = tuple(
        Hit(memory_from(h.memory), h.score,
            tuple(LegContribution(c.leg, c.rank, c.score, c.reason) for c in h.legs))
        for h in reply.hits)
    legs = tuple(LegReport(leg.leg, LEG_STATE_NAMES.get(leg.state, "UNSPECIFIED"), leg.latency_ms,
                           leg.candidates, leg.detail) for leg in reply.legs)
    intent = (QueryIntent(reply.intent.name, reply.intent.phrase)
              if reply.HasField("intent") else None)
    window = (TimeWindow(reply.time_window.phrase,
                         optional_datetime(reply.time_window, "start"),
                         optional_datetime(reply.time_window, "end"), reply.time_window.boosted)
              if reply.HasField("time_window") else None)
    floor = reply.relevance_floor if reply.HasField("relevance_floor") else None
    return RecallResult(hits, legs, reply.degraded, reply.fusion, reply.latency_ms, intent,
                        window, floor)


def context_result(reply: memory_pb2.ContextResponse) -> ContextResult:
    items = tuple(ContextItem(i.id, i.score, i.tokens, optional_datetime(i, "created_at"),
                              i.pinned) for i in reply.items)
    return ContextResult(
        text=reply.text, items=items, tokens=reply.tokens, tokenizer=reply.tokenizer,
        dated=reply.dated, degraded=reply.degraded, latency_ms=reply.latency_ms,
        superseded_omitted=reply.superseded_omitted, sensitive_omitted=reply.sensitive_omitted,
        over_budget_omitted=reply.over_budget_omitted)


def page_result(reply: memory_pb2.ListResponse) -> Page:
    return Page(tuple(memory_from(m) for m in reply.memories), reply.next_page_token)


def count_result(reply: memory_pb2.CountResponse) -> int:
    return int(reply.count)


def namespaces_result(reply: memory_pb2.ListNamespacesResponse
                      ) -> tuple[list[NamespaceSummary], Caller, str]:
    """One ListNamespaces page: its namespaces, the caller and the next page's token."""
    found = [NamespaceSummary(n.namespace, int(n.memories), int(n.pinned), int(n.sensitive),
                              optional_datetime(n, "last_updated")) for n in reply.namespaces]
    c = reply.caller
    return found, Caller(c.subject, tuple(c.grants), tuple(c.scopes), c.kind), \
        reply.next_page_token


def namespace_list(pages: Sequence[tuple[list[NamespaceSummary], Caller, str]]
                   ) -> NamespaceList:
    """The NamespaceList of every page of one listing (the caller as the last page says)."""
    return NamespaceList(tuple(n for found, _, _ in pages for n in found), pages[-1][1])


def _link(msg: memory_pb2.MemoryLink) -> Link:
    return Link(RELATION_TYPE_NAMES.get(msg.type, "unspecified"), msg.source_id, msg.target_id,
                optional_datetime(msg, "created_at"))


def history_result(reply: memory_pb2.HistoryResponse) -> History:
    versions = tuple(Version(v.version, memory_from(v.memory), optional_datetime(v, "replaced_at"),
                             v.replaced_by, tuple(v.changed), v.imported_by)
                     for v in reply.versions)
    return History(memory_from(reply.memory), versions,
                   tuple(_link(r) for r in reply.relations), reply.versions_left_out,
                   reply.relations_left_out)


def export_result(reply: memory_pb2.ExportResponse) -> tuple[list[dict[str, Any]], str]:
    """An ExportResponse's records as JSON objects (one JSONL line each; `import_records`
    takes them back exactly) and the next page token."""
    records = [json_format.MessageToDict(r, preserving_proto_field_name=True)
               for r in reply.records]
    return records, reply.next_page_token


def import_result(reply: memory_pb2.ImportResponse) -> ImportResult:
    return ImportResult(reply.imported, reply.unchanged, reply.relations_written,
                        reply.relations_skipped)


def delete_matching_result(reply: memory_pb2.DeleteMatchingResponse) -> DeleteMatchingResult:
    return DeleteMatchingResult(reply.matched, reply.deleted,
                                tuple(memory_from(m) for m in reply.sample), reply.purged)


def import_record(record: Mapping[str, Any], relations: bool = True) -> memory_pb2.MemoryRecord:
    """An exported record as an Import carries it (with or without its relations): it lands
    in the namespace imported into, wherever it was exported from. json_format.ParseError
    when it is not a record."""
    message = memory_pb2.MemoryRecord()
    json_format.ParseDict(dict(record) if relations else without_relations(record), message)
    message.memory.namespace = ""
    for version in message.versions:
        version.memory.namespace = ""
    return message


def without_relations(record: Mapping[str, Any]) -> dict[str, Any]:
    """An exported record without its relations (the first pass of an import)."""
    return {k: v for k, v in record.items() if k != "relations"}


# An import request stays this far below the gateway's 4 MiB request limit, and within what
# one Import takes (recallmesh/wire/validation/records.py).
MAX_IMPORT_BYTES = 3 * 1024 * 1024
MAX_IMPORT_RECORDS = MAX_BATCH


def import_requests(namespace: str, records: Sequence[Mapping[str, Any]],
                    relations: bool) -> Iterable[memory_pb2.ImportRequest]:
    """ImportRequests holding `records` in order (with or without their relations), each
    within MAX_IMPORT_RECORDS, MAX_IMPORT_BYTES and MAX_IMPORT_VERSIONS."""
    request = memory_pb2.ImportRequest(namespace=namespace)
    size = versions = 0
    for i, record in enumerate(records):
        try:
            message = import_record(record, relations)
        except json_format.ParseError as exc:
            raise ValueError(f"record {i}: not an exported memory record: {exc}") from None
        grows = message.ByteSize() + 8
        if request.records and (len(request.records) >= MAX_IMPORT_RECORDS
                                or size + grows > MAX_IMPORT_BYTES
                                or versions + len(message.versions) > MAX_IMPORT_VERSIONS):
            yield request
            request, size, versions = memory_pb2.ImportRequest(namespace=namespace), 0, 0
        request.records.append(message)
        size += grows
        versions += len(message.versions)
    if request.records:
        yield request


def import_total(parts: Sequence[ImportResult], first_pass: int) -> ImportResult:
    """One import's result from its two passes' replies: memories from the first pass (written
    without relations), relations from the second."""
    memories, links = parts[:first_pass], parts[first_pass:]
    return ImportResult(sum(r.imported for r in memories), sum(r.unchanged for r in memories),
                        sum(r.relations_written for r in links),
                        sum(r.relations_skipped for r in links))
