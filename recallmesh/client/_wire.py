"""Requests from the client's arguments, results from the gateway's replies (shared by the
blocking and the asyncio client)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any, Literal, TypedDict

from google.protobuf import json_format

from recallmesh.client.types import (
    BatchResult,
    ContextItem,
    ContextResult,
    Deleted,
    Hit,
    LegContribution,
    LegReport,
    Memory,
    NewMemory,
    RecallResult,
    Relation,
    StoreResult,
)
from recallmesh.v1 import memory_pb2 as memory_pb2  # sync and aio build requests with it
from recallmesh.wire.enums import LEG_STATE_NAMES, RELATION_TYPE_VALUES, SORT_BY_VALUES
from recallmesh.wire.timestamps import optional_datetime, to_proto_timestamp


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


class UpdateFields(TypedDict, total=False):
    """The fields `update` changes: only those given. expires_at=None: never expires."""

    content: str
    category: str
    tags: Sequence[str]
    importance: float
    sensitive: bool
    thread: str
    metadata: Mapping[str, str]
    valid_from: datetime
    valid_to: datetime
    expires_at: datetime | None


class RecallOptions(TypedDict, total=False):
    k: int  # 1..100 (default 10)
    sort_by: str  # relevance, importance, recency
    categories: Sequence[str]
    tags: Sequence[str]
    created_after: datetime
    created_before: datetime
    budget_ms: int
    explain: bool
    reference_time: datetime
    fusion: Mapping[str, Any]  # FusionOverrides as JSON names, e.g. {"method": "rrf"}
    min_score: float  # the relevance floor, 0..1 (default: the deployment's); best below: no hits


class ContextOptions(TypedDict, total=False):
    max_tokens: int  # 16..32768 (default 1000)
    k: int  # memories recalled before packing, 1..100 (default 20)
    categories: Sequence[str]
    tags: Sequence[str]
    created_after: datetime
    created_before: datetime
    budget_ms: int
    reference_time: datetime
    include_sensitive: bool
    min_score: float  # the relevance floor, 0..1 (default: the deployment's); none above: empty


def _ts(value: datetime, target: Any) -> None:
    if value.tzinfo is None:
        raise ValueError(f"{value!r} needs a timezone (e.g. datetime.now(UTC))")
    to_proto_timestamp(value, target)


def memory_message(content: str, fields: MemoryFields) -> Any:
    memory = memory_pb2.Memory(
        id=fields.get("id") or str(uuid.uuid4()),
        content=content,
        category=fields.get("category", ""),
        tags=list(fields.get("tags", ())),
        sensitive=fields.get("sensitive", False),
        thread=fields.get("thread", ""),
        metadata=dict(fields.get("metadata", {})),
    )
    if (importance := fields.get("importance")) is not None:
        memory.importance = importance
    name: Literal["created_at", "valid_from", "valid_to", "expires_at"]
    for name in ("created_at", "valid_from", "valid_to", "expires_at"):
        if (value := fields.get(name)) is not None:
            _ts(value, getattr(memory, name))
    relations = [Relation("supersedes", i) for i in fields.get("supersedes", ())]
    for relation in [*relations, *fields.get("relations", ())]:
        if relation.type not in RELATION_TYPE_VALUES:
            raise ValueError(f"relation type must be one of {', '.join(RELATION_TYPE_VALUES)}, "
                             f"got {relation.type!r}")
        memory.relations.add(type=RELATION_TYPE_VALUES[relation.type], target_id=relation.target_id)
    return memory


def new_memory_message(new: NewMemory) -> Any:
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


def _index_wait(wait_indexed: bool | float) -> Any:
    if wait_indexed is False:
        return None
    timeout_ms = 0 if wait_indexed is True else int(float(wait_indexed) * 1000)
    return memory_pb2.IndexWait(wait=True, timeout_ms=timeout_ms)


def store_request(namespace: str, content: str, fields: MemoryFields,
                  wait_indexed: bool | float) -> Any:
    return memory_pb2.StoreRequest(namespace=namespace, memory=memory_message(content, fields),
                                   index_wait=_index_wait(wait_indexed))


def store_batch_request(namespace: str, memories: Iterable[NewMemory | str],
                        wait_indexed: bool | float) -> Any:
    messages = [new_memory_message(NewMemory(m) if isinstance(m, str) else m) for m in memories]
    return memory_pb2.StoreBatchRequest(namespace=namespace, memories=messages,
                                        index_wait=_index_wait(wait_indexed))


def update_request(namespace: str, memory_id: str, fields: UpdateFields,
                   wait_indexed: bool | float) -> Any:
    if not fields:
        raise ValueError("update needs at least one field to change")
    memory = memory_pb2.Memory()
    for name, value in fields.items():
        if name not in UpdateFields.__annotations__:
            raise ValueError(f"update cannot change {name!r}")
        if name in ("valid_from", "valid_to", "expires_at"):
            if value is not None:
                # the three names are datetime fields of UpdateFields (mypy sees a union)
                _ts(value, getattr(memory, name))  # type: ignore[arg-type]
        elif name == "tags":
            memory.tags.extend(value)
        elif name == "metadata":
            memory.metadata.update(value)
        else:
            setattr(memory, name, value)
    request = memory_pb2.UpdateRequest(namespace=namespace, id=memory_id, memory=memory,
                                       index_wait=_index_wait(wait_indexed))
    request.update_mask.paths.extend(fields)
    return request


def _filters(options: RecallOptions | ContextOptions) -> Any:
    filters = memory_pb2.RecallFilters(categories=list(options.get("categories", ())),
                                       tags=list(options.get("tags", ())))
    name: Literal["created_after", "created_before"]
    for name in ("created_after", "created_before"):
        if (value := options.get(name)) is not None:
            _ts(value, getattr(filters, name))
    return filters


def recall_request(namespace: str, query: str, options: RecallOptions) -> Any:
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


def context_request(namespace: str, query: str, options: ContextOptions) -> Any:
    request = memory_pb2.ContextRequest(
        namespace=namespace, query=query, max_tokens=options.get("max_tokens", 0),
        k=options.get("k", 0), filters=_filters(options), budget_ms=options.get("budget_ms", 0),
        include_sensitive=options.get("include_sensitive", False))
    if (reference := options.get("reference_time")) is not None:
        _ts(reference, request.reference_time)
    if (floor := options.get("min_score")) is not None:
        request.min_score = floor
    return request


def memory_from(msg: Any) -> Memory:
    return Memory(
        id=msg.id, namespace=msg.namespace, content=msg.content, category=msg.category,
        tags=tuple(msg.tags), importance=msg.importance if msg.HasField("importance") else 0.5,
        sensitive=msg.sensitive, thread=msg.thread, metadata=dict(msg.metadata),
        created_at=optional_datetime(msg, "created_at"),
        updated_at=optional_datetime(msg, "updated_at"),
        valid_from=optional_datetime(msg, "valid_from"),
        valid_to=optional_datetime(msg, "valid_to"),
        expires_at=optional_datetime(msg, "expires_at"), superseded_by=msg.superseded_by)


def store_result(reply: Any) -> StoreResult:
    """A StoreResponse or an UpdateResponse (which never answers an existing memory)."""
    existing = reply.existing if isinstance(reply, memory_pb2.StoreResponse) else False
    return StoreResult(memory_from(reply.memory), reply.indexed, existing)


def batch_result(reply: Any) -> BatchResult:
    return BatchResult(tuple(reply.ids), reply.indexed, tuple(reply.existing))


def get_result(reply: Any) -> Memory:
    return memory_from(reply.memory)


def namespace_deleted(reply: Any) -> int:
    return int(reply.memories_removed)


def deleted_result(reply: Any) -> Deleted:
    return Deleted(reply.id, optional_datetime(reply, "deleted_at"), reply.purged)


def recall_result(reply: Any) -> RecallResult:
    hits = tuple(
        Hit(memory_from(h.memory), h.score,
            tuple(LegContribution(c.leg, c.rank, c.score, c.reason) for c in h.legs))
        for h in reply.hits)
    legs = tuple(LegReport(leg.leg, LEG_STATE_NAMES.get(leg.state, "UNSPECIFIED"), leg.latency_ms,
                           leg.candidates, leg.detail) for leg in reply.legs)
    return RecallResult(hits, legs, reply.degraded, reply.fusion, reply.latency_ms)


def context_result(reply: Any) -> ContextResult:
    items = tuple(ContextItem(i.id, i.score, i.tokens, optional_datetime(i, "created_at"))
                  for i in reply.items)
    return ContextResult(
        text=reply.text, items=items, tokens=reply.tokens, tokenizer=reply.tokenizer,
        dated=reply.dated, degraded=reply.degraded, latency_ms=reply.latency_ms,
        superseded_omitted=reply.superseded_omitted, sensitive_omitted=reply.sensitive_omitted,
        over_budget_omitted=reply.over_budget_omitted)
