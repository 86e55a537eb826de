"""The `recallmesh` command: run the stack and talk to it.

  recallmesh up [--demo]            start Postgres + every service, wait for SERVING, serve
  recallmesh migrate                apply database migrations (and size the vector column)
  recallmesh fetch-model [NAME]     fetch an embedding model into the model cache
  recallmesh reembed --manifest M [--switch]   change the embedding model
             (docs/operations/embedding-model.md)
  recallmesh jobs list|retry|drop   embedding jobs parked after repeated failures of their text
  recallmesh store / update / get / delete / delete-namespace / namespaces / recall /
             context / list / count / history / export / import / delete-matching   client
             commands (gateway)
  recallmesh mcp [--transport stdio|http]   the MCP server for agents (docs/mcp.md)
  recallmesh http                   the HTTP/JSON API, a front of the gateway (docs/http.md)
  recallmesh keys create|list|revoke   API keys (docs/cli.md)

Client commands use --target (env RECALLMESH_TARGET, default localhost:50051), take --json,
and go through the typed client (recallmesh.client). docs/cli.md has every command.
"""


from __future__ import annotations

import argparse
import os

import grpc
from rich.text import Text

from recallmesh.cli import admin, keys, listing, memories, recall, stack, transfer
from recallmesh.cli.common import ClientCommands
from recallmesh.cli.output import err_console
from recallmesh.client.errors import RecallmeshError
from recallmesh.client.jsonl import InputError
from recallmesh.wire.channel import DEFAULT_TARGET


def build_parser() -> argparse.ArgumentParser:
    """The `recallmesh` parser: each command group adds its commands, in the order
    `recallmesh --help` lists them."""
    parser = argparse.ArgumentParser(prog="recallmesh", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    target = os.environ.get("RECALLMESH_TARGET", DEFAULT_TARGET)
    client = ClientCommands(sub, target)

    stack.add_up(sub)
    recall.add_settings(sub)
    stack.add_serve(sub)
    stack.add_migrate(sub)
    admin.add_fetch_model(sub)
    admin.add_reembed(sub)
    admin.add_jobs(sub)
    memories.add_store(client)
    memories.add_update(client)
    memories.add_get(client)
    memories.add_delete(client)
    listing.add_delete_namespace(client)
    listing.add_namespaces(client)
    recall.add_recall(client)
    recall.add_context(client)
    listing.add_list_and_count(client)
    memories.add_history(client)
    transfer.add_export(client)
    transfer.add_import(client)
    listing.add_delete_matching(client)
    stack.add_mcp(sub, target)
    stack.add_console(sub, target)
    stack.add_http(sub, target)
    keys.add_keys(sub, target)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code: int = args.func(args)
        return code
    except InputError as exc:
        _error("error", str(exc))
        return 2
    except grpc.RpcError as exc:  # the KeyService commands' stubs
        _error(exc.code().name, exc.details())
        return 1
    except RecallmeshError as exc:
        _error(exc.code.name, exc.details)
        return 1


def _error(label: str, message: str) -> None:
    """`label: message` on stderr, one line where stderr is not a terminal; the message is
    plain text (never read as markup)."""
    err_console.print(Text(f"{label}:", style="red"), Text(message), highlight=False)
