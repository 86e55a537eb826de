"""The embedding model and its jobs, straight on the database: fetch-model, reembed (change the
model), jobs list|retry|drop (embedding jobs parked after repeated failures)."""

from __future__ import annotations

import argparse
import json
from datetime import UTC
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from recallmesh.cli.common import Subcommands, database_dsn, memory_ids
from recallmesh.cli.output import console, err_console
from recallmesh.client.jsonl import InputError
from recallmesh.embedding_models.manifest import DEFAULT_MODEL
from recallmesh.shared.settings import ConfigError


def add_fetch_model(sub: Subcommands[argparse.ArgumentParser]) -> None:
    fetch_model = sub.add_parser(
        "fetch-model",
        help="fetch an embedding model (recallmesh/embedding_models/catalogue/*.json)")
    fetch_model.add_argument("name", nargs="?", default=DEFAULT_MODEL)
    fetch_model.set_defaults(func=cmd_fetch_model)


def add_reembed(sub: Subcommands[argparse.ArgumentParser]) -> None:
    re_embed = sub.add_parser("reembed", help="re-embed every memory with another model, "
                                              "then --switch to it")
    re_embed.add_argument("--manifest", required=True, help="the new model's manifest.json")
    re_embed.add_argument("--switch", action="store_true",
                          help="make the re-embedded vectors live (after a reembed run)")
    re_embed.add_argument("--batch-size", type=int, default=64)
    re_embed.set_defaults(func=cmd_reembed)


def add_jobs(sub: Subcommands[argparse.ArgumentParser]) -> None:
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
    concepts = jobs_sub.add_parser(
        "concepts", help="queue every memory without concepts for extraction (after turning "
        "the graph leg on: memories stored before have none)")
    concepts.add_argument("--namespace", "-n", help="only this namespace")
    concepts.set_defaults(func=cmd_jobs)


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
    dsn, stack = database_dsn()
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
    return None if args.all else memory_ids(args.ids)


def cmd_jobs(args: argparse.Namespace) -> int:
    import psycopg

    from recallmesh.services.indexer import jobs

    targets = None if args.jobs_command in ("list", "concepts") else _jobs_targets(args)
    dsn, stack = database_dsn()
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            if args.jobs_command == "list":
                return _print_parked(jobs.list_parked(conn, args.namespace, args.limit),
                                     jobs.count_parked(conn, args.namespace), args.json)
            if args.jobs_command == "concepts":
                queued = jobs.queue_for_concepts(conn, args.namespace)
                console.print(f"{queued} memories without concepts queued; the indexer embeds "
                              "them again and extracts their concepts (with the graph leg among "
                              "RECALLMESH_LEGS, or RECALLMESH_CONCEPT_EXTRACTOR=spacy)")
                return 0
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
