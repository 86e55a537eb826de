"""The `recallmesh` command: run the stack and talk to it.

  recallmesh up [--demo]            start Postgres + every service, wait for SERVING, serve
  recallmesh migrate                apply database migrations (and size the vector column)
  recallmesh fetch-model [NAME]     fetch an embedding model into the model cache
  recallmesh reembed --manifest M [--switch]   change the embedding model (docs/operations.md)
  recallmesh jobs list|retry|drop   embedding jobs parked after repeated failures of their text
  recallmesh store / recall / context / get / delete / import   client commands (gateway)
  recallmesh mcp [--transport stdio|http]   the MCP server for agents (docs/mcp.md)

Client commands use --target (env RECALLMESH_TARGET, default localhost:50051).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

import grpc
from google.protobuf.timestamp_pb2 import Timestamp
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from recallmesh.client import Client, Memory, NewMemory, encoded_size
from recallmesh.client.errors import RecallmeshError
from recallmesh.embedding_models.manifest import DEFAULT_MODEL
from recallmesh.shared.services import BY_NAME
from recallmesh.shared.settings import ConfigError
from recallmesh.v1 import keys_pb2, keys_pb2_grpc, memory_pb2, memory_pb2_grpc
from recallmesh.wire.channel import DEFAULT_TARGET
from recallmesh.wire.enums import LEG_STATE_NAMES, SORT_BY_VALUES
from recallmesh.wire.timestamps import optional_datetime, to_proto_timestamp
from recallmesh.wire.validation import MAX_INDEX_WAIT_MS, MAX_REQUEST_BYTES

DEMO_FILE: Traversable = resources.files("recallmesh.demo") / "memories.jsonl"  # package data
DEMO_NAMESPACE = "demo"
DEMO_QUERY = "which frontend framework does Maya like?"

console = Console()
err_console = Console(stderr=True)



class InputError(ValueError):
    """A problem with the user's input file or arguments."""


# --------------------------------------------------------------------------- client helpers


def gateway_channel(target: str, api_key: str | None = None) -> grpc.Channel:
    """A channel to the gateway carrying the API key (`api_key`, else RECALLMESH_API_KEY, else
    the local key `recallmesh up` wrote under .data/); TLS when RECALLMESH_TLS_CA (and, for
    mutual TLS, a certificate) is set (recallmesh.shared.tls)."""
    from recallmesh.shared.credentials import client_api_key
    from recallmesh.wire.channel import dial_blocking

    try:
        return dial_blocking(target, token=api_key or client_api_key())
    except ConfigError as exc:
        raise InputError(str(exc)) from None


def stub_for(target: str, api_key: str | None = None) -> tuple[grpc.Channel, Any]:
    """The gateway's MemoryService stub (see gateway_channel)."""
    channel = gateway_channel(target, api_key)
    return channel, memory_pb2_grpc.MemoryServiceStub(channel)


def _datetime(value: str, field: str, where: str) -> datetime:
    """An ISO 8601 time with its timezone (InputError naming `field` otherwise)."""
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except (TypeError, ValueError):
        raise InputError(f"{where}: {field} must be an ISO 8601 time, got {value!r}") from None
    if parsed.tzinfo is None:
        raise InputError(f"{where}: {field} needs a timezone (e.g. 2026-01-31T09:00:00Z)")
    return parsed


def _timestamp(value: str, field: str, where: str) -> Timestamp:
    ts = Timestamp()
    to_proto_timestamp(_datetime(value, field, where), ts)
    return ts


def _iso_utc(value: datetime) -> str:
    """2026-01-31T09:00:00Z style, as the CLI prints times."""
    return value.astimezone(UTC).replace(tzinfo=None).isoformat() + "Z"


def client_for(args: argparse.Namespace) -> Client:
    """The typed client (recallmesh.client) of the gateway at --target, in --namespace: the
    API key of RECALLMESH_API_KEY or the local key `recallmesh up` wrote, TLS when
    RECALLMESH_TLS_CA (and, for mutual TLS, a certificate) is set."""
    try:
        return Client(args.target, namespace=args.namespace)
    except ConfigError as exc:
        raise InputError(str(exc)) from None


def memory_from_json(obj: Any, where: str) -> NewMemory:
    """One JSONL record -> the memory it stores (format in docs/cli.md).

    Types are checked strictly so that a malformed file fails with the line
    number instead of storing something the user did not mean.
    """
    if not isinstance(obj, dict):
        raise InputError(f"{where}: expected a JSON object")
    unknown = set(obj) - {"content", "category", "tags", "importance", "sensitive", "metadata",
                          "created_at", "valid_from", "valid_to", "expires_at", "thread"}
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

    def time(field: str) -> datetime | None:
        value = typed(field, str, "")
        return _datetime(value, field, where) if value else None

    return NewMemory(obj["content"], category=typed("category", str, ""), tags=tuple(tags),
                     importance=None if importance is None else float(importance),
                     sensitive=typed("sensitive", bool, False), thread=typed("thread", str, ""),
                     metadata=metadata, created_at=time("created_at"),
                     valid_from=time("valid_from"), valid_to=time("valid_to"),
                     expires_at=time("expires_at"))


