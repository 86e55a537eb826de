"""Recall: recall (hits for a query), context (the block of memories before a prompt) and
settings (every recall setting and where its value comes from)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rich.table import Table

from recallmesh.cli.common import ClientCommands, Subcommands, client_for
from recallmesh.cli.filters import add_filter_arguments, filter_options
from recallmesh.cli.output import console, print_json, print_recall
from recallmesh.client.jsonl import InputError, parse_time
from recallmesh.shared.settings import ConfigError
from recallmesh.wire.enums import SORT_BY_VALUES


def add_settings(sub: Subcommands[argparse.ArgumentParser]) -> None:
    settings = sub.add_parser("settings", help="list every recall setting: built-in default, "
                              "this environment's value, its variable")
    settings.set_defaults(func=cmd_settings)


def add_recall(client: ClientCommands) -> None:
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


def add_context(client: ClientCommands) -> None:
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
        options["reference_time"] = parse_time(args.reference_time, "--reference-time",
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
