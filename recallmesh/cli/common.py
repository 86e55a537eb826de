"""What the CLI's commands share: the options every client command takes, the gateway's
channel and typed client, checked values of options (times, memory ids, importance, KEY=VALUE,
expiry) and a database for the admin commands. Bad input raises InputError (the one of
recallmesh.client.jsonl, which reads memories files the same way): exit status 2."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime, timedelta
from typing import Any

import grpc

from recallmesh.client import Client
from recallmesh.client.jsonl import InputError, memory_id, parse_time
from recallmesh.shared.settings import ConfigError

# The `recallmesh` parser's subcommands: each command group adds its own.
Subcommands = argparse._SubParsersAction


class ClientCommands:
    """Adds the MemoryService commands: each talks to the gateway through the typed client,
    with --target, --namespace, --json and --timeout."""

    def __init__(self, sub: Subcommands[argparse.ArgumentParser], target: str) -> None:
        self.sub, self.target = sub, target

    def __call__(self, name: str, help_text: str,
                 json_help: str = "machine-readable output (JSON)",
                 namespace: bool = True) -> argparse.ArgumentParser:
        """A command; `namespace`: it takes --namespace (required)."""
        target = self.target
        p = self.sub.add_parser(name, help=help_text)
        p.add_argument("--target", default=target, help=f"gateway address (default {target})")
        if namespace:
            p.add_argument("--namespace", "-n", required=True)
        p.add_argument("--json", action="store_true", help=json_help)
        p.add_argument("--timeout", type=float, default=None, metavar="S",
                       help="deadline of each call in seconds (default 10; a write that "
                            "waits for indexing: long enough for its wait)")
        return p


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


def optional_datetime(value: str | None, field: str, where: str) -> datetime | None:
    return parse_time(value, field, where) if value else None


def memory_ids(values: list[str], what: str = "") -> list[str]:
    """Each value as a memory id (a UUID, canonical form); InputError naming the bad one."""
    return [memory_id(value, what) for value in values]


def client_for(args: argparse.Namespace) -> Client:
    """The typed client (recallmesh.client) of the gateway at --target, in --namespace (if the
    command takes one): the
    API key of RECALLMESH_API_KEY or the local key `recallmesh up` wrote, TLS when
    RECALLMESH_TLS_CA (and, for mutual TLS, a certificate) is set."""
    try:
        return Client(args.target, namespace=getattr(args, "namespace", None))
    except ConfigError as exc:
        raise InputError(str(exc)) from None


def checked_importance(value: float | None, field: str) -> float | None:
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
    parse_time(value, "--expires-in", "arguments")  # an ISO time: checked, passed on as given
    return value


def database_dsn() -> tuple[str, Any]:
    """A DSN for an admin command: RECALLMESH_DSN, the running embedded server, or a started one."""
    from recallmesh.shared.db import resolve_dsn
    from recallmesh.shared.embedded import NoDatabase
    from recallmesh.stack.processes import StackError
    from recallmesh.stack.supervisor import Stack

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