def read_jsonl(path: Path | Traversable) -> list[Any]:
    memories = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"{path}:{number}: not valid JSON ({exc.msg})") from None
            memories.append((number, memory_from_json(obj, f"{path}:{number}")))
    return memories


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
                    show_progress: bool = True, wait_index: bool = False
                    ) -> tuple[list[str], int]:
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
                    timeout=MAX_INDEX_WAIT_MS / 1000 + 60)
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
    if not_indexed:
        err_console.print(
            f"[yellow]warning:[/] {not_indexed} memories are stored but not yet embedded "
            "(is the embedding service up?); they are found lexically meanwhile"
        )
    return ids, existing


def print_recall(response: Any, explain: bool) -> None:
    table = Table(title=f"{len(response.hits)} hit(s)", show_lines=False)
    table.add_column("#", justify="right")
    table.add_column("score", justify="right")
    table.add_column("category")
    table.add_column("content", overflow="fold")
    table.add_column("id", style="dim")
    if explain:
        table.add_column("legs (rank/score)")
    for i, hit in enumerate(response.hits, start=1):
        row = [str(i), f"{hit.score:.4f}", hit.memory.category,
               hit.memory.content + ended_mark(hit.memory.superseded_by,
                                               optional_datetime(hit.memory, "valid_to")),
               hit.memory.id]
        if explain:
            row.append(", ".join(f"{c.leg}#{c.rank} {c.score:.3f}" for c in hit.legs))
        table.add_row(*row)
    console.print(table)
    legs = ", ".join(
        f"{leg.leg}={LEG_STATE_NAMES.get(leg.state, 'UNSPECIFIED')}"
        f" {leg.latency_ms:.1f}ms ({leg.candidates} cand.)"
        + (f" [{leg.detail}]" if leg.detail else "")
        for leg in response.legs
    )
    console.print(f"legs: {legs}" + ("  [bold yellow]DEGRADED[/]" if response.degraded else ""))
    if response.HasField("time_window"):
        window = response.time_window
        console.print(
            f"time window: {window.phrase!r} {window.start.ToDatetime().isoformat()}Z .. "
            f"{window.end.ToDatetime().isoformat()}Z ({window.boosted} raised)", markup=False)
    if response.HasField("intent"):
        console.print(f"intent: {response.intent.name} ({response.intent.phrase!r})",
                      markup=False)


def ended_mark(superseded_by: str, valid_to: datetime | None,
               now: datetime | None = None) -> str:
    """" [superseded by <id>]" / " [ended <time>]" for a memory whose validity ended."""
    if superseded_by:
        return f" [superseded by {superseded_by}]"
    if valid_to is not None and valid_to <= (now or datetime.now(UTC)):
        return f" [ended {_iso_utc(valid_to)}]"
    return ""


def print_memory(memory: Memory) -> None:
    fields = {
        "id": memory.id,
        "namespace": memory.namespace,
        "content": memory.content,
        "category": memory.category,
        "tags": ", ".join(memory.tags),
        "importance": f"{memory.importance:.2f}",
        "sensitive": str(memory.sensitive).lower(),
        "created_at": _iso_utc(memory.created_at) if memory.created_at else "",
    }
    if memory.thread:
        fields["thread"] = memory.thread
    if memory.valid_to is not None:
        fields["valid_to"] = _iso_utc(memory.valid_to)
    if memory.superseded_by:
        fields["superseded_by"] = memory.superseded_by
    if memory.expires_at is not None:
        fields["expires_at"] = _iso_utc(memory.expires_at)
    if memory.metadata:
        fields["metadata"] = json.dumps(dict(memory.metadata))
    table = Table(show_header=False)
    for key, value in fields.items():
        table.add_row(key, value)
    console.print(table)


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
    _timestamp(value, "--expires-in", "arguments")  # an ISO time: checked, passed on as given
    return value


def cmd_store(args: argparse.Namespace) -> int:
    expiry = expires_at(args.expires_in)
    record = {"content": args.content, "category": args.category,
              "tags": [t for t in args.tags.split(",") if t] if args.tags else [],
              "importance": args.importance, "sensitive": args.sensitive,
              "expires_at": expiry, "thread": args.thread}
    memory_from_json(record, "arguments")  # checked as an imported line would be
    fields: dict[str, Any] = {"category": args.category, "tags": record["tags"],
                              "sensitive": args.sensitive, "thread": args.thread}
    if args.importance is not None:
        fields["importance"] = args.importance
    if expiry:
        fields["expires_at"] = _datetime(expiry, "--expires-in", "arguments")
    with client_for(args) as client:
        stored = client.store(args.content, **fields)
    console.print(stored.memory.id)
    return 0


