"""One memory at a time: store, update, get, delete, history."""

from __future__ import annotations

import argparse
from typing import Any

from rich.table import Table
from rich.text import Text

from recallmesh.cli.common import (
    ClientCommands,
    checked_importance,
    client_for,
    expires_at,
    key_values,
    memory_ids,
)
from recallmesh.cli.output import (
    console,
    content_cell,
    ended_mark,
    err_console,
    iso_utc,
    print_json,
    print_memory,
    short,
    table_time,
    warn_not_indexed,
)
from recallmesh.client.jsonl import InputError, memory_from_json, parse_time


def add_store(client: ClientCommands) -> None:
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


def add_update(client: ClientCommands) -> None:
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


def add_get(client: ClientCommands) -> None:
    get = client("get", "fetch one memory by id", "print the memory as JSON")
    get.add_argument("id")
    get.set_defaults(func=cmd_get)


def add_delete(client: ClientCommands) -> None:
    delete = client("delete", "soft-delete one memory (--purge: remove it and what was "
                    "derived from it)", "print the id, when it was deleted and whether it "
                    "was purged as JSON")
    delete.add_argument("id")
    delete.add_argument("--purge", action="store_true",
                        help="remove the memory, its vector, postings and the concepts only it "
                        "evidenced, instead of marking it deleted")
    delete.set_defaults(func=cmd_delete)


def add_history(client: ClientCommands) -> None:
    history = client("history", "a memory's earlier versions and its relations both ways",
                     "print the memory, its versions and relations as JSON")
    history.add_argument("id")
    history.set_defaults(func=cmd_history)


def store_fields(args: argparse.Namespace) -> dict[str, Any]:
    """`store`'s options as the client's MemoryFields, checked as an imported line would be
    (InputError)."""
    expiry = expires_at(args.expires_in)
    tags = [t for t in args.tags.split(",") if t] if args.tags else []
    tags += [t for t in args.tag or [] if t and t not in tags]
    metadata = key_values(args.metadata, "--metadata", repeat=False)
    record = {"content": args.content, "category": args.category, "tags": tags,
              "importance": checked_importance(args.importance, "--importance"),
              "sensitive": args.sensitive, "expires_at": expiry, "thread": args.thread,
              "metadata": metadata, "pinned": args.pin}
    memory_from_json(record, "arguments")
    fields: dict[str, Any] = {"category": args.category, "tags": tags,
                              "sensitive": args.sensitive, "thread": args.thread,
                              "metadata": metadata, "pinned": args.pin}
    if args.importance is not None:
        fields["importance"] = args.importance
    if expiry:
        fields["expires_at"] = parse_time(expiry, "--expires-in", "arguments")
    if args.supersedes:
        fields["supersedes"] = memory_ids(args.supersedes, "--supersedes")
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
        fields["importance"] = checked_importance(args.importance, "--importance")
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
            fields[name] = parse_time(value, "--" + name.replace("_", "-"), where)
    if args.no_expiry:
        fields["expires_at"] = None
    elif args.expires_at:
        fields["expires_at"] = parse_time(args.expires_at, "--expires-at", where)
    if args.pinned is not None:
        fields["pinned"] = args.pinned
    if not fields:
        raise InputError(f"update: nothing to change; give at least one of {UPDATE_FLAGS}")
    return fields


def cmd_update(args: argparse.Namespace) -> int:
    (memory_id,) = memory_ids([args.id])
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


def cmd_get(args: argparse.Namespace) -> int:
    (memory_id,) = memory_ids([args.id])
    with client_for(args) as client:
        memory = client.get(memory_id, timeout=args.timeout)
    if args.json:
        print_json(memory)
    else:
        print_memory(memory)
    return 0


def cmd_delete(args: argparse.Namespace) -> int:
    (memory_id,) = memory_ids([args.id])
    with client_for(args) as client:
        deleted = client.delete(memory_id, purge=args.purge, timeout=args.timeout)
    if args.json:
        print_json(deleted)
    else:
        console.print(f"{'purged' if deleted.purged else 'deleted'} {deleted.id}",
                      markup=False, highlight=False)
    return 0


def cmd_history(args: argparse.Namespace) -> int:
    (memory_id,) = memory_ids([args.id])
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
    state = (f"deleted {iso_utc(memory.deleted_at)}" if memory.deleted_at
             else ended_mark(memory.superseded_by, memory.valid_to).strip(" []") or "current")
    updated = f", updated {table_time(memory.updated_at)}" if memory.updated_at else ""
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
            table.add_row(str(v.version), table_time(v.replaced_at), Text(by),
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
            since = f"  (since {table_time(link.created_at)})" if link.created_at else ""
            console.print(f"  {source} {link.type} {target}{since}", markup=False,
                          highlight=False)
    else:
        console.print("no relations", markup=False, highlight=False)
    return 0
