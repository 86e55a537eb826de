"""Replies out: a memory, its versions, links and records as the recallmesh.v1 messages every
reply carries (the requests' readers are recallmesh/wire/validation/; the fields both read
are recallmesh/wire/memory_fields.py)."""

from __future__ import annotations

from typing import Any

from recallmesh.v1 import memory_pb2
from recallmesh.wire.enums import RELATION_TYPE_VALUES
from recallmesh.wire.memory_fields import RETURNED, Link, Record, StoredMemory, Version
from recallmesh.wire.timestamps import to_proto_timestamp
from recallmesh.wire.validation import MAX_RESPONSE_BYTES


def memory_to_proto(memory: StoredMemory) -> memory_pb2.Memory:
    """A StoredMemory as the recallmesh.v1.Memory every reply carries."""
    msg = memory_pb2.Memory()
    for f in RETURNED:
        value = getattr(memory, f.name)
        if f.kind == "time":
            if value is not None:
                to_proto_timestamp(value, getattr(msg, f.name))
        elif f.kind == "labels":
            getattr(msg, f.name).extend(value)
        elif f.kind == "map":
            getattr(msg, f.name).update(value)
        else:
            setattr(msg, f.name, value)
    return msg


def link_to_proto(link: Link) -> memory_pb2.MemoryLink:
    msg = memory_pb2.MemoryLink(type=RELATION_TYPE_VALUES[link.type], source_id=link.source_id,
                                target_id=link.target_id)
    to_proto_timestamp(link.created_at, msg.created_at)
    return msg


def version_to_proto(version: Version) -> memory_pb2.MemoryVersion:
    msg = memory_pb2.MemoryVersion(version=version.version, memory=memory_to_proto(
        version.memory), replaced_by=version.replaced_by, changed=list(version.changed),
        imported_by=version.imported_by)
    to_proto_timestamp(version.replaced_at, msg.replaced_at)
    return msg


def record_to_proto(record: Record) -> memory_pb2.MemoryRecord:
    """A record within MAX_RESPONSE_BYTES on its own: its oldest versions left out (and
    counted) where all of them would pass it."""
    msg = memory_pb2.MemoryRecord(
        memory=memory_to_proto(record.memory),
        relations=[link_to_proto(link) for link in record.relations])
    exported = [version_to_proto(v) for v in record.versions]
    for version in exported:  # this deployment's own record, like the vectors: an import
        version.ClearField("imported_by")  # writes its own, so export-import-export is exact
    versions, msg.versions_left_out = fit(exported, ANSWER_ROOM - msg.ByteSize(),
                                           newest=True)
    msg.versions.extend(versions)
    return msg


def fit(items: list[Any], room: int, newest: bool) -> tuple[list[Any], int]:
    """The messages of `items` (oldest first) that fit in `room` bytes, as a repeated field
    holds them: the newest (`newest`) or the oldest ones, in their order; and how many were
    left out."""
    kept: list[Any] = []
    for item in reversed(items) if newest else items:
        room -= item.ByteSize() + FIELD_OVERHEAD
        if room < 0:
            break
        kept.append(item)
    return (kept[::-1] if newest else kept), len(items) - len(kept)


# A repeated message field's bytes beyond the message's own: its tag and length (at most 5).
FIELD_OVERHEAD = 6
# What the records, versions and relations of one History or Export answer may take: the
# limit less room for the answer's own small fields (a page token, the left-out counts).
ANSWER_ROOM = MAX_RESPONSE_BYTES - 256