def cmd_recall(args: argparse.Namespace) -> int:
    channel, stub = stub_for(args.target)
    request = memory_pb2.RecallRequest(
        namespace=args.namespace, query=args.query, k=args.k, sort_by=SORT_BY_VALUES[args.sort_by],
        budget_ms=args.budget_ms, explain=args.explain,
    )
    if args.category:
        request.filters.categories.extend(args.category)
    if args.tag:
        request.filters.tags.extend(args.tag)
    if args.reference_time:
        request.reference_time.CopyFrom(
            _timestamp(args.reference_time, "--reference-time", "recall"))
    if args.set:
        from recallmesh.shared.errors import InvalidArgument
        from recallmesh.wire.policy import Overrides

        try:
            Overrides.parse(args.set).to_proto(request.fusion)
        except InvalidArgument as exc:
            raise InputError(exc.message) from None
    with channel:
        response = stub.Recall(request, timeout=args.timeout)
    if args.json:
        from google.protobuf.json_format import MessageToJson

        print(MessageToJson(response))
    else:
        print_recall(response, args.explain)
    return 0


def cmd_context(args: argparse.Namespace) -> int:
    """The context block for a prompt (recallmesh.client), printed as is: the auto-recall
    hook of docs/mcp.md pipes it before the user's prompt."""
    options: dict[str, Any] = {"max_tokens": args.max_tokens, "k": args.k,
                               "include_sensitive": args.include_sensitive}
    if args.category:
        options["categories"] = args.category
    if args.tag:
        options["tags"] = args.tag
    if args.min_score is not None:
        options["min_score"] = args.min_score
    query = args.query if args.query != "-" else sys.stdin.read()
    with Client(args.target, namespace=args.namespace, tls=None) as client:
        result = client.context(query, timeout=args.timeout, **options)
    if args.json:
        print(json.dumps({"text": result.text, "ids": result.ids, "tokens": result.tokens,
                          "tokenizer": result.tokenizer, "dated": result.dated,
                          "degraded": result.degraded,
                          "omitted": {"superseded": result.superseded_omitted,
                                      "sensitive": result.sensitive_omitted,
                                      "over_budget": result.over_budget_omitted},
                          "latency_ms": round(result.latency_ms, 2)}, indent=2))
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
    """Every recall setting (recallmesh/wire/policy.py): its built-in default, the value this
    environment gives it, its variable and whether a request may override it."""
    from recallmesh.services.lexical.settings import LexicalSettings
    from recallmesh.wire.policy import LEG_WEIGHTS_ENV, RecallPolicy

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
    with client_for(args) as client:
        memory = client.get(args.id)
    print_memory(memory)
    return 0


def cmd_delete(args: argparse.Namespace) -> int:
    with client_for(args) as client:
        client.delete(args.id, purge=args.purge)
    console.print(f"{'purged' if args.purge else 'deleted'} {args.id}")
    return 0


def cmd_delete_namespace(args: argparse.Namespace) -> int:
    if args.confirm != args.namespace:
        raise InputError(f"deleting namespace {args.namespace!r} removes every memory in it for "
                         f"good: repeat its name with --confirm {args.namespace}")
    with client_for(args) as client:
        removed = client.delete_namespace()
    console.print(f"namespace {args.namespace!r} deleted ({removed} memories removed)")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    if not 1 <= args.batch_size <= 1000:
        raise InputError("--batch-size must be within 1..1000")
    records = read_jsonl(Path(args.file))
    with client_for(args) as client:
        ids, existing = import_memories(client, args.namespace, records, args.batch_size,
                                        wait_index=args.wait_index)
    already = f" ({existing} already stored: unchanged)" if existing else ""
    console.print(f"imported {len(ids) - existing} memories into namespace "
                  f"{args.namespace!r}{already}", markup=False)
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


