"""Running things: up (the whole stack, optionally with the demo memories), serve (one
service, as a container runs it), migrate, mcp (the MCP server for agents) and console (the
web console)."""

from __future__ import annotations

import argparse
import os
import signal
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from rich.table import Table
from rich.text import Text

from recallmesh.cli.common import Subcommands
from recallmesh.cli.output import console, err_console, print_recall
from recallmesh.cli.transfer import import_memories
from recallmesh.client.errors import RecallmeshError
from recallmesh.client.jsonl import InputError, read_jsonl
from recallmesh.shared.services import BY_NAME
from recallmesh.shared.settings import ConfigError
from recallmesh.stack.demo import DEMO_FILE, DEMO_NAMESPACE, DEMO_QUERY
from recallmesh.wire.filters import not_deleted


def add_up(sub: Subcommands[argparse.ArgumentParser]) -> None:
    up = sub.add_parser("up", help="start the whole stack and serve until Ctrl-C")
    up.add_argument("--demo", action="store_true", help="load the demo memories (namespace demo)")
    up.add_argument("--timeout", type=float, default=60.0, help="seconds to wait per service")
    up.add_argument("--console-port", type=int,
                    default=int(os.environ.get("RECALLMESH_CONSOLE_PORT", "8080")),
                    help="the web console's port on localhost (env RECALLMESH_CONSOLE_PORT, "
                         "default 8080; docs/console.md)")
    up.add_argument("--no-console", action="store_true",
                    help="do not start the web console")
    up.add_argument("--http-port", type=int,
                    default=int(os.environ.get("RECALLMESH_HTTP_PORT", "8081")),
                    help="the HTTP/JSON API's port on localhost (env RECALLMESH_HTTP_PORT, "
                         "default 8081; docs/http.md)")
    up.add_argument("--no-http", action="store_true", help="do not start the HTTP/JSON API")
    up.set_defaults(func=cmd_up)


def add_serve(sub: Subcommands[argparse.ArgumentParser]) -> None:
    serve = sub.add_parser("serve", help="run one service in the foreground (containers: one "
                           "service per container)")
    serve.add_argument("service", choices=list(BY_NAME))
    serve.set_defaults(func=cmd_serve)


def add_migrate(sub: Subcommands[argparse.ArgumentParser]) -> None:
    migrate = sub.add_parser("migrate", help="apply database migrations")
    migrate.set_defaults(func=cmd_migrate)


def add_mcp(sub: Subcommands[argparse.ArgumentParser], target: str) -> None:
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


def _front_options(parser: argparse.ArgumentParser, target: str, env: str, port: int,
                   metrics_port: int) -> None:
    """The options every HTTP front of the gateway takes (the console, the HTTP/JSON API):
    the gateway, the address and port, the metrics port; `env`: its variables' prefix."""
    parser.add_argument("--target", default=None, help=f"gateway address (env "
                        f"RECALLMESH_TARGET, default {target})")
    parser.add_argument("--host", default=None, help=f"address to listen on (env "
                        f"RECALLMESH_{env}_HOST, default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=None,
                        help=f"port (env RECALLMESH_{env}_PORT, default {port})")
    parser.add_argument("--metrics-port", type=int, default=None,
                        help=f"Prometheus /metrics port, 0: none (env "
                             f"RECALLMESH_{env}_METRICS_PORT, default {metrics_port})")


def add_http(sub: Subcommands[argparse.ArgumentParser], target: str) -> None:
    http = sub.add_parser("http", help="serve the HTTP/JSON API, a front of the gateway "
                          "(docs/http.md)")
    _front_options(http, target, "HTTP", 8081, 9459)
    http.set_defaults(func=cmd_http)


def cmd_http(args: argparse.Namespace) -> int:
    try:
        from recallmesh.http_api.server import run
        from recallmesh.http_api.settings import HttpSettings
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] in ("starlette", "uvicorn"):
            raise InputError("the HTTP/JSON API needs the http extra: pip install "
                             "'recallmesh[http]'") from None
        raise
    try:
        settings = HttpSettings.from_env()
        given = {"target": args.target, "host": args.host, "port": args.port,
                 "metrics_port": args.metrics_port}
        settings = replace(settings, **{k: v for k, v in given.items() if v is not None})
    except ConfigError as exc:
        raise InputError(f"bad configuration: {exc}") from None
    return run(settings)


def add_console(sub: Subcommands[argparse.ArgumentParser], target: str) -> None:
    console_ = sub.add_parser("console", help="serve the web console, a client of the "
                              "gateway (docs/console.md)")
    _front_options(console_, target, "CONSOLE", 8080, 9458)
    console_.add_argument("--show-sensitive", action="store_true", default=None,
                          help="show the text of sensitive memories (env "
                               "RECALLMESH_CONSOLE_SHOW_SENSITIVE=true; default: withheld)")
    console_.add_argument("--auto-sign-in-key-file", default=None, metavar="PATH",
                          help="sign browsers on this machine (loopback) in with the API key "
                               "in this file (env RECALLMESH_CONSOLE_AUTO_SIGN_IN_KEY_FILE)")
    console_.set_defaults(func=cmd_console)


