"""The `recallmesh` command: run the stack and talk to it.

  recallmesh up [--demo]            start Postgres + every service, wait for SERVING, serve
  recallmesh migrate                apply database migrations (and size the vector column)
  recallmesh fetch-model [NAME]     fetch an embedding model into the model cache
  recallmesh reembed --manifest M [--switch]   change the embedding model (docs/operations.md)
  recallmesh jobs list|retry|drop   embedding jobs parked after repeated failures of their text
  recallmesh store / update / get / delete / delete-namespace / recall / context / list /
             count / history / export / import / delete-matching   client commands (gateway)
  recallmesh mcp [--transport stdio|http]   the MCP server for agents (docs/mcp.md)
  recallmesh keys create|list|revoke   API keys (docs/cli.md)

Client commands use --target (env RECALLMESH_TARGET, default localhost:50051), take --json,
and go through the typed client (recallmesh.client). docs/cli.md has every command.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

import grpc
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from recallmesh.client import (
    Client,
    FilterOptions,
    ListOptions,
    Memory,
    NewMemory,
    RecallResult,
    Relation,
    encoded_size,
)
from recallmesh.client.errors import RecallmeshError
from recallmesh.embedding_models.manifest import DEFAULT_MODEL
from recallmesh.shared.services import BY_NAME
from recallmesh.shared.settings import ConfigError
from recallmesh.v1 import keys_pb2, keys_pb2_grpc, memory_pb2
from recallmesh.wire.channel import DEFAULT_TARGET
from recallmesh.wire.enums import RELATION_TYPE_VALUES, SORT_BY_VALUES
from recallmesh.wire.validation import MAX_INDEX_WAIT_MS, MAX_REQUEST_BYTES

DEMO_FILE: Traversable = resources.files("recallmesh.demo") / "memories.jsonl"  # package data
DEMO_NAMESPACE = "demo"
DEMO_QUERY = "which frontend framework does Maya like?"

# Lines are never wrapped where the output is not a terminal (a pipe, a file, a test): a table
# row stays one line, a message one line, and a memory id is never cut.
NOT_A_TERMINAL_WIDTH = 10_000
# A memory's content in a table (recall, list, history, delete-matching) is cut to this many
# characters, white space collapsed; `get` prints it whole.
TABLE_CONTENT_CHARS = 200
ID_WIDTH = 36  # a UUID


def _console(stderr: bool = False) -> Console:
    """A console for stdout (or stderr): the terminal's width on a terminal; elsewhere
    unwrapped (soft_wrap, and tables as wide as their rows)."""
    stream = sys.stderr if stderr else sys.stdout
    try:
        terminal = stream.isatty()
    except (AttributeError, ValueError):  # replaced or closed
        terminal = False
    if terminal:
        return Console(stderr=stderr)
    return Console(stderr=stderr, width=NOT_A_TERMINAL_WIDTH, soft_wrap=True)


console = _console()
err_console = _console(stderr=True)


class InputError(ValueError):
    """A problem with the user's input file or arguments."""


# --------------------------------------------------------------------------- client helpers


def gateway_channel(target: str, api_key: str | None = None) -> grpc.Channel:
    """A channel to the gateway carrying the API key (`api_key`, else RECALLMESH_API_KEY, else
    the local key `recallmesh up` wrote under .data/); TLS when RECALLMESH_TLS_CA (and, for
    mutual TLS, a certificate) is set (recallmesh.shared.tls). The KeyService commands use it;
    every MemoryService command goes through the typed client (client_for)."""
    from recallmesh.shared.credentials import client_api_key
    from recallmesh.wire.channel import dial_blocking

    try:
        return dial_blocking(target, token=api_key or client_api_key())
    except ConfigError as exc:
        raise InputError(str(exc)) from None


def _datetime(value: str, field: str, where: str) -> datetime:
    """An ISO 8601 time with its timezone (InputError naming `field` otherwise)."""
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except (TypeError, ValueError):
        raise InputError(f"{where}: {field} must be an ISO 8601 time, got {value!r}") from None
    if parsed.tzinfo is None:
        raise InputError(f"{where}: {field} needs a timezone (e.g. 2026-01-31T09:00:00Z)")
    return parsed


def _optional_datetime(value: str | None, field: str, where: str) -> datetime | None:
    return _datetime(value, field, where) if value else None


def _iso_utc(value: datetime) -> str:
    """2026-01-31T09:00:00Z style, as the CLI prints times."""
    return value.astimezone(UTC).replace(tzinfo=None).isoformat() + "Z"


def _memory_ids(values: list[str], what: str = "") -> list[str]:
    """Each value as a memory id (a UUID, canonical form); InputError naming the bad one."""
    import uuid

    ids = []
    for value in values:
        try:
            ids.append(str(uuid.UUID(value)))
        except (ValueError, TypeError, AttributeError):
            where = f"{what}: " if what else ""
            raise InputError(f"{where}not a memory id (a UUID): {value!r}") from None
    return ids


def client_for(args: argparse.Namespace) -> Client:
    """The typed client (recallmesh.client) of the gateway at --target, in --namespace: the
    API key of RECALLMESH_API_KEY or the local key `recallmesh up` wrote, TLS when
    RECALLMESH_TLS_CA (and, for mutual TLS, a certificate) is set."""
    try:
        return Client(args.target, namespace=args.namespace)
    except ConfigError as exc:
        raise InputError(str(exc)) from None


def _importance(value: float | None, field: str) -> float | None:
    if value is not None and not 0.0 <= value <= 1.0:
        raise InputError(f"{field} must be within [0, 1], got {value}")
    return value


def key_values(items: list[str] | None, flag: str, *, repeat: bool) -> dict[str, Any]:
    """KEY=VALUE arguments (--metadata, --meta) as a dict. repeat: the same key again adds a
    value (a list: membership, for filters); else it is an error."""
    found: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InputError(f"{flag} {item!r}: expected KEY=VALUE")
        key = key.strip()
        if not repeat:
            if key in found:
                raise InputError(f"{flag}: key {key!r} given twice")
            found[key] = value
        elif value not in found.setdefault(key, []):
            found[key].append(value)
    return found


# --------------------------------------------------------------------------- filters


def add_filter_arguments(parser: argparse.ArgumentParser) -> None:
    """The filter grammar (RecallFilters, docs/api.md "Filters") as options, shared by
    recall, context, list, count, export and delete-matching: every option given must hold;
    the values of a repeated option are alternatives unless it says otherwise."""
    group = parser.add_argument_group(
        "filters", "every filter given must hold; a repeated option's values are "
        "alternatives (any of) unless it says otherwise")
    group.add_argument("--category", action="append", metavar="C",
                       help="category is any of these (repeatable)")
    group.add_argument("--tag", action="append", metavar="T",
                       help="carries any of these tags (repeatable)")
    group.add_argument("--tag-all", action="append", metavar="T",
                       help="carries every one of these tags (repeatable)")
    group.add_argument("--tag-none", action="append", metavar="T",
                       help="carries none of these tags (repeatable)")
    group.add_argument("--thread", action="append", metavar="THREAD",
                       help="belongs to any of these threads (repeatable)")
    group.add_argument("--meta", action="append", metavar="KEY=VALUE",
                       help="metadata KEY holds VALUE (repeatable; the same key again: any "
                            "of its values)")
    group.add_argument("--importance-min", type=float, metavar="X",
                       help="importance >= X (0..1)")
    group.add_argument("--importance-max", type=float, metavar="X",
                       help="importance <= X (0..1)")
    group.add_argument("--created-after", metavar="ISO", help="created at or after (inclusive)")
    group.add_argument("--created-before", metavar="ISO", help="created before (exclusive)")
    group.add_argument("--updated-after", metavar="ISO", help="updated at or after (inclusive)")
    group.add_argument("--updated-before", metavar="ISO", help="updated before (exclusive)")
    group.add_argument("--as-of", metavar="ISO",
                       help="valid at this time (the facts that were current then)")


def filter_options(args: argparse.Namespace) -> FilterOptions:
    """The filter options of add_filter_arguments as the client's FilterOptions (only those
    given); InputError for a bad value."""
    options: FilterOptions = {}
    _add_filters(options, args)
    return options