def _memory_ids(values: list[str]) -> list[str]:
    import uuid

    ids = []
    for value in values:
        try:
            ids.append(str(uuid.UUID(value)))
        except ValueError:
            raise InputError(f"not a memory id (a UUID): {value!r}") from None
    return ids


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
    channel = stack.dial()
    stub = memory_pb2_grpc.MemoryServiceStub(channel)
    with channel, stack.client() as client:
        if present:
            console.print(f"demo namespace already holds {present} memories; not loading again")
        else:
            ids, _ = import_memories(client, DEMO_NAMESPACE, read_jsonl(DEMO_FILE), 100,
                                     wait_index=True)
            console.print(f"loaded {len(ids)} demo memories into namespace {DEMO_NAMESPACE!r}")
        console.print(f"\nexample: recallmesh recall --namespace demo {DEMO_QUERY!r}")
        response = stub.Recall(
            memory_pb2.RecallRequest(namespace=DEMO_NAMESPACE, query=DEMO_QUERY, k=5), timeout=10
        )
        print_recall(response, explain=False)


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
            except (grpc.RpcError, InputError) as exc:  # serve anyway; say what failed
                what = (f"{exc.code().name}: {exc.details()}" if isinstance(exc, grpc.RpcError)
                        else str(exc))
                err_console.print(f"[yellow]demo memories not loaded:[/] {what}")
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

    def client(name: str, help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text)
        p.add_argument("--target", default=target, help=f"gateway address (default {target})")
        p.add_argument("--namespace", "-n", required=True)
        return p

    store = client("store", "store one memory")
    store.add_argument("content")
    store.add_argument("--category", default="")
    store.add_argument("--tags", default="", help="comma-separated")
    store.add_argument("--importance", type=float, default=None)
    store.add_argument("--sensitive", action="store_true")
    store.add_argument("--thread", default="",
                       help="the conversation / session it belongs to (context propagation)")
    store.add_argument("--expires-in", metavar="DURATION|ISO",
                       help="expire the memory after a duration (3600, 90s, 15m, 12h, 30d) or "
                            "at an ISO 8601 time; default: the namespace's default TTL, if any")
    store.set_defaults(func=cmd_store)

    recall = client("recall", "recall memories for a query")
    recall.add_argument("query")
    recall.add_argument("-k", type=int, default=10)
    recall.add_argument("--sort-by", choices=sorted(SORT_BY_VALUES), default="relevance")
    recall.add_argument("--category", action="append", help="filter (repeatable)")
    recall.add_argument("--tag", action="append", help="filter (repeatable)")
    recall.add_argument("--budget-ms", type=int, default=0)
    recall.add_argument("--reference-time", metavar="ISO",
                        help="when the query is asked (e.g. 2024-01-08T09:00:00Z): relative "
                             "times in it (\"last week\") are read against it; default: now")
    recall.add_argument("--explain", action="store_true")
    recall.add_argument("--set", action="append", metavar="NAME=VALUE",
                        help="a recall setting for this request (repeatable; `recallmesh "
                        "settings` lists them; weights.<leg>=W, skip_legs=a,b)")
    recall.add_argument("--json", action="store_true", help="print the raw response as JSON")
    recall.add_argument("--timeout", type=float, default=10.0)
    recall.set_defaults(func=cmd_recall)

    context = client("context", "print the block of memories to put before a prompt "
                     "(recall packed into a token budget)")
    context.add_argument("query", help="the prompt (- reads it from standard input)")
    context.add_argument("--max-tokens", type=int, default=1000)
    context.add_argument("-k", type=int, default=20, help="memories recalled before packing")
    context.add_argument("--category", action="append", help="filter (repeatable)")
    context.add_argument("--tag", action="append", help="filter (repeatable)")
    context.add_argument("--min-score", type=float, default=None, metavar="0..1",
                         help="the relevance floor (default: the server's); nothing above it "
                         "prints nothing")
    context.add_argument("--include-sensitive", action="store_true",
                         help="also pack sensitive memories (left out by default)")
    context.add_argument("--json", action="store_true",
                         help="the text with its ids, token count and what was left out")
    context.add_argument("--timeout", type=float, default=10.0)
    context.set_defaults(func=cmd_context)

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

    get = client("get", "fetch one memory by id")
    get.add_argument("id")
    get.set_defaults(func=cmd_get)

    delete = client("delete", "soft-delete one memory (--purge: remove it and what was "
                    "derived from it)")
    delete.add_argument("id")
    delete.add_argument("--purge", action="store_true",
                        help="remove the memory, its vector, postings and the concepts only it "
                        "evidenced, instead of marking it deleted")
    delete.set_defaults(func=cmd_delete)

    drop = client("delete-namespace", "remove a namespace and everything in it, for good")
    drop.add_argument("--confirm", default="", metavar="NAMESPACE",
                      help="the namespace's name again")
    drop.set_defaults(func=cmd_delete_namespace)

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

    imp = client("import", "bulk-import memories from a JSONL file")
    imp.add_argument("file")
    imp.add_argument("--batch-size", type=int, default=200)
    imp.add_argument("--wait-index", action="store_true",
                     help="return only once every batch is embedded (searchable by meaning)")
    imp.set_defaults(func=cmd_import)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code: int = args.func(args)
        return code
    except InputError as exc:
        err_console.print(f"[red]error:[/] {exc}")
        return 2
    except grpc.RpcError as exc:
        err_console.print(f"[red]{exc.code().name}:[/] {exc.details()}")
        return 1
    except RecallmeshError as exc:
        err_console.print(f"[red]{exc.code.name}:[/] {exc.details}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