def cmd_serve(args: argparse.Namespace) -> int:
    """One service in the foreground (what a container runs): the same entry point as
    `python -m <its module>`; SIGTERM drains it and exits 0."""
    import runpy

    runpy.run_module(BY_NAME[args.service].module, run_name="__main__", alter_sys=True)
    return 0


def cmd_migrate(args: argparse.Namespace) -> int:
    from recallmesh.stack.processes import StackError
    from recallmesh.stack.supervisor import Stack

    stack = Stack()
    try:
        stack.start_database()
    except StackError as exc:
        raise InputError(str(exc)) from None
    finally:
        stack.stop()
    console.print("schema is up to date")
    console.print(f"lexical BM25: {bm25_source(stack.bm25_engine)}")
    return 0


def bm25_source(engine: str) -> str:
    """Where the lexical leg's BM25 comes from, said for a person (docs/decisions/0018)."""
    if engine.startswith("sql"):
        return f"the SQL statements over the postings {engine.removeprefix('sql').strip()}"
    if os.environ.get("RECALLMESH_LEXICAL_BM25_INDEX", "").strip() == "off":
        return f"the SQL statements over the postings ({engine} there, not used: " \
               "RECALLMESH_LEXICAL_BM25_INDEX=off)"
    return f"the {engine} index for questions with common words, the SQL statements otherwise"


def cmd_mcp(args: argparse.Namespace) -> int:
    try:
        from recallmesh.mcp_server import run
    except ModuleNotFoundError as exc:
        if exc.name == "mcp" or (exc.name or "").startswith("mcp."):
            raise InputError("the MCP server needs the mcp extra: pip install "
                             "'recallmesh[mcp]'") from None
        raise
    return run(args)


def cmd_console(args: argparse.Namespace) -> int:
    try:
        from recallmesh.console.server import run
        from recallmesh.console.settings import ConsoleSettings
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] in ("starlette", "uvicorn", "jinja2", "multipart"):
            raise InputError("the console needs the console extra: pip install "
                             "'recallmesh[console]'") from None
        raise
    try:
        settings = ConsoleSettings.from_env()
        given = {"target": args.target, "host": args.host, "port": args.port,
                 "metrics_port": args.metrics_port, "show_sensitive": args.show_sensitive,
                 "auto_sign_in_key_file": args.auto_sign_in_key_file
                 and Path(args.auto_sign_in_key_file)}
        settings = replace(settings, **{k: v for k, v in given.items() if v is not None})
    except ConfigError as exc:
        raise InputError(f"bad configuration: {exc}") from None
    return run(settings)


def _load_demo(stack: Any) -> None:
    import psycopg

    with psycopg.connect(stack.dsn) as conn:
        row = conn.execute(
            f"SELECT count(*) FROM memories WHERE namespace = %s AND {not_deleted()}",
            (DEMO_NAMESPACE,),
        ).fetchone()
    present = row[0] if row is not None else 0  # count(*) answers one row
    with stack.client() as client:
        if present:
            console.print(f"demo namespace already holds {present} memories; not loading again")
        else:
            ids, _ = import_memories(client, DEMO_NAMESPACE, read_jsonl(DEMO_FILE), 100,
                                     wait_index=True)
            console.print(f"loaded {len(ids)} demo memories into namespace {DEMO_NAMESPACE!r}")
        console.print(f"\nexample: recallmesh recall --namespace demo {DEMO_QUERY!r}")
        result = client.recall(DEMO_QUERY, namespace=DEMO_NAMESPACE, k=5, timeout=10)
        print_recall(result, explain=False)


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
    from recallmesh.stack.processes import StackError
    from recallmesh.stack.restarts import RestartPolicy
    from recallmesh.stack.supervisor import Stack

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
        console.print(f"lexical BM25: {bm25_source(stack.bm25_engine)}")
        console.print(f"logs: {stack.data_dir / 'logs'}")
        _print_local_key(stack)
        if not args.no_console:
            try:
                metrics_port = int(os.environ.get("RECALLMESH_CONSOLE_METRICS_PORT", "9458"))
                url = stack.start_console(args.console_port, metrics_port)
                console.print(f"console: {url} (signs this machine's browser in with the local "
                              "admin key)" if stack.api_key else f"console: {url}")
            except StackError as exc:
                err_console.print(Text("console not started: ", style="yellow"),
                                  Text(str(exc)), sep="")
        if not args.no_http:
            try:
                metrics_port = int(os.environ.get("RECALLMESH_HTTP_METRICS_PORT", "9459"))
                url = stack.start_http(args.http_port, metrics_port)
                console.print(f"HTTP/JSON API: {url} (the same API keys; {url}/openapi.json)")
            except StackError as exc:
                err_console.print(Text("HTTP/JSON API not started: ", style="yellow"),
                                  Text(str(exc)), sep="")
        if args.demo:
            try:
                _load_demo(stack)
            except (RecallmeshError, InputError) as exc:  # serve anyway; say what failed
                err_console.print(Text("demo memories not loaded: ", style="yellow"),
                                  Text(str(exc)), sep="")
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