def _add_filters(options: FilterOptions, args: argparse.Namespace) -> None:
    where = getattr(args, "command", None) or "arguments"
    if args.category:
        options["categories"] = list(args.category)
    if args.tag:
        options["tags"] = list(args.tag)
    if args.tag_all:
        options["tags_all"] = list(args.tag_all)
    if args.tag_none:
        options["tags_none"] = list(args.tag_none)
    if args.thread:
        options["threads"] = list(args.thread)
    if args.meta:
        options["metadata"] = {key: values[0] if len(values) == 1 else values
                               for key, values in key_values(args.meta, "--meta",
                                                             repeat=True).items()}
    low = _importance(args.importance_min, "--importance-min")
    high = _importance(args.importance_max, "--importance-max")
    if low is not None and high is not None and low > high:
        raise InputError(f"--importance-min ({low}) is above --importance-max ({high})")
    if low is not None:
        options["importance_min"] = low
    if high is not None:
        options["importance_max"] = high

    def time(name: str) -> datetime | None:
        return _optional_datetime(getattr(args, name), "--" + name.replace("_", "-"), where)

    if (when := time("created_after")) is not None:
        options["created_after"] = when
    if (when := time("created_before")) is not None:
        options["created_before"] = when
    if (when := time("updated_after")) is not None:
        options["updated_after"] = when
    if (when := time("updated_before")) is not None:
        options["updated_before"] = when
    if (when := time("as_of")) is not None:
        options["as_of"] = when


def list_options(args: argparse.Namespace) -> ListOptions:
    """filter_options plus what List and Count add (order, deleted and ended memories)."""
    options: ListOptions = {}
    _add_filters(options, args)
    if getattr(args, "order", None):
        options["order_by"] = args.order
    if getattr(args, "ascending", False):
        options["ascending"] = True
    if args.include_deleted:
        options["include_deleted"] = True
    if args.include_ended:
        options["include_ended"] = True
    return options


# --------------------------------------------------------------------------- JSONL files


RECORD_FIELDS = {"content", "category", "tags", "importance", "sensitive", "metadata",
                 "created_at", "valid_from", "valid_to", "expires_at", "thread", "id",
                 "relations", "pinned"}


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

    def typed(name: str, kind: type | tuple[type, ...], default: Any) -> Any:
        value = obj.get(name, default)
        if value is None:
            return default
        if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
            raise InputError(f"{where}: {name} has the wrong type ({type(value).__name__})")
        return value

    if not isinstance(obj.get("content"), str):
        raise InputError(f"{where}: 'content' (a string) is required")
    tags = typed("tags", list, [])
    metadata = typed("metadata", dict, {})
    if not all(isinstance(t, str) for t in tags):
        raise InputError(f"{where}: tags must be a list of strings")
    if not all(isinstance(v, str) for v in metadata.values()):
        raise InputError(f"{where}: metadata values must be strings")
    importance = typed("importance", (int, float), None)
    memory_id = typed("id", str, "")
    if memory_id:
        (memory_id,) = _memory_ids([memory_id], f"{where}: id")
    relations = []
    for i, relation in enumerate(typed("relations", list, [])):
        at = f"{where}: relations[{i}]"
        if not isinstance(relation, dict) or set(relation) != {"type", "target_id"}:
            raise InputError(f"{at} must be an object with \"type\" and \"target_id\"")
        if relation["type"] not in RELATION_TYPE_VALUES:
            raise InputError(f"{at}: type must be one of {', '.join(RELATION_TYPE_VALUES)}, "
                             f"got {relation['type']!r}")
        (target,) = _memory_ids([relation["target_id"]], f"{at}.target_id")
        relations.append(Relation(relation["type"], target))

    def time(field: str) -> datetime | None:
        value = typed(field, str, "")
        return _datetime(value, field, where) if value else None

    return NewMemory(obj["content"], category=typed("category", str, ""), tags=tuple(tags),
                     importance=None if importance is None else float(importance),
                     sensitive=typed("sensitive", bool, False), thread=typed("thread", str, ""),
                     metadata=metadata, created_at=time("created_at"),
                     valid_from=time("valid_from"), valid_to=time("valid_to"),
                     expires_at=time("expires_at"), id=memory_id, relations=tuple(relations),
                     pinned=typed("pinned", bool, False))


