"""API keys: keys create|list|revoke (through the gateway's KeyService, or `create
--database` straight into the database for a deployment's first admin key)."""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from typing import Any

from rich.table import Table

from recallmesh.cli.common import Subcommands, database_dsn, expires_at, gateway_channel
from recallmesh.cli.output import console, err_console
from recallmesh.client.jsonl import InputError
from recallmesh.v1 import keys_pb2, keys_pb2_grpc


def add_keys(sub: Subcommands[argparse.ArgumentParser], target: str) -> None:
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
        dsn, stack = database_dsn()
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
