"""Files of memories in the plain JSONL format (one JSON object a line; docs/cli.md, "JSONL
import format"): each line read as the client's NewMemory, checked strictly so that a malformed
file fails with its line number, and stored through the typed client in batches. `recallmesh
import`, `recallmesh up --demo` and the lab's latency runs read the demo memories with it.

Light like the rest of the client: the standard library, the client's types and the wire's
limits. Not imported by `import recallmesh.client`."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from google.protobuf import json_format

from recallmesh.client._wire import encoded_size
from recallmesh.client._wire import import_record as import_record  # for the console
from recallmesh.client.errors import RecallmeshError
from recallmesh.client.sync import Client
from recallmesh.client.types import NewMemory, Relation
from recallmesh.v1 import memory_pb2
from recallmesh.wire.enums import RELATION_TYPE_VALUES
from recallmesh.wire.memory_fields import BY_NAME, STORE_FIELDS
from recallmesh.wire.validation import MAX_INDEX_WAIT_MS, MAX_REQUEST_BYTES


class InputError(ValueError):
    """The user's input is not valid: a line of a memories file (the message names the file
    and line), a value read as a memory's (the CLI's options), or a batch the gateway
    rejected."""


# A record holds the fields a client may set on Store (recallmesh/wire/memory_fields.py).
RECORD_FIELDS = frozenset(STORE_FIELDS)
# The JSON type each kind of field takes.
_JSON_TYPES: dict[str, type | tuple[type, ...]] = {
    "id": str, "text": str, "time": str, "labels": list, "map": dict, "relations": list,
    "flag": bool, "real": (int, float)}


def parse_time(value: str, field: str, where: str) -> datetime:
    """An ISO 8601 time with its timezone (InputError naming `field` otherwise)."""
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except (TypeError, ValueError):
        raise InputError(f"{where}: {field} must be an ISO 8601 time, got {value!r}") from None
    if parsed.tzinfo is None:
        raise InputError(f"{where}: {field} needs a timezone (e.g. 2026-01-31T09:00:00Z)")
    return parsed


def memory_id(value: str, what: str = "") -> str:
    """`value` as a memory id (a UUID, canonical form); InputError naming it otherwise."""
    try:
        return str(uuid.UUID(value))
    except (ValueError, TypeError, AttributeError):
        where = f"{what}: " if what else ""
        raise InputError(f"{where}not a memory id (a UUID): {value!r}") from None


def memory_from_json(obj: Any, where: str) -> NewMemory:
    """One JSONL record -> the memory it stores (format in docs/cli.md).

    Types are checked strictly so that a malformed file fails with the line
    number instead of storing something the user did not mean.
    """
    if not isinstance(obj, dict):
        raise InputError(f"{where}: expected a JSON object")
    unknown = set(obj) - RECORD_FIELDS
    if unknown:
        raise InputError(f"{where}: unknown field(s) {sorted(unknown)}")
    if not isinstance(obj.get("content"), str):
        raise InputError(f"{where}: 'content' (a string) is required")
    values = {name: _field_value(name, obj[name], where) for name in STORE_FIELDS
              if name != "content" and obj.get(name) is not None}
    return NewMemory(obj["content"], **values)


def _field_value(name: str, value: Any, where: str) -> Any:
    """A record's value of field `name` as the client's NewMemory holds it."""
    kind = BY_NAME[name].kind
    if not _of_json_type(value, kind):
        raise InputError(f"{where}: {name} has the wrong type ({type(value).__name__})")
    if kind == "labels":
        if not all(isinstance(t, str) for t in value):
            raise InputError(f"{where}: {name} must be a list of strings")
        return tuple(value)
    if kind == "map":
        if not all(isinstance(v, str) for v in value.values()):
            raise InputError(f"{where}: {name} values must be strings")
        return value
    if kind == "real":
        return float(value)
    if kind == "time":
        return parse_time(value, name, where) if value else None
    if kind == "id":
        return memory_id(value, f"{where}: {name}") if value else ""
    if kind == "relations":
        return tuple(_relation(relation, f"{where}: {name}[{i}]")
                     for i, relation in enumerate(value))
    return value


def _of_json_type(value: Any, kind: str) -> bool:
    """Whether `value` has the JSON type of the field kind (true and false are no numbers)."""
    return isinstance(value, _JSON_TYPES[kind]) and (kind == "flag" or not isinstance(value, bool))


def _relation(relation: Any, at: str) -> Relation:
    if not isinstance(relation, dict) or set(relation) != {"type", "target_id"}:
        raise InputError(f"{at} must be an object with \"type\" and \"target_id\"")
    if relation["type"] not in RELATION_TYPE_VALUES:
        raise InputError(f"{at}: type must be one of {', '.join(RELATION_TYPE_VALUES)}, "
                         f"got {relation['type']!r}")
    return Relation(relation["type"], memory_id(relation["target_id"], f"{at}.target_id"))


def json_line(line: str, at: str) -> Any:
    """One line's JSON value; InputError naming the line when it is not JSON, nests too
    deep for the parser or holds a number too long to read (Python's int limit)."""
    try:
        return json.loads(line)
    except json.JSONDecodeError as exc:
        raise InputError(f"{at}: not valid JSON ({exc.msg})") from None
    except RecursionError:
        raise InputError(f"{at}: nested too deep to read") from None
    except ValueError as exc:  # e.g. an integer of more digits than Python reads
        raise InputError(f"{at}: not readable JSON ({str(exc)[:120]})") from None


def json_lines(lines: Iterable[str], where: str) -> list[tuple[int, Any]]:
    """(line number, JSON value) of each non-blank line; InputError naming a bad line."""
    return [(number, json_line(line, f"{where}:{number}"))
            for number, line in enumerate(lines, start=1) if line.strip()]


def read_json_lines(path: Path | Traversable) -> list[tuple[int, Any]]:
    """(line number, JSON value) of each non-blank line of a file; InputError naming a bad
    line."""
    try:
        with path.open(encoding="utf-8") as handle:
            return json_lines(handle, str(path))
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read {path}: {exc}") from None


def export_line(record: dict[str, Any]) -> str:
    """One exported record as its JSONL line. Metadata keys are sorted (a map has no order
    on the wire), so two exports of the same memories are the same bytes."""

    def stable(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: dict(sorted(v.items())) if k == "metadata" and isinstance(v, dict)
                    else stable(v) for k, v in value.items()}
        if isinstance(value, list):
            return [stable(v) for v in value]
        return value

    return json.dumps(stable(record), ensure_ascii=False) + "\n"


def is_export(lines: list[tuple[int, Any]]) -> bool:
    """Whether a file holds exported records (an export: a "memory" on each line) rather
    than plain memories; its first line decides."""
    return bool(lines) and isinstance(lines[0][1], dict) and "memory" in lines[0][1]


def exported_records(lines: list[tuple[int, Any]], where: str) -> list[dict[str, Any]]:
    """The lines of an export, each checked to be an exported record (InputError naming the
    line), before anything is sent."""
    return [exported_record(obj, f"{where}:{number}") for number, obj in lines]


def exported_record(obj: Any, at: str) -> dict[str, Any]:
    """One line's value checked to be an exported record; InputError naming `at` otherwise."""
    if not isinstance(obj, dict) or not isinstance(obj.get("memory"), dict):
        raise InputError(f"{at}: not an exported record (an object with a \"memory\"), "
                         "as the file's first line is")
    try:
        json_format.ParseDict(obj, memory_pb2.MemoryRecord())
    except json_format.ParseError as exc:
        raise InputError(f"{at}: not an exported record: {str(exc)[:300]}") from None
    except RecursionError:
        raise InputError(f"{at}: not an exported record: nested too deep") from None
    if not obj["memory"].get("id"):
        raise InputError(f"{at}: the record's memory has no id")
    return obj


def read_jsonl(path: Path | Traversable) -> list[tuple[int, NewMemory]]:
    """The memories of a file in the plain format: (line number, NewMemory) pairs."""
    return [(number, memory_from_json(obj, f"{path}:{number}"))
            for number, obj in read_json_lines(path)]


def batches(records: list[tuple[int, NewMemory]], batch_size: int,
            max_bytes: int = MAX_REQUEST_BYTES - 64 * 1024
            ) -> Iterator[list[tuple[int, NewMemory]]]:
    """`records` ((line, NewMemory) pairs) in order, at most batch_size a batch and at most
    max_bytes of memories a request (the gateway takes MAX_REQUEST_BYTES at most)."""
    chunk: list[tuple[int, NewMemory]] = []
    size = 0
    for record in records:
        n = encoded_size(record[1])
        if chunk and (len(chunk) >= batch_size or size + n > max_bytes):
            yield chunk
            chunk, size = [], 0
        chunk.append(record)
        size += n
    if chunk:
        yield chunk


@dataclass(frozen=True)
class Stored:
    """What store_memories wrote: every id in the file's order, how many of them were already
    stored (the same memory: nothing written) and, with wait_index, how many non-sensitive
    ones were not embedded in time."""

    ids: list[str]
    existing: int
    not_indexed: int


def store_memories(client: Client, namespace: str, records: list[tuple[int, NewMemory]],
                   batch_size: int, *, wait_index: bool = False, timeout: float | None = None,
                   on_batch: Callable[[int], None] | None = None) -> Stored:
    """Store records ((line, NewMemory) pairs) in batches (StoreBatch, each all or none); with
    wait_index each batch returns once it is embedded. on_batch gets each stored batch's
    size. A rejected batch stops the import: InputError naming its first line and how
    many memories were stored before it."""
    ids: list[str] = []
    existing = not_indexed = 0
    for chunk in batches(records, batch_size):
        try:
            response = client.store_batch(
                [m for _, m in chunk], namespace=namespace,
                wait_indexed=MAX_INDEX_WAIT_MS / 1000 if wait_index else False,
                timeout=timeout or MAX_INDEX_WAIT_MS / 1000 + 60)
        except RecallmeshError as exc:
            first_line = chunk[0][0]
            raise InputError(
                f"batch starting at line {first_line} rejected ({exc.code.name}): "
                f"{exc.details}; {len(ids)} memories were imported before it"
            ) from None
        ids.extend(response.ids)
        existing += sum(response.existing)
        if wait_index and not response.indexed:
            not_indexed += sum(1 for _, m in chunk if not m.sensitive)
        if on_batch is not None:
            on_batch(len(chunk))
    return Stored(ids, existing, not_indexed)