def read_json_lines(path: Path | Traversable) -> list[tuple[int, Any]]:
    """(line number, JSON value) of each non-blank line; InputError naming a bad line."""
    lines = []
    try:
        with path.open(encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    lines.append((number, json.loads(line)))
                except json.JSONDecodeError as exc:
                    raise InputError(f"{path}:{number}: not valid JSON ({exc.msg})") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read {path}: {exc}") from None
    return lines


def read_jsonl(path: Path | Traversable) -> list[Any]:
    """The memories of a file in the plain format: (line number, NewMemory) pairs."""
    return [(number, memory_from_json(obj, f"{path}:{number}"))
            for number, obj in read_json_lines(path)]


def is_export(lines: list[tuple[int, Any]]) -> bool:
    """Whether a file holds exported records (`recallmesh export`: a "memory" on each line)
    rather than plain memories; its first line decides."""
    return bool(lines) and isinstance(lines[0][1], dict) and "memory" in lines[0][1]


def exported_records(lines: list[tuple[int, Any]], path: Path) -> list[dict[str, Any]]:
    """The lines of an export, each checked to be an exported record (InputError naming the
    line), before anything is sent."""
    from google.protobuf import json_format

    records = []
    for number, obj in lines:
        where = f"{path}:{number}"
        if not isinstance(obj, dict) or not isinstance(obj.get("memory"), dict):
            raise InputError(f"{where}: not an exported record (an object with a \"memory\"), "
                             "as the file's first line is")
        try:
            json_format.ParseDict(obj, memory_pb2.MemoryRecord())
        except json_format.ParseError as exc:
            raise InputError(f"{where}: not an exported record: {exc}") from None
        if not obj["memory"].get("id"):
            raise InputError(f"{where}: the record's memory has no id")
        records.append(obj)
    return records


# --------------------------------------------------------------------------- output


def _jsonable(value: Any) -> Any:
    """A client result (recallmesh.client's dataclasses) as JSON values: times as ISO 8601 UTC
    strings ("...Z"), tuples as lists, unset values as null."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, datetime):
        return _iso_utc(value)
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return value


def print_json(value: Any) -> None:
    """`value` as JSON on stdout (--json): machine-readable, never wrapped or styled."""
    print(json.dumps(_jsonable(value), indent=2, ensure_ascii=False))


def short(text: str, limit: int = TABLE_CONTENT_CHARS) -> str:
    """`text` on one line (white space collapsed), cut to `limit` characters with an
    ellipsis: how a table shows a memory's content."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _when(value: datetime | None) -> str:
    """A time in a table: 2026-01-31T09:00:00Z (what the time options take back)."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if value else ""


def ended_mark(superseded_by: str, valid_to: datetime | None,
               now: datetime | None = None) -> str:
    """" [superseded by <id>]" / " [ended <time>]" for a memory whose validity ended."""
    if superseded_by:
        return f" [superseded by {superseded_by}]"
    if valid_to is not None and valid_to <= (now or datetime.now(UTC)):
        return f" [ended {_iso_utc(valid_to)}]"
    return ""


def content_cell(memory: Memory) -> Text:
    """A memory's content in a table: cut (short), with what the table would not show
    otherwise: pinned, sensitive, ended, deleted. Plain text: never read as markup."""
    marks = "".join(f"[{mark}] " for mark, on in (("pinned", memory.pinned),
                                                  ("sensitive", memory.sensitive)) if on)
    ended = ended_mark(memory.superseded_by, memory.valid_to)
    deleted = f" [deleted {_iso_utc(memory.deleted_at)}]" if memory.deleted_at else ""
    return Text(marks + short(memory.content) + ended + deleted)


def id_column(table: Table, header: str = "id") -> None:
    """A memory id column: the whole id, always (never wrapped, never cut)."""
    table.add_column(header, no_wrap=True, min_width=ID_WIDTH, overflow="ignore")


CONTENT_MIN_WIDTH = 40  # a narrow terminal keeps this much for the content, dropping columns
OPTIONAL_MAX_WIDTH = {"category": 16, "created": 20, "importance": 10, "tags": 24, "legs": 32}


def fitting_columns(fixed: int, cells: dict[str, list[str]]) -> list[str]:
    """Which optional columns (name -> its cells), in the order given, fit on the console
    beside the id, the content (CONTENT_MIN_WIDTH) and `fixed` other characters: a narrow
    terminal drops some rather than squeeze the content to a letter a line. Off a terminal
    every column fits."""
    room = console.width - fixed - (ID_WIDTH + 3) - (CONTENT_MIN_WIDTH + 3) - 1
    shown = []
    for name, values in cells.items():
        need = min(OPTIONAL_MAX_WIDTH.get(name, 20), max(map(len, [name, *values]))) + 3
        if need <= room:
            shown.append(name)
            room -= need
    return shown


def memory_table(memories: Iterable[Memory], title: str) -> Table:
    """Memories as a table: the whole id, the content cut (content_cell), and the category,
    creation time, importance and tags as far as the console's width allows."""
    memories = list(memories)
    cells = {"category": [m.category for m in memories],
             "created": [_when(m.created_at) for m in memories],
             "importance": [f"{m.importance:.2f}" for m in memories],
             "tags": [", ".join(m.tags) for m in memories]}
    shown = fitting_columns(0, cells)
    table = Table(title=title)
    id_column(table)
    order = [name for name in ("created", "category", "tags", "importance") if name in shown]
    for name in order:
        table.add_column(name, justify="right" if name == "importance" else "left",
                         no_wrap=name == "created", overflow="ellipsis",
                         max_width=OPTIONAL_MAX_WIDTH[name])
    table.add_column("content", overflow="fold")
    for i, m in enumerate(memories):
        table.add_row(m.id, *(Text(cells[name][i]) for name in order), content_cell(m))
    return table


def print_recall(result: RecallResult, explain: bool) -> None:
    """The hits as a table (the id before the content, so a narrow terminal never cuts it),
    then the legs' states, the time window and the intent."""
    explained = [", ".join(f"{c.leg}#{c.rank} {c.score:.3f}" for c in hit.legs)
                 for hit in result.hits]
    fixed = (len(str(len(result.hits))) + 3) + (6 + 3)
    legs_width = min(32, max(map(len, ["legs (rank/score)", *explained]))) + 3
    legs_column = explain and fitting_columns(fixed, {"legs": ["x" * (legs_width - 3)]}) != []
    if legs_column:
        fixed += legs_width
    category = fitting_columns(fixed, {"category": [h.memory.category for h in result.hits]})
    table = Table(title=f"{len(result.hits)} hit(s)", show_lines=False)
    table.add_column("#", justify="right")
    table.add_column("score", justify="right")
    id_column(table)
    if category:
        table.add_column("category", overflow="ellipsis",
                         max_width=OPTIONAL_MAX_WIDTH["category"])
    table.add_column("content", overflow="fold")
    if legs_column:
        table.add_column("legs (rank/score)", max_width=legs_width - 3)
    for i, hit in enumerate(result.hits, start=1):
        content = content_cell(hit.memory)
        if explain and not legs_column:  # no room beside it: under the content
            content.append(f"\nlegs: {explained[i - 1]}", style="dim")
        row: list[Any] = [str(i), f"{hit.score:.4f}", hit.memory.id]
        if category:
            row.append(Text(hit.memory.category))
        row.append(content)
        if legs_column:
            row.append(explained[i - 1])
        table.add_row(*row)
    console.print(table)
    legs = ", ".join(
        f"{leg.leg}={leg.state} {leg.latency_ms:.1f}ms ({leg.candidates} cand.)"
        + (f" [{leg.detail}]" if leg.detail else "")
        for leg in result.legs
    )
    console.print(Text(f"legs: {legs}"), Text("  DEGRADED", style="bold yellow")
                  if result.degraded else "", sep="")
    window = result.time_window
    if window is not None and window.start is not None and window.end is not None:
        console.print(
            f"time window: {window.phrase!r} {_iso_utc(window.start)} .. "
            f"{_iso_utc(window.end)} ({window.boosted} raised)", markup=False)
    if result.intent is not None:
        console.print(f"intent: {result.intent.name} ({result.intent.phrase!r})",
                      markup=False)


def print_memory(memory: Memory) -> None:
    """One memory, one field a line (`get`); the content last and whole."""
    fields = {
        "id": memory.id,
        "namespace": memory.namespace,
        "category": memory.category,
        "tags": ", ".join(memory.tags),
        "importance": f"{memory.importance:.2f}",
        "sensitive": str(memory.sensitive).lower(),
        "pinned": str(memory.pinned).lower(),
        "created_at": _iso_utc(memory.created_at) if memory.created_at else "",
    }
    optional = {
        "updated_at": memory.updated_at, "valid_from": memory.valid_from,
        "valid_to": memory.valid_to, "expires_at": memory.expires_at,
        "deleted_at": memory.deleted_at}
    fields |= {name: _iso_utc(value) for name, value in optional.items() if value is not None}
    if memory.thread:
        fields["thread"] = memory.thread
    if memory.superseded_by:
        fields["superseded_by"] = memory.superseded_by
    if memory.metadata:
        fields["metadata"] = json.dumps(dict(memory.metadata), ensure_ascii=False)
    width = max(map(len, fields)) + 2
    for name, value in fields.items():
        console.print(f"{name:<{width}}{value}", markup=False, highlight=False)
    console.print("content:", markup=False, highlight=False)
    console.print(memory.content, markup=False, highlight=False)


def _count(n: int, noun: str) -> str:
    """"1 memory", "2 memories"."""
    plural = noun[:-1] + "ies" if noun.endswith("y") else noun + "s"
    return f"{n} {noun if n == 1 else plural}"


def warn(message: str) -> None:
    err_console.print(Text("warning: ", style="yellow"), Text(message), sep="")


def warn_not_indexed(count: int) -> None:
    if count:
        what, they = ("1 memory is", "it is") if count == 1 else (f"{count} memories are",
                                                                   "they are")
        warn(f"{what} stored but not yet embedded (is the embedding service up?); {they} "
             "found lexically meanwhile")


# --------------------------------------------------------------------------- commands


def expires_at(value: str | None, now: datetime | None = None) -> str | None:
    """--expires-in: a duration (3600, 90s, 15m, 12h, 30d) from now, or an ISO 8601 time;
    the ISO time it means (None when not given)."""
    if not value:
        return None
    from recallmesh.shared.settings import parse_duration_s

    if value.strip()[:1].isdigit() and not any(c in value for c in "-:T"):
        try:
            seconds = parse_duration_s(value, "--expires-in")
        except ConfigError as exc:
            raise InputError(str(exc)) from None
        return ((now or datetime.now(UTC)) + timedelta(seconds=seconds)).isoformat()
    _datetime(value, "--expires-in", "arguments")  # an ISO time: checked, passed on as given
    return value


def store_fields(args: argparse.Namespace) -> dict[str, Any]:
    """`store`'s options as the client's MemoryFields, checked as an imported line would be
    (InputError)."""
    expiry = expires_at(args.expires_in)
    tags = [t for t in args.tags.split(",") if t] if args.tags else []
    tags += [t for t in args.tag or [] if t and t not in tags]
    metadata = key_values(args.metadata, "--metadata", repeat=False)
    record = {"content": args.content, "category": args.category, "tags": tags,
              "importance": _importance(args.importance, "--importance"),
              "sensitive": args.sensitive, "expires_at": expiry, "thread": args.thread,
              "metadata": metadata, "pinned": args.pin}
    memory_from_json(record, "arguments")
    fields: dict[str, Any] = {"category": args.category, "tags": tags,
                              "sensitive": args.sensitive, "thread": args.thread,
                              "metadata": metadata, "pinned": args.pin}
    if args.importance is not None:
        fields["importance"] = args.importance
    if expiry:
        fields["expires_at"] = _datetime(expiry, "--expires-in", "arguments")
    if args.supersedes:
        fields["supersedes"] = _memory_ids(args.supersedes, "--supersedes")
    return fields


def cmd_store(args: argparse.Namespace) -> int:
    fields = store_fields(args)
    with client_for(args) as client:
        stored = client.store(args.content, wait_indexed=args.wait, timeout=args.timeout,
                              **fields)
    if args.json:
        print_json(stored)
    else:
        console.print(stored.memory.id, markup=False, highlight=False)
    if stored.existing:
        err_console.print("an equal memory was already stored: nothing new was written "
                          "(its id is printed)", markup=False, highlight=False)
    if args.wait and not stored.indexed and not stored.memory.sensitive:
        warn_not_indexed(1)
    return 0


UPDATE_FLAGS = ("--content, --category, --tag, --no-tags, --importance, --sensitive, "
                "--no-sensitive, --thread, --metadata, --no-metadata, --valid-from, "
                "--valid-to, --expires-at, --no-expiry, --pin, --unpin")


def update_fields(args: argparse.Namespace) -> dict[str, Any]:
    """`update`'s options as the client's UpdateFields: only those given (InputError when
    none is, or one is bad)."""
    where = "update"
    fields: dict[str, Any] = {}
    if args.content is not None:
        if not args.content.strip():
            raise InputError("--content must not be blank")
        fields["content"] = args.content
    if args.category is not None:
        fields["category"] = args.category
    if args.no_tags:
        fields["tags"] = []
    elif args.tag is not None:
        fields["tags"] = list(dict.fromkeys(t for t in args.tag if t))
    if args.importance is not None:
        fields["importance"] = _importance(args.importance, "--importance")
    if args.sensitive is not None:
        fields["sensitive"] = args.sensitive
    if args.thread is not None:
        fields["thread"] = args.thread
    if args.no_metadata:
        fields["metadata"] = {}
    elif args.metadata is not None:
        fields["metadata"] = key_values(args.metadata, "--metadata", repeat=False)
    for name in ("valid_from", "valid_to"):
        value = getattr(args, name)
        if value:
            fields[name] = _datetime(value, "--" + name.replace("_", "-"), where)
    if args.no_expiry:
        fields["expires_at"] = None
    elif args.expires_at:
        fields["expires_at"] = _datetime(args.expires_at, "--expires-at", where)
    if args.pinned is not None:
        fields["pinned"] = args.pinned
    if not fields:
        raise InputError(f"update: nothing to change; give at least one of {UPDATE_FLAGS}")
    return fields


def cmd_update(args: argparse.Namespace) -> int:
    (memory_id,) = _memory_ids([args.id])
    fields = update_fields(args)
    with client_for(args) as client:
        updated = client.update(memory_id, wait_indexed=args.wait, timeout=args.timeout,
                                **fields)
    if args.json:
        print_json(updated)
    else:
        console.print(f"updated {updated.memory.id} ({', '.join(fields)})", markup=False,
                      highlight=False)
    if args.wait and not updated.indexed and not updated.memory.sensitive:
        warn_not_indexed(1)
    return 0


def _fusion(assignments: list[str] | None) -> dict[str, Any] | None:
    """recall --set NAME=VALUE (recallmesh/policy.py, checked here) as the client's
    `fusion` option (FusionOverrides' JSON names)."""
    if not assignments:
        return None
    from google.protobuf.json_format import MessageToDict

    from recallmesh.policy import Overrides
    from recallmesh.shared.errors import InvalidArgument

    try:
        overrides = Overrides.parse(assignments).to_proto()
    except InvalidArgument as exc:
        raise InputError(exc.message) from None
    fusion: dict[str, Any] = MessageToDict(overrides)
    return fusion


def cmd_recall(args: argparse.Namespace) -> int:
    options: dict[str, Any] = {**filter_options(args), "k": args.k, "sort_by": args.sort_by,
                               "budget_ms": args.budget_ms, "explain": args.explain}
    if args.reference_time:
        options["reference_time"] = _datetime(args.reference_time, "--reference-time",
                                               "recall")
    fusion = _fusion(args.set)
    if fusion is not None:
        options["fusion"] = fusion
    with client_for(args) as client:
        result = client.recall(args.query, timeout=args.timeout, **options)
    if args.json:
        print_json(result)
    else:
        print_recall(result, args.explain)
    return 0


def cmd_context(args: argparse.Namespace) -> int:
    """The context block for a prompt (recallmesh.client), printed as is: the auto-recall
    hook of docs/mcp.md pipes it before the user's prompt."""
    options: dict[str, Any] = {**filter_options(args), "max_tokens": args.max_tokens,
                               "k": args.k, "include_sensitive": args.include_sensitive}
    if args.min_score is not None:
        options["min_score"] = args.min_score
    query = args.query if args.query != "-" else sys.stdin.read()
    with client_for(args) as client:
        result = client.context(query, timeout=args.timeout, **options)
    if args.json:
        print_json({"text": result.text, "ids": result.ids, "tokens": result.tokens,
                    "tokenizer": result.tokenizer, "dated": result.dated,
                    "degraded": result.degraded, "items": result.items,
                    "omitted": {"superseded": result.superseded_omitted,
                                "sensitive": result.sensitive_omitted,
                                "over_budget": result.over_budget_omitted},
                    "latency_ms": round(result.latency_ms, 2)})
    elif result.text:
        print(result.text)
    return 0


def cmd_mcp(args: argparse.Namespace) -> int:
    try:
        from recallmesh.mcp_server import run
    except ModuleNotFoundError as exc:
        if exc.name == "mcp" or (exc.name or "").startswith("mcp."):
            raise InputError("the MCP server needs the mcp extra: pip install "
                             "'recallmesh[mcp]'") from None
        raise
    return run(args)


def cmd_settings(args: argparse.Namespace) -> int:
    """Every recall setting (recallmesh/policy.py): its built-in default, the value this
    environment gives it, its variable and whether a request may override it."""
    from recallmesh.policy import LEG_WEIGHTS_ENV, RecallPolicy
    from recallmesh.services.lexical.settings import LexicalSettings

    try:
        deployment, lexical = RecallPolicy.from_env(), LexicalSettings.from_env()
    except ConfigError as exc:
        raise InputError(str(exc)) from None
    built_in, lexical_built_in = RecallPolicy(), LexicalSettings()
    table = Table(title="recall settings (request > intent route > environment > built-in)")
    for column in ("setting", "built-in", "this environment", "variable", "per request"):
        table.add_column(column)
    for name, (spec, _) in RecallPolicy.specs().items():
        if spec.owner == "lexical":  # read by the lexical leg from its own environment
            field = name.removeprefix("lexical_")
            values = getattr(lexical_built_in, field), getattr(lexical, field)
        else:
            values = getattr(built_in, name), getattr(deployment, name)
        table.add_row(name, *map(str, values), spec.env or "",
                      f"fusion.{name}" if spec.proto else "no")
    table.add_row("weights", str(dict(built_in.weights)), str(dict(deployment.weights)),
                  LEG_WEIGHTS_ENV, "fusion.weights")
    console.print(table)
    return 0




def cmd_get(args: argparse.Namespace) -> int:
    (memory_id,) = _memory_ids([args.id])
    with client_for(args) as client:
        memory = client.get(memory_id, timeout=args.timeout)
    if args.json:
        print_json(memory)
    else:
        print_memory(memory)
    return 0


def cmd_delete(args: argparse.Namespace) -> int:
    (memory_id,) = _memory_ids([args.id])
    with client_for(args) as client:
        deleted = client.delete(memory_id, purge=args.purge, timeout=args.timeout)
    if args.json:
        print_json(deleted)
    else:
        console.print(f"{'purged' if deleted.purged else 'deleted'} {deleted.id}",
                      markup=False, highlight=False)
    return 0


def cmd_delete_namespace(args: argparse.Namespace) -> int:
    if args.confirm != args.namespace:
        raise InputError(f"deleting namespace {args.namespace!r} removes every memory in it for "
                         f"good: repeat its name with --confirm {args.namespace}")
    with client_for(args) as client:
        removed = client.delete_namespace(timeout=args.timeout)
    if args.json:
        print_json({"namespace": args.namespace, "memories_removed": removed})
    else:
        console.print(f"namespace {args.namespace!r} deleted ({removed} memories removed)",
                      markup=False, highlight=False)
    return 0


def _page_size(value: int | None, limit: int = 1000) -> int:
    if value is None:
        return 0  # the server's default
    if not 1 <= value <= limit:
        raise InputError(f"--page-size must be within 1..{limit}, got {value}")
    return value


def cmd_list(args: argparse.Namespace) -> int:
    options = list_options(args)
    page_size = _page_size(args.page_size)
    memories: list[Memory] = []
    token = args.page_token or ""
    with client_for(args) as client:
        while True:
            page = client.list(page_size=page_size, page_token=token, timeout=args.timeout,
                               **options)
            memories += page.memories
            token = page.next_page_token
            if not (args.all and token):
                break
    if args.json:
        print_json({"memories": memories, "next_page_token": token})
        return 0
    if not memories:
        console.print("no memories match", markup=False, highlight=False)
    else:
        more = "; more on the next page" if token else ""
        console.print(memory_table(memories, f"{_count(len(memories), 'memory')}{more}"))
    if token:
        console.print(f"next page: --page-token {token}", markup=False, highlight=False)
    return 0


def cmd_count(args: argparse.Namespace) -> int:
    with client_for(args) as client:
        count = client.count(timeout=args.timeout, **list_options(args))
    if args.json:
        print_json({"count": count})
    else:
        console.print(str(count), markup=False, highlight=False)
    return 0


def cmd_history(args: argparse.Namespace) -> int:
    (memory_id,) = _memory_ids([args.id])
    with client_for(args) as client:
        history = client.history(memory_id, timeout=args.timeout)
    if args.json:
        print_json(history)
        return 0
    memory = history.memory
    # the current state follows the last version (a memory keeps its newest 100, so the
    # first listed may be later than 1)
    now = (history.versions[-1].version if history.versions
           else history.versions_left_out) + 1
    state = (f"deleted {_iso_utc(memory.deleted_at)}" if memory.deleted_at
             else ended_mark(memory.superseded_by, memory.valid_to).strip(" []") or "current")
    updated = f", updated {_when(memory.updated_at)}" if memory.updated_at else ""
    console.print(f"memory {memory.id}: version {now} ({state}{updated})", markup=False,
                  highlight=False)
    console.print(Text("  " + short(memory.content)))
    if history.versions:
        table = Table(title=f"{len(history.versions)} earlier version(s), oldest first")
        table.add_column("version", justify="right")
        table.add_column("replaced at", no_wrap=True)
        table.add_column("replaced by")
        table.add_column("changed")
        table.add_column("content then", overflow="fold")
        for v in history.versions:
            by = v.replaced_by + (f" (imported by {v.imported_by})" if v.imported_by else "")
            table.add_row(str(v.version), _when(v.replaced_at), Text(by),
                          ", ".join(v.changed), content_cell(v.memory))
        console.print(table)
        if history.versions_left_out:
            console.print(f"({history.versions_left_out} older version(s) left out: the answer "
                          "stays within 3 MiB)", markup=False, highlight=False)
    else:
        console.print("no earlier versions (never updated)", markup=False, highlight=False)
    if history.relations:
        console.print("relations:", markup=False, highlight=False)
        for link in history.relations:
            source = "this" if link.source_id == memory.id else link.source_id
            target = "this" if link.target_id == memory.id else link.target_id
            since = f"  (since {_when(link.created_at)})" if link.created_at else ""
            console.print(f"  {source} {link.type} {target}{since}", markup=False,
                          highlight=False)
    else:
        console.print("no relations", markup=False, highlight=False)
    return 0


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


def cmd_export(args: argparse.Namespace) -> int:
    """JSONL, one exported record a line (Client.export's objects), oldest first: to --out
    (written whole under FILE.partial, then renamed into place) or to stdout."""
    options = filter_options(args)
    if args.out in (None, "-"):
        with client_for(args) as client:
            for record in client.export(timeout=args.timeout, **options):
                sys.stdout.write(export_line(record))
        sys.stdout.flush()
        return 0
    path = Path(args.out)
    partial = path.with_name(path.name + ".partial")
    count = 0
    try:
        with client_for(args) as client, partial.open("w", encoding="utf-8") as handle:
            for record in client.export(timeout=args.timeout, **options):
                handle.write(export_line(record))
                count += 1
        partial.replace(path)
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc}") from None
    finally:
        partial.unlink(missing_ok=True)
    if args.json:
        print_json({"exported": count, "file": str(path)})
    else:
        err_console.print(f"exported {count} memories to {path}", markup=False,
                          highlight=False)
    return 0


