"""Many memories at once, by filter or by namespace: namespaces, list, count, delete-matching,
delete-namespace."""

from __future__ import annotations

import argparse

from rich.table import Table
from rich.text import Text

from recallmesh.cli.common import ClientCommands, client_for
from recallmesh.cli.filters import add_filter_arguments, filter_options, list_options
from recallmesh.cli.output import (
    console,
    counted,
    jsonable,
    memory_table,
    print_json,
    table_time,
)
from recallmesh.client import Memory, NamespaceList
from recallmesh.client.jsonl import InputError


def add_delete_namespace(client: ClientCommands) -> None:
    drop = client("delete-namespace", "remove a namespace and everything in it, for good",
                  "print the namespace and how many memories were removed as JSON")
    drop.add_argument("--confirm", default="", metavar="NAMESPACE",
                      help="the namespace's name again")
    drop.set_defaults(func=cmd_delete_namespace)


def add_namespaces(client: ClientCommands) -> None:
    names = client("namespaces", "the namespaces this key may see that hold memories, with "
                   "counts", "print the namespaces and the caller as JSON", namespace=False)
    names.add_argument("--prefix", default="", metavar="P",
                       help="only namespaces starting with P")
    names.set_defaults(func=cmd_namespaces)


def add_list_and_count(client: ClientCommands) -> None:
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


def add_delete_matching(client: ClientCommands) -> None:
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


def namespace_table(listing: NamespaceList) -> Table:
    """Namespaces as a table: name, memories (what count shows), pinned and sensitive among
    them, when one of its memories last changed."""
    table = Table(title=counted(len(listing.namespaces), "namespace"))
    table.add_column("namespace", overflow="fold")
    for name in ("memories", "pinned", "sensitive"):
        table.add_column(name, justify="right")
    table.add_column("last updated", no_wrap=True)
    for n in listing.namespaces:
        table.add_row(Text(n.namespace), str(n.memories), str(n.pinned), str(n.sensitive),
                      table_time(n.last_updated))
    return table


def cmd_namespaces(args: argparse.Namespace) -> int:
    with client_for(args) as client:
        listing = client.namespaces(prefix=args.prefix, timeout=args.timeout)
    if args.json:
        print_json(listing)
        return 0
    if listing.namespaces:
        console.print(namespace_table(listing))
    else:
        console.print("no namespace this key may see holds memories"
                      + (f" (prefix {args.prefix!r})" if args.prefix else ""),
                      markup=False, highlight=False)
    c = listing.caller
    console.print(f"caller: {c.subject} ({c.kind}); grants: {', '.join(c.grants) or 'none'}; "
                  f"scopes: {', '.join(c.scopes) or 'none'}", markup=False, highlight=False)
    return 0


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
        console.print(memory_table(memories, f"{counted(len(memories), 'memory')}{more}"))
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
        print_json({"dry_run": not args.confirm, **jsonable(result)})
        return 0
    verb = "purge" if args.purge else "delete"
    if args.confirm:
        console.print(f"{verb}d {result.deleted} of {result.matched} matching memories",
                      markup=False, highlight=False)
        return 0
    console.print(f"{counted(result.matched, 'memory')} matched; dry run, nothing changed "
                  f"(add --confirm to {verb} them)", markup=False, highlight=False)
    if result.sample:
        console.print(memory_table(result.sample, f"{len(result.sample)} of them, newest "
                                                  "first"))
    return 0
