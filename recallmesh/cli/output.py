"""What the CLI prints: the consoles (a terminal's width; unwrapped elsewhere), JSON (--json),
memory tables cut to the console's width, recall hits, one memory, warnings."""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from recallmesh.client import Memory, RecallResult

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


def iso_utc(value: datetime) -> str:
    """2026-01-31T09:00:00Z style, as the CLI prints times."""
    return value.astimezone(UTC).replace(tzinfo=None).isoformat() + "Z"


def jsonable(value: Any) -> Any:
    """A client result (recallmesh.client's dataclasses) as JSON values: times as ISO 8601 UTC
    strings ("...Z"), tuples as lists, unset values as null."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, datetime):
        return iso_utc(value)
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    return value


def print_json(value: Any) -> None:
    """`value` as JSON on stdout (--json): machine-readable, never wrapped or styled."""
    print(json.dumps(jsonable(value), indent=2, ensure_ascii=False))


def short(text: str, limit: int = TABLE_CONTENT_CHARS) -> str:
    """`text` on one line (white space collapsed), cut to `limit` characters with an
    ellipsis: how a table shows a memory's content."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def table_time(value: datetime | None) -> str:
    """A time in a table: 2026-01-31T09:00:00Z (what the time options take back)."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if value else ""


def ended_mark(superseded_by: str, valid_to: datetime | None,
               now: datetime | None = None) -> str:
    """" [superseded by <id>]" / " [ended <time>]" for a memory whose validity ended."""
    if superseded_by:
        return f" [superseded by {superseded_by}]"
    if valid_to is not None and valid_to <= (now or datetime.now(UTC)):
        return f" [ended {iso_utc(valid_to)}]"
    return ""


def content_cell(memory: Memory) -> Text:
    """A memory's content in a table: cut (short), with what the table would not show
    otherwise: pinned, sensitive, ended, deleted. Plain text: never read as markup."""
    marks = "".join(f"[{mark}] " for mark, on in (("pinned", memory.pinned),
                                                  ("sensitive", memory.sensitive)) if on)
    ended = ended_mark(memory.superseded_by, memory.valid_to)
    deleted = f" [deleted {iso_utc(memory.deleted_at)}]" if memory.deleted_at else ""
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
             "created": [table_time(m.created_at) for m in memories],
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
            f"time window: {window.phrase!r} {iso_utc(window.start)} .. "
            f"{iso_utc(window.end)} ({window.boosted} raised)", markup=False)
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
        "created_at": iso_utc(memory.created_at) if memory.created_at else "",
    }
    optional = {
        "updated_at": memory.updated_at, "valid_from": memory.valid_from,
        "valid_to": memory.valid_to, "expires_at": memory.expires_at,
        "deleted_at": memory.deleted_at}
    fields |= {name: iso_utc(value) for name, value in optional.items() if value is not None}
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


def counted(n: int, noun: str) -> str:
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
