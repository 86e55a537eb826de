"""Import's records (each memory as exported, its relations and its earlier versions) and the
bounds on versions and on the answers that carry them (History, Export)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from recallmesh.shared.errors import InvalidArgument
from recallmesh.v1 import memory_pb2
from recallmesh.wire.enums import RELATION_TYPE_NAMES
from recallmesh.wire.memory_fields import UPDATE_PATHS, NewMemory
from recallmesh.wire.timestamps import from_proto_timestamp
from recallmesh.wire.validation.memories import MAX_BATCH, MAX_RELATIONS, new_memory
from recallmesh.wire.validation.names import (
    MAX_NAMESPACE_CHARS,
    memory_id,
    namespace,
    no_nul,
    same_id,
)

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
        memory, updated = _imported_memory(record, i, ns, seen)
        relations = _imported_relations(record, i, memory)
        if len(record.versions) > MAX_VERSIONS:
            raise InvalidArgument(f"records[{i}].versions: at most {MAX_VERSIONS} (a memory "
                                  f"keeps its newest {MAX_VERSIONS})")
        total_versions += len(record.versions)
        if total_versions > MAX_IMPORT_VERSIONS:
            raise InvalidArgument(f"an import holds at most {MAX_IMPORT_VERSIONS} versions in "
                                  "all: split the records over several imports")
        versions = _imported_versions(record, i, ns)
        out.append(ImportedMemory(memory, updated, relations, versions))
    return ns, out


def _imported_memory(record: memory_pb2.MemoryRecord, i: int, ns: str, seen: dict[str, int]
                     ) -> tuple[NewMemory, datetime]:
    """records[i]'s memory (its id and created_at set) and its updated_at; `seen`: the ids
    of the records before it, by record."""
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
    return replace(memory, created_at=created), updated


def _imported_relations(record: memory_pb2.MemoryRecord, i: int, memory: NewMemory
                        ) -> tuple[tuple[str, str, datetime | None], ...]:
    """records[i]'s relations: (type, target id, created_at), from the record's memory."""
    if len(record.relations) > MAX_RELATIONS:
        raise InvalidArgument(f"records[{i}].relations: at most {MAX_RELATIONS}")
    relations = []
    for j, link in enumerate(record.relations):
        lw = f"records[{i}].relations[{j}]"
        if link.type not in RELATION_TYPE_NAMES:
            raise InvalidArgument(f"{lw}.type must be one of RELATION_TYPE_*")
        if link.source_id.strip() and same_id(link.source_id) != memory.id:
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
    return tuple(relations)


def _imported_versions(record: memory_pb2.MemoryRecord, i: int, ns: str
                       ) -> tuple[ImportedVersion, ...]:
    """records[i]'s earlier versions, oldest first (their count is checked by the caller)."""
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
        by = no_nul(version.replaced_by, f"{vw}.replaced_by")
        if len(by) > MAX_NAMESPACE_CHARS:
            raise InvalidArgument(f"{vw}.replaced_by must be at most "
                                  f"{MAX_NAMESPACE_CHARS} characters")
        versions.append(ImportedVersion(
            version.version, fields, _required_time(version.memory, "updated_at", vw),
            _required_time(version, "replaced_at", vw), by, tuple(version.changed)))
    return tuple(versions)
