"""The filter options (RecallFilters, docs/api.md "Filters") of recall, context, list, count,
export and delete-matching, and the client options they become."""

from __future__ import annotations

import argparse
from datetime import datetime

from recallmesh.cli.common import checked_importance, key_values, optional_datetime
from recallmesh.client import FilterOptions, ListOptions
from recallmesh.client.jsonl import InputError


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
    low = checked_importance(args.importance_min, "--importance-min")
    high = checked_importance(args.importance_max, "--importance-max")
    if low is not None and high is not None and low > high:
        raise InputError(f"--importance-min ({low}) is above --importance-max ({high})")
    if low is not None:
        options["importance_min"] = low
    if high is not None:
        options["importance_max"] = high

    def time(name: str) -> datetime | None:
        return optional_datetime(getattr(args, name), "--" + name.replace("_", "-"), where)

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