def batches(records: list[Any], batch_size: int,
            max_bytes: int = MAX_REQUEST_BYTES - 64 * 1024) -> Iterator[list[Any]]:
    """`records` ((line, NewMemory) pairs) in order, at most batch_size a batch and at most
    max_bytes of memories a request (the gateway takes MAX_REQUEST_BYTES at most)."""
    chunk: list[Any] = []
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


def import_memories(client: Client, namespace: str, records: list[Any], batch_size: int,
                    show_progress: bool = True, wait_index: bool = False,
                    timeout: float | None = None) -> tuple[list[str], int]:
    """Store records in batches; with wait_index each batch returns once it is embedded.
    The ids, and how many of them were already stored (the same memory: nothing written)."""
    ids: list[str] = []
    existing = not_indexed = 0
    columns = (TextColumn("importing"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err_console, disable=not show_progress) as progress:
        task = progress.add_task("import", total=len(records))
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
            progress.advance(task, len(chunk))
    warn_not_indexed(not_indexed)
    return ids, existing


DEFAULT_BATCH_SIZE = 200


def cmd_import(args: argparse.Namespace) -> int:
    path = Path(args.file)
    lines = read_json_lines(path)
    if is_export(lines):
        return _import_records(args, exported_records(lines, path))
    batch_size = DEFAULT_BATCH_SIZE if args.batch_size is None else args.batch_size
    if not 1 <= batch_size <= 1000:
        raise InputError("--batch-size must be within 1..1000")
    records = [(number, memory_from_json(obj, f"{path}:{number}")) for number, obj in lines]
    with client_for(args) as client:
        ids, existing = import_memories(client, args.namespace, records, batch_size,
                                        wait_index=args.wait_index, timeout=args.timeout)
    if args.json:
        print_json({"format": "memories", "imported": len(ids) - existing,
                    "unchanged": existing, "ids": ids})
        return 0
    already = f" ({existing} already stored: unchanged)" if existing else ""
    console.print(f"imported {len(ids) - existing} memories into namespace "
                  f"{args.namespace!r}{already}", markup=False, highlight=False)
    return 0


def _import_records(args: argparse.Namespace, records: list[dict[str, Any]]) -> int:
    """An export written back exactly (Client.import_records: ids, times, versions and
    relations as they were; importing again changes nothing)."""
    if args.batch_size is not None or args.wait_index:
        raise InputError("--batch-size and --wait-index apply to the plain memory format; "
                         f"{args.file} holds exported records, which are imported as they are")
    with client_for(args) as client:
        try:
            result = client.import_records(records, timeout=args.timeout)
        except RecallmeshError as exc:
            err_console.print(Text(f"{exc.code.name}: ", style="red"),
                              Text(f"{exc.details} (importing the file again is safe: what "
                                   "was written stays as it is)"), sep="")
            return 1
    if args.json:
        print_json({"format": "records", **_jsonable(result)})
        return 0
    skipped = (f", {result.relations_skipped} skipped (their target is not in the namespace)"
               if result.relations_skipped else "")
    console.print(f"imported {result.imported} memories into namespace {args.namespace!r} "
                  f"({result.unchanged} unchanged); {result.relations_written} relations "
                  f"written{skipped}", markup=False, highlight=False)
    return 0


def cmd_delete_matching(args: argparse.Namespace) -> int:
    options = filter_options(args)
    if not options:
        raise InputError("delete-matching needs at least one filter (--category, --tag, "
                         "--meta, ...); delete-namespace removes a whole namespace")
    if not 1 <= args.sample <= 100:
        raise InputError(f"--sample must be within 1..100, got {args.sample}")
    with client_for(args) as client:
        result = client.delete_matching(confirm=args.confirm, purge=args.purge,
                                        sample_size=args.sample, timeout=args.timeout,
                                        **options)
    if args.json:
        print_json({"dry_run": not args.confirm, **_jsonable(result)})
        return 0
    verb = "purge" if args.purge else "delete"
    if args.confirm:
        console.print(f"{verb}d {result.deleted} of {result.matched} matching memories",
                      markup=False, highlight=False)
        return 0
    console.print(f"{_count(result.matched, 'memory')} matched; dry run, nothing changed "
                  f"(add --confirm to {verb} them)", markup=False, highlight=False)
    if result.sample:
        console.print(memory_table(result.sample, f"{len(result.sample)} of them, newest "
                                                  "first"))
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    """One service in the foreground (what a container runs): the same entry point as
    `python -m <its module>`; SIGTERM drains it and exits 0."""
    import runpy


    runpy.run_module(BY_NAME[args.service].module, run_name="__main__", alter_sys=True)
    return 0


def cmd_migrate(args: argparse.Namespace) -> int:
    from recallmesh.stack.supervisor import Stack, StackError

    stack = Stack()
    try:
        stack.start_database()
    except StackError as exc:
        raise InputError(str(exc)) from None
    finally:
        stack.stop()
    console.print("schema is up to date")
    return 0


def _database_dsn() -> tuple[str, Any]:
    """A DSN for an admin command: RECALLMESH_DSN, the running embedded server, or a started one."""
    from recallmesh.shared.db import NoDatabase, resolve_dsn
    from recallmesh.stack.supervisor import Stack, StackError

    try:
        return resolve_dsn(), None
    except NoDatabase:
        stack = Stack()
        try:
            stack.start_database()
        except StackError as exc:
            stack.stop()
            raise InputError(str(exc)) from None
        return stack.dsn, stack


def cmd_fetch_model(args: argparse.Namespace) -> int:
    from recallmesh.embedding_models.fetch import FetchError, fetch

    try:
        path = fetch(args.name)
    except FetchError as exc:
        raise InputError(str(exc)) from None
    console.print(f"model {args.name}: {path}")
    return 0


def cmd_reembed(args: argparse.Namespace) -> int:
    import psycopg

    from recallmesh.embedding_models.manifest import ModelManifest
    from recallmesh.services.embedding.reembed import SwitchError, reembed, switch

    try:
        manifest = ModelManifest.load(Path(args.manifest))
        manifest.verify()
    except ConfigError as exc:
        raise InputError(str(exc)) from None
    dsn, stack = _database_dsn()
    try:
        if args.switch:
            try:
                requeued = switch(dsn, manifest)
            except (SwitchError, psycopg.Error) as exc:
                raise InputError(f"switch failed, nothing changed: {exc}") from None
            console.print(f"switched to {manifest.model_id}; {requeued} memories re-enqueued. "
                          "Now restart the embedding service with RECALLMESH_EMBEDDING_MANIFEST="
                          f"{manifest.path}, then the vector leg.")
            return 0
        columns = (TextColumn("re-embedding"), BarColumn(), MofNCompleteColumn(),
                   TimeElapsedColumn())
        with Progress(*columns, console=err_console) as progress:
            task = progress.add_task("reembed", total=None)

            def report(done: int, total: int) -> None:
                progress.update(task, completed=done, total=total)

            try:
                done = reembed(dsn, manifest, args.batch_size, progress=report)
            except (psycopg.Error, ConfigError) as exc:
                raise InputError(f"re-embed stopped (run it again to resume): {exc}") from None
        console.print(f"{done} memories embedded with {manifest.model_id} into embedding_next; "
                      "run again with --switch to make it live")
        return 0
    finally:
        if stack is not None:
            stack.stop()


def _jobs_targets(args: argparse.Namespace) -> list[str] | None:
    """The memory ids a `jobs retry|drop` names, or None for --all."""
    if args.all == bool(args.ids):
        raise InputError("name memory ids or --all (not both)")
    if args.namespace and not args.all:
        raise InputError("--namespace goes with --all")
    return None if args.all else _memory_ids(args.ids)


def cmd_jobs(args: argparse.Namespace) -> int:
    import psycopg

    from recallmesh.services.indexer import jobs

    targets = None if args.jobs_command == "list" else _jobs_targets(args)
    dsn, stack = _database_dsn()
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            if args.jobs_command == "list":
                return _print_parked(jobs.list_parked(conn, args.namespace, args.limit),
                                     jobs.count_parked(conn, args.namespace), args.json)
            act = jobs.retry if args.jobs_command == "retry" else jobs.drop
            try:
                done = act(conn, targets, args.namespace)
            except jobs.NotParked as exc:
                raise InputError(f"{exc}; nothing changed") from None
    except psycopg.Error as exc:
        raise InputError(f"database: {exc}") from None
    finally:
        if stack is not None:
            stack.stop()
    if args.jobs_command == "retry":
        console.print(f"{len(done)} parked job(s) re-queued; the indexer embeds them now")
    else:
        console.print(f"{len(done)} parked job(s) dropped; those memories stay without a "
                      "vector (found lexically only) until their content changes")
    return 0


def _print_parked(parked: list[Any], total: int, as_json: bool) -> int:
    if as_json:
        print(json.dumps([{
            "memory_id": j.memory_id, "namespace": j.namespace, "failures": j.failures,
            "attempts": j.attempts, "enqueued_at": j.enqueued_at.isoformat(),
            "parked_at": j.parked_at.isoformat(), "last_error": j.last_error,
        } for j in parked], indent=2))
        return 0
    shown = "" if total == len(parked) else f" (showing {len(parked)})"
    table = Table(title=f"{total} parked embedding jobs{shown}")
    for column in ("memory id", "namespace", "failures", "parked at", "last error"):
        table.add_column(column, overflow="fold")
    for j in parked:
        table.add_row(j.memory_id, j.namespace, str(j.failures),
                      j.parked_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%SZ"), j.last_error)
    console.print(table)
    return 0


def _load_demo(stack: Any) -> None:
    import psycopg

    with psycopg.connect(stack.dsn) as conn:
        row = conn.execute(
            "SELECT count(*) FROM memories WHERE namespace = %s AND deleted_at IS NULL",
            (DEMO_NAMESPACE,),
        ).fetchone()
    present = row[0] if row is not None else 0  # count(*) answers one row
    with stack.client() as client:
        if present:
            console.print(f"demo namespace already holds {present} memories; not loading again")
        else:
            ids, _ = import_memories(client, DEMO_NAMESPACE, read_jsonl(DEMO_FILE), 100,
                                     wait_index=True)
            console.print(f"loaded {len(ids)} demo memories into namespace {DEMO_NAMESPACE!r}")
        console.print(f"\nexample: recallmesh recall --namespace demo {DEMO_QUERY!r}")
        result = client.recall(DEMO_QUERY, namespace=DEMO_NAMESPACE, k=5, timeout=10)
        print_recall(result, explain=False)


def _print_local_key(stack: Any) -> None:
    from recallmesh.shared.settings import LOCAL_KEY_FILE

    if not stack.api_key:
        console.print("[yellow]authentication is OFF (RECALLMESH_AUTH=off): any local "
                      "caller may read, write and delete every namespace[/]")
        return
    path = stack.data_dir / LOCAL_KEY_FILE
    if stack.api_key_created:
        console.print(f"local admin API key (shown once; kept owner-only in {path}, which "
                      f"the CLI reads):\n  {stack.api_key}", soft_wrap=True)
    else:
        console.print(f"local admin API key: in {path} (the CLI reads it)")


def cmd_keys_create(args: argparse.Namespace) -> int:
    from recallmesh.auth.principal import parse_grant, parse_scopes
    from recallmesh.shared.errors import InvalidArgument

    scopes = [s for raw in args.scope or ["read,write"] for s in raw.split(",")]
    when = expires_at(args.expires_in)
    if args.database:
        from recallmesh.auth.keys import insert_key

        try:
            grants = [parse_grant(g) for g in args.namespace]
            scope_set = parse_scopes(scopes)
        except InvalidArgument as exc:
            raise InputError(exc.message) from None
        if not scope_set:
            raise InputError("--scope is required (read, write, admin)")
        dsn, stack = _database_dsn()
        try:
            import psycopg

            with psycopg.connect(dsn, autocommit=True) as conn:
                token, key = insert_key(conn, args.name, grants, scope_set,
                                        "recallmesh keys create --database",
                                        datetime.fromisoformat(_iso_z(when)) if when else None)
        finally:
            if stack is not None:
                stack.stop()
        key_id = key.id
    else:
        request = keys_pb2.CreateApiKeyRequest(name=args.name, namespaces=args.namespace,
                                               scopes=scopes)
        if when:
            request.expires_at.FromJsonString(_iso_z(when))
        with gateway_channel(args.target) as channel:
            response = keys_pb2_grpc.KeyServiceStub(channel).CreateApiKey(request, timeout=10)
        token, key_id = response.secret, response.key.id
    err_console.print(f"created API key {key_id} ({args.name}); the key is shown once:")
    print(token)
    return 0


def _iso_z(value: str) -> str:
    """An ISO 8601 time as a protobuf JSON timestamp (UTC, Z)."""
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def cmd_keys_list(args: argparse.Namespace) -> int:
    with gateway_channel(args.target) as channel:
        response = keys_pb2_grpc.KeyServiceStub(channel).ListApiKeys(
            keys_pb2.ListApiKeysRequest(include_revoked=args.all), timeout=10)
    if args.json:
        from google.protobuf.json_format import MessageToDict

        print(json.dumps([MessageToDict(k) for k in response.keys], indent=2))
        return 0
    table = Table(title=f"{len(response.keys)} API keys")
    for column in ("id", "name", "namespaces", "scopes", "expires", "last used", "revoked"):
        table.add_column(column)

    def when(ts: Any, present: bool) -> str:
        return ts.ToJsonString()[:19] if present else ""

    for k in response.keys:
        table.add_row(k.id, k.name, " ".join(k.namespaces), ",".join(k.scopes),
                      when(k.expires_at, k.HasField("expires_at")),
                      when(k.last_used_at, k.HasField("last_used_at")),
                      when(k.revoked_at, k.HasField("revoked_at")))
    console.print(table)
    return 0


def cmd_keys_revoke(args: argparse.Namespace) -> int:
    with gateway_channel(args.target) as channel:
        response = keys_pb2_grpc.KeyServiceStub(channel).RevokeApiKey(
            keys_pb2.RevokeApiKeyRequest(id=args.id), timeout=10)
    console.print(f"revoked API key {response.key.id} ({response.key.name})")
    return 0


_EVENT_STYLES = {"exited": "yellow", "slow": "yellow", "serving": "green", "given_up": "bold red"}


def _print_stack_event(event: Any) -> None:
    """One line per exit, restart and give-up of a service under `up`, with the last lines
    of its log (also in <data dir>/logs/supervisor.log)."""
    err_console.print(event.message, style=_EVENT_STYLES.get(event.kind, ""), markup=False,
                      highlight=False, soft_wrap=True)
    for line in event.log_tail.splitlines():
        err_console.print(f"  | {line}", style="dim", markup=False, highlight=False,
                          soft_wrap=True)
    if event.kind == "given_up" and event.service != "gateway":
        err_console.print("the other services keep serving (recalls without it are degraded); "
                          "fix it and restart `recallmesh up`", style="red", markup=False,
                          highlight=False, soft_wrap=True)


def cmd_up(args: argparse.Namespace) -> int:
    from recallmesh.stack.supervisor import RestartPolicy, Stack, StackError

    started = time.monotonic()
    try:
        policy = RestartPolicy.from_env()
    except ConfigError as exc:
        err_console.print(f"[red]recallmesh up failed:[/] bad configuration: {exc}")
        return 1
    stack = Stack()
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    try:
        stack.start(timeout_s=args.timeout)
    except StackError as exc:
        err_console.print(f"[red]recallmesh up failed:[/] {exc}")
        return 1
    watcher = None
    try:
        # From here on a service that exits is restarted (RestartPolicy: backoff, crash-loop
        # limit) while the others keep serving.
        watcher = stack.watch(policy, on_event=_print_stack_event)
        elapsed = time.monotonic() - started
        table = Table(title=f"recallmesh is up ({elapsed:.1f}s)")
        table.add_column("service")
        table.add_column("gRPC")
        table.add_column("metrics")
        for name, address in stack.endpoints.items():
            table.add_row(name, address, f"http://localhost:{stack.metrics[name]}/metrics")
        console.print(table)
        where = (
            "external (RECALLMESH_DSN)"
            if os.environ.get("RECALLMESH_DSN")
            else f"embedded, data in {stack.data_dir / 'pg'}"
        )
        console.print(f"database: {where}")
        console.print(f"logs: {stack.data_dir / 'logs'}")
        _print_local_key(stack)
        if args.demo:
            try:
                _load_demo(stack)
            except (RecallmeshError, InputError) as exc:  # serve anyway; say what failed
                err_console.print(Text("demo memories not loaded: ", style="yellow"),
                                  Text(str(exc)), sep="")
        console.print("\nserving; press Ctrl-C to stop")
        while not stop.wait(0.5):
            if "gateway" in watcher.given_up:  # nothing answers clients any more
                err_console.print("[red]the gateway is given up; stopping the stack[/]")
                return 1
        return 0
    finally:
        if watcher is not None and (watcher.restarts or watcher.given_up):
            counts = ", ".join(f"{name} {n}" for name, n in sorted(watcher.restarts.items()))
            gone = ", ".join(watcher.given_up)
            console.print(f"restarts while serving: {counts or 'none'}"
                          + (f"; given up: {gone}" if gone else ""))
        console.print("stopping...")
        stack.stop()
        console.print("stopped")


# --------------------------------------------------------------------------- parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="recallmesh", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    target = os.environ.get("RECALLMESH_TARGET", DEFAULT_TARGET)

    up = sub.add_parser("up", help="start the whole stack and serve until Ctrl-C")
    up.add_argument("--demo", action="store_true", help="load the demo memories (namespace demo)")
    up.add_argument("--timeout", type=float, default=60.0, help="seconds to wait per service")
    up.set_defaults(func=cmd_up)

    settings = sub.add_parser("settings", help="list every recall setting: built-in default, "
                              "this environment's value, its variable")
    settings.set_defaults(func=cmd_settings)


    serve = sub.add_parser("serve", help="run one service in the foreground (containers: one "
                           "service per container)")
    serve.add_argument("service", choices=list(BY_NAME))
    serve.set_defaults(func=cmd_serve)

    migrate = sub.add_parser("migrate", help="apply database migrations")
    migrate.set_defaults(func=cmd_migrate)

    fetch_model = sub.add_parser(
        "fetch-model",
        help="fetch an embedding model (recallmesh/embedding_models/catalogue/*.json)")
    fetch_model.add_argument("name", nargs="?", default=DEFAULT_MODEL)
    fetch_model.set_defaults(func=cmd_fetch_model)

    re_embed = sub.add_parser("reembed", help="re-embed every memory with another model, "
                                              "then --switch to it")
    re_embed.add_argument("--manifest", required=True, help="the new model's manifest.json")
    re_embed.add_argument("--switch", action="store_true",
                          help="make the re-embedded vectors live (after a reembed run)")
    re_embed.add_argument("--batch-size", type=int, default=64)
    re_embed.set_defaults(func=cmd_reembed)

    jobs = sub.add_parser("jobs", help="embedding jobs parked after repeated failures of their "
                          "own text: list, retry, drop (straight SQL on RECALLMESH_DSN)")
    jobs_sub = jobs.add_subparsers(dest="jobs_command", required=True)
    list_jobs = jobs_sub.add_parser("list", help="list parked jobs, oldest first")
    list_jobs.add_argument("--namespace", "-n", help="only this namespace")
    list_jobs.add_argument("--limit", type=int, default=100, help="at most this many (100)")
    list_jobs.add_argument("--json", action="store_true")
    list_jobs.set_defaults(func=cmd_jobs)
    for name, help_text in (
        ("retry", "re-queue parked jobs (e.g. after fixing the embedding service)"),
        ("drop", "delete parked jobs: their memories stay lexical-only"),
    ):
        p = jobs_sub.add_parser(name, help=help_text)
        p.add_argument("ids", nargs="*", metavar="MEMORY_ID")
        p.add_argument("--all", action="store_true", help="every parked job")
        p.add_argument("--namespace", "-n", help="with --all: only this namespace")
        p.set_defaults(func=cmd_jobs)

    def client(name: str, help_text: str, json_help: str = "machine-readable output (JSON)"
               ) -> argparse.ArgumentParser:
        """A MemoryService command: it talks to the gateway through the typed client."""
        p = sub.add_parser(name, help=help_text)
        p.add_argument("--target", default=target, help=f"gateway address (default {target})")
        p.add_argument("--namespace", "-n", required=True)
        p.add_argument("--json", action="store_true", help=json_help)
        p.add_argument("--timeout", type=float, default=None, metavar="S",
                       help="deadline of each call in seconds (default 10; a write that "
                            "waits for indexing: long enough for its wait)")
        return p

    store = client("store", "store one memory (prints its id)",
                   "print the stored memory, whether it was indexed and whether an equal "
                   "one already existed, as JSON")
    store.add_argument("content")
    store.add_argument("--category", default="")
    store.add_argument("--tags", default="", help="comma-separated")
    store.add_argument("--tag", action="append", metavar="T", help="a tag (repeatable)")
    store.add_argument("--importance", type=float, default=None)
    store.add_argument("--sensitive", action="store_true")
    store.add_argument("--thread", default="",
                       help="the conversation / session it belongs to (context propagation)")
    store.add_argument("--metadata", action="append", metavar="KEY=VALUE",
                       help="a metadata entry (repeatable)")
    store.add_argument("--supersedes", action="append", metavar="ID",
                       help="a memory this one replaces: its validity ends now (repeatable)")
    store.add_argument("--pin", action="store_true",
                       help="pin it: always in context, first, whatever the query")
    store.add_argument("--expires-in", metavar="DURATION|ISO",
                       help="expire the memory after a duration (3600, 90s, 15m, 12h, 30d) or "
                            "at an ISO 8601 time; default: the namespace's default TTL, if any")
    store.add_argument("--wait", action="store_true",
                       help="return once it is indexed (searchable by meaning; at most 30 s)")
    store.set_defaults(func=cmd_store)

    update = client("update", "change the given fields of one memory (the others stay; the "
                    "old state is kept as a version: see history)",
                    "print the updated memory and whether it is indexed as JSON")
    update.add_argument("id")
    update.add_argument("--content", help="new text (re-embeds the memory)")
    update.add_argument("--category")
    tags = update.add_mutually_exclusive_group()
    tags.add_argument("--tag", action="append", metavar="T",
                      help="the new tags (repeatable; replaces every tag)")
    tags.add_argument("--no-tags", action="store_true", help="remove every tag")
    update.add_argument("--importance", type=float)
    update.add_argument("--sensitive", action=argparse.BooleanOptionalAction, default=None,
                        help="mark sensitive (never embedded) or not")
    update.add_argument("--thread")
    metadata = update.add_mutually_exclusive_group()
    metadata.add_argument("--metadata", action="append", metavar="KEY=VALUE",
                          help="the new metadata (repeatable; replaces every entry)")
    metadata.add_argument("--no-metadata", action="store_true", help="remove every entry")
    update.add_argument("--valid-from", metavar="ISO")
    update.add_argument("--valid-to", metavar="ISO")
    expiry = update.add_mutually_exclusive_group()
    expiry.add_argument("--expires-at", metavar="ISO", help="expire at this (future) time")
    expiry.add_argument("--no-expiry", action="store_true", help="never expire")
    pin = update.add_mutually_exclusive_group()
    pin.add_argument("--pin", dest="pinned", action="store_const", const=True, default=None,
                     help="pin it (always in context, first)")
    pin.add_argument("--unpin", dest="pinned", action="store_const", const=False,
                     help="unpin it")
    update.add_argument("--wait", action="store_true",
                        help="return once a changed content is indexed (at most 30 s)")
    update.set_defaults(func=cmd_update)

    get = client("get", "fetch one memory by id", "print the memory as JSON")
    get.add_argument("id")
    get.set_defaults(func=cmd_get)

    delete = client("delete", "soft-delete one memory (--purge: remove it and what was "
                    "derived from it)", "print the id, when it was deleted and whether it "
                    "was purged as JSON")
    delete.add_argument("id")
    delete.add_argument("--purge", action="store_true",
                        help="remove the memory, its vector, postings and the concepts only it "
                        "evidenced, instead of marking it deleted")
    delete.set_defaults(func=cmd_delete)

    drop = client("delete-namespace", "remove a namespace and everything in it, for good",
                  "print the namespace and how many memories were removed as JSON")
    drop.add_argument("--confirm", default="", metavar="NAMESPACE",
                      help="the namespace's name again")
    drop.set_defaults(func=cmd_delete_namespace)

    recall = client("recall", "recall memories for a query",
                    "print the hits, the legs' states, fusion and latency as JSON")
    recall.add_argument("query")
    recall.add_argument("-k", type=int, default=10)
    recall.add_argument("--sort-by", choices=sorted(SORT_BY_VALUES), default="relevance")
    recall.add_argument("--budget-ms", type=int, default=0)
    recall.add_argument("--reference-time", metavar="ISO",
                        help="when the query is asked (e.g. 2024-01-08T09:00:00Z): relative "
                             "times in it (\"last week\") are read against it; default: now")
    recall.add_argument("--explain", action="store_true")
    recall.add_argument("--set", action="append", metavar="NAME=VALUE",
                        help="a recall setting for this request (repeatable; `recallmesh "
                        "settings` lists them; weights.<leg>=W, skip_legs=a,b)")
    add_filter_arguments(recall)
    recall.set_defaults(func=cmd_recall)

    context = client("context", "print the block of memories to put before a prompt "
                     "(recall packed into a token budget)",
                     "the text with its ids, token count and what was left out")
    context.add_argument("query", help="the prompt (- reads it from standard input)")
    context.add_argument("--max-tokens", type=int, default=1000)
    context.add_argument("-k", type=int, default=20, help="memories recalled before packing")
    context.add_argument("--min-score", type=float, default=None, metavar="0..1",
                         help="the relevance floor (default: the server's); nothing above it "
                         "prints nothing")
    context.add_argument("--include-sensitive", action="store_true",
                         help="also pack sensitive memories (left out by default)")
    add_filter_arguments(context)
    context.set_defaults(func=cmd_context)

    listing = client("list", "list the memories that pass the filters, a page at a time "
                     "(newest first)", "print the memories and the next page's token as JSON")
    listing.add_argument("--order", choices=("created", "updated", "importance"),
                         default="created", help="order by (default created)")
    listing.add_argument("--ascending", action="store_true",
                         help="oldest / least important first")
    listing.add_argument("--page-size", type=int, metavar="N",
                         help="memories per page, 1..1000 (default 100)")
    listing.add_argument("--page-token", metavar="TOKEN",
                         help="continue where a page ended (the token it printed)")
    listing.add_argument("--all", action="store_true", help="follow every page")
    for p in (listing, count := client("count", "count the memories list would show",
                                       "print {\"count\": N}")):
        p.add_argument("--include-deleted", action="store_true",
                       help="also soft-deleted memories")
        p.add_argument("--include-ended", action="store_true",
                       help="also ended memories (superseded, validity over)")
        add_filter_arguments(p)
    listing.set_defaults(func=cmd_list)
    count.set_defaults(func=cmd_count)

    history = client("history", "a memory's earlier versions and its relations both ways",
                     "print the memory, its versions and relations as JSON")
    history.add_argument("id")
    history.set_defaults(func=cmd_history)

    export = client("export", "write the namespace's memories (or those passing the filters) "
                    "as JSONL, with their relations and versions, oldest first",
                    "with --out: print {\"exported\": N, \"file\": FILE} (the records are "
                    "JSONL either way)")
    export.add_argument("--out", metavar="FILE", help="write to FILE (default: stdout)")
    add_filter_arguments(export)
    export.set_defaults(func=cmd_export)

    imp = client("import", "import a JSONL file: plain memories, or the records of an export "
                 "(written back exactly)", "print what was imported as JSON")
    imp.add_argument("file")
    imp.add_argument("--batch-size", type=int, default=None,
                     help=f"plain memories per StoreBatch call, 1..1000 (default "
                          f"{DEFAULT_BATCH_SIZE})")
    imp.add_argument("--wait-index", action="store_true",
                     help="plain memories: return only once every batch is embedded "
                          "(searchable by meaning)")
    imp.set_defaults(func=cmd_import)

    matching = client("delete-matching", "delete every memory that passes the filters (a dry "
                      "run unless --confirm)", "print matched, deleted and the sample as JSON")
    matching.add_argument("--confirm", action="store_true",
                          help="delete them (default: a dry run that only counts)")
    matching.add_argument("--purge", action="store_true",
                          help="with --confirm: purge them (as delete --purge) instead")
    matching.add_argument("--sample", type=int, default=10, metavar="N",
                          help="show N of the matching memories, 1..100 (default 10)")
    add_filter_arguments(matching)
    matching.set_defaults(func=cmd_delete_matching)

    mcp = sub.add_parser("mcp", help="serve the MCP server (tools for agents) over stdio or "
                         "streamable HTTP (docs/mcp.md)")
    mcp.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    mcp.add_argument("--namespace", "-n",
                     default=os.environ.get("RECALLMESH_MCP_NAMESPACE", ""),
                     help="the namespace every tool works in (env RECALLMESH_MCP_NAMESPACE); "
                          "the model cannot choose another")
    mcp.add_argument("--target", default=target, help=f"gateway address (default {target})")
    mcp.add_argument("--host", default=os.environ.get("RECALLMESH_MCP_HOST", "127.0.0.1"),
                     help="http: the address to listen on (env RECALLMESH_MCP_HOST)")
    mcp.add_argument("--port", type=int, default=int(os.environ.get("RECALLMESH_MCP_PORT",
                                                                    "8765")),
                     help="http: the port (env RECALLMESH_MCP_PORT, default 8765)")
    mcp.add_argument("--show-sensitive", action="store_true",
                     default=None,
                     help="let the tools show the text of sensitive memories (env "
                          "RECALLMESH_MCP_SHOW_SENSITIVE=true; default: withheld, a match is "
                          "named by its id)")
    mcp.set_defaults(func=cmd_mcp)

    keys = sub.add_parser("keys", help="manage API keys (needs an admin key)")
    keys_sub = keys.add_subparsers(dest="keys_command", required=True)

    def keys_command(name: str, help_text: str) -> argparse.ArgumentParser:
        p = keys_sub.add_parser(name, help=help_text)
        p.add_argument("--target", default=target, help=f"gateway address (default {target})")
        return p

    create = keys_command("create", "create an API key and print it (once)")
    create.add_argument("--name", required=True, help="what the key is for")
    create.add_argument("--namespace", "-n", action="append", required=True,
                        metavar="NAME|PREFIX*|*",
                        help="a namespace grant (repeatable): an exact name, a prefix pattern "
                             "ending in * (acme-*), or * for every namespace")
    create.add_argument("--scope", action="append", metavar="read|write|admin",
                        help="scopes (repeatable or comma-separated; default read,write)")
    create.add_argument("--expires-in", metavar="DURATION|ISO",
                        help="expire after a duration (90d, 12h) or at an ISO 8601 time")
    create.add_argument("--database", action="store_true",
                        help="write the key straight into the database (RECALLMESH_DSN) "
                             "instead of asking the gateway: the first admin key of a "
                             "deployment")
    create.set_defaults(func=cmd_keys_create)
    list_keys = keys_command("list", "list API keys (never their secrets)")
    list_keys.add_argument("--all", action="store_true", help="include revoked keys")
    list_keys.add_argument("--json", action="store_true")
    list_keys.set_defaults(func=cmd_keys_list)
    revoke = keys_command("revoke", "revoke an API key at once")
    revoke.add_argument("id", help="the key's id (rmk_<id>_...)")
    revoke.set_defaults(func=cmd_keys_revoke)

    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code: int = args.func(args)
        return code
    except InputError as exc:
        _error("error", str(exc))
        return 2
    except grpc.RpcError as exc:  # the KeyService commands' stubs
        _error(exc.code().name, exc.details())
        return 1
    except RecallmeshError as exc:
        _error(exc.code.name, exc.details)
        return 1


def _error(label: str, message: str) -> None:
    """`label: message` on stderr, one line where stderr is not a terminal; the message is
    plain text (never read as markup)."""
    err_console.print(Text(f"{label}:", style="red"), Text(message), highlight=False)


if __name__ == "__main__":
    sys.exit(main())
