"""A namespace to a file and back: export (JSONL records with relations and versions) and
import (plain memories, recallmesh.client.jsonl, or an export written back exactly)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

from recallmesh.cli.common import ClientCommands, client_for
from recallmesh.cli.filters import add_filter_arguments, filter_options
from recallmesh.cli.output import console, err_console, jsonable, print_json, warn_not_indexed
from recallmesh.client import Client, NewMemory
from recallmesh.client.errors import RecallmeshError
from recallmesh.client.jsonl import (
    InputError,
    export_line,
    exported_records,
    is_export,
    memory_from_json,
    read_json_lines,
    store_memories,
)

DEFAULT_BATCH_SIZE = 200


def add_export(client: ClientCommands) -> None:
    export = client("export", "write the namespace's memories (or those passing the filters) "
                    "as JSONL, with their relations and versions, oldest first",
                    "with --out: print {\"exported\": N, \"file\": FILE} (the records are "
                    "JSONL either way)")
    export.add_argument("--out", metavar="FILE", help="write to FILE (default: stdout)")
    add_filter_arguments(export)
    export.set_defaults(func=cmd_export)


def add_import(client: ClientCommands) -> None:
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


def import_memories(client: Client, namespace: str, records: list[tuple[int, NewMemory]],
                    batch_size: int, wait_index: bool = False,
                    timeout: float | None = None) -> tuple[list[str], int]:
    """Store records in batches (recallmesh.client.jsonl.store_memories) under a progress bar
    on stderr, warning of memories not embedded in time; with wait_index each batch returns
    once it is embedded. The ids, and how many of them were already stored (the same memory:
    nothing written)."""
    columns = (TextColumn("importing"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err_console) as progress:
        task = progress.add_task("import", total=len(records))
        stored = store_memories(client, namespace, records, batch_size, wait_index=wait_index,
                                timeout=timeout,
                                on_batch=lambda n: progress.advance(task, n))
    warn_not_indexed(stored.not_indexed)
    return stored.ids, stored.existing


def cmd_import(args: argparse.Namespace) -> int:
    path = Path(args.file)
    lines = read_json_lines(path)
    if is_export(lines):
        return _import_records(args, exported_records(lines, str(path)))
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
        print_json({"format": "records", **jsonable(result)})
        return 0
    skipped = (f", {result.relations_skipped} skipped (their target is not in the namespace)"
               if result.relations_skipped else "")
    console.print(f"imported {result.imported} memories into namespace {args.namespace!r} "
                  f"({result.unchanged} unchanged); {result.relations_written} relations "
                  f"written{skipped}", markup=False, highlight=False)
    return 0
