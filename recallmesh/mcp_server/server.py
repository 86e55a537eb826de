"""The MCP server: recallmesh's memory as nine tools for an agent, over stdio or streamable
HTTP (docs/mcp.md). This module builds the server (its instructions, the tools of tools.py,
a tool's invalid arguments said plainly) and serves it on either transport (`run`).

Every tool works in the one namespace the server was started with (--namespace or
RECALLMESH_MCP_NAMESPACE); no tool takes a namespace, so a model cannot reach another.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from types import MethodType
from typing import Any

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import ValidationError

from recallmesh.client import DEFAULT_TARGET, AsyncClient
from recallmesh.mcp_server.auth import BearerChallenge, ClientPool, GatewayTokenVerifier
from recallmesh.mcp_server.filters import MemoryFilters
from recallmesh.mcp_server.tools import TOOLS, ClientSource, ToolState
from recallmesh.shared.credentials import client_api_key
from recallmesh.shared.errors import InvalidArgument
from recallmesh.shared.logs import configure_logging
from recallmesh.shared.settings import ConfigError, env_bool, env_str
from recallmesh.wire import validation
from recallmesh.wire.health import GatewayHealth

log = logging.getLogger("recallmesh.mcp")

INSTRUCTIONS = """\
recallmesh is your long-term memory of this user and their work: facts, preferences and \
decisions that outlive the conversation. Everything you store or find lives in one \
namespace fixed by the server's configuration.

Recall before you answer. When a question may depend on the past (the user's preferences, \
people, projects, earlier decisions, "what did we decide", "do you remember", advice that \
should fit the user), call `recall` (ranked memories with ids) or `context` (a ready-to-read \
block within a token budget) first. Ask in natural language; search is by meaning and by \
words.

Store what lasts. When the user states a durable fact about themselves or their project, a \
preference, or a decision, call `store_memory`: one self-contained fact per memory, written \
to make sense on its own later (name people and things: "Maya prefers Svelte over React", \
not "she likes it"). Do not store chit-chat, greetings, one-off task state, your own \
reasoning, or something already stored (recall first when unsure).

Keep it current. When a fact changes, store the new one with `supersedes` set to the old \
memory's id, so recall ranks the new one first and the old one is kept as history. Use \
`update_memory` to fix a memory's wording, labels, metadata, thread, expiry or pin, and \
`forget` when the user asks you to forget something or a memory is wrong (it removes it for \
good).

Pin (`pinned`) only the few memories that belong in every answer: who the user is, standing \
instructions. Pinned memories always come first in `context`, whatever the question.

To review what is stored rather than search it ("what do you know about me?", a clean-up), \
use `list_memories` and `count_memories` with filters (category, tags, thread, metadata, \
importance, dates); `memory_history` shows how a memory changed and what it relates to.

Mark secrets, credentials, health and financial details `sensitive`: they are found only by \
their exact words and never embedded. Unless this server is configured to show them, a \
sensitive memory that matches is named by its id with its text withheld, and left out of \
`context`."""

# what pydantic names a union's members in an error's location (an optional parameter is
# `T | None`; a model member by its class name): not a field, so not said
_MEMBER_TAGS = {"none", "str", "int", "float", "bool", "list", "dict", "datetime",
                MemoryFilters.__name__}


def plain_validation(exc: ValidationError) -> str:
    """A tool's arguments that failed validation, as one plain sentence naming each field
    (`filters.importance_min should be less than or equal to 1`): no pydantic types, values
    or links. A field given a value of the wrong type fails both members of its optional
    union; only the member that is not None is said."""
    found: list[tuple[str, str, str]] = []
    for error in exc.errors(include_url=False, include_input=False):
        path = [str(p) for p in error["loc"]
                if not (isinstance(p, str) and (p in _MEMBER_TAGS or "-" in p or "[" in p))]
        message = {"extra_forbidden": "is not a field this tool takes",
                   "missing": "is required"}.get(error["type"], "")
        if not message:
            message = str(error["msg"]) or "Input is not valid"
            message = (message[0].lower() + message[1:]).removeprefix("input ")
        found.append((".".join(path) or "the arguments", error["type"], message))
    said: dict[str, str] = {}
    for field, kind, message in found:
        if kind == "none_required" and any(
                f == field and k != kind or f.startswith(field + ".") for f, k, _ in found):
            continue  # the optional union's None member: the other member says what is wrong
        said.setdefault(field, message)
    return "; ".join(f"{field} {message}" for field, message in said.items())


class _Server(MCPServer):
    """The SDK's server, with a tool's invalid arguments said in one plain sentence
    (plain_validation) instead of pydantic's report with its links."""

    async def call_tool(self, name: str, arguments: dict[str, Any],
                        context: Any = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError) and type(exc) is ToolError:
                raise ToolError(f"INVALID_ARGUMENT: {plain_validation(cause)}") from cause
            raise


def build_server(namespace: str, source: ClientSource, *, show_sensitive: bool = False,
                 token_verifier: Any = None, auth: AuthSettings | None = None) -> MCPServer:
    """The MCPServer with its nine tools (tools.TOOLS), each calling the gateway through
    `source` in `namespace`. Sensitive memories' text reaches the model only with
    `show_sensitive` (the operator's setting, --show-sensitive /
    RECALLMESH_MCP_SHOW_SENSITIVE): no tool argument can turn it on."""
    server: MCPServer = _Server(
        name="recallmesh", title="recallmesh memory", instructions=INSTRUCTIONS,
        version=_version(), token_verifier=token_verifier, auth=auth)
    state = ToolState(source, show_sensitive)
    for spec in TOOLS:  # each tool's function, its state bound (the schema: the rest)
        server.add_tool(MethodType(spec.fn, state), name=spec.name, title=spec.title,
                        description=spec.description, annotations=spec.annotations)
    return server


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("recallmesh")
    except PackageNotFoundError:  # pragma: no cover - a source tree without metadata
        return "0"


# --------------------------------------------------------------------------- transports


class _ConfiguredClient:
    """stdio: one client with this process's credential (RECALLMESH_API_KEY, else the local
    admin key file), made on first use inside the server's event loop."""

    def __init__(self, target: str, namespace: str) -> None:
        self.target = target
        self.namespace = namespace
        self.client: AsyncClient | None = None

    async def __call__(self) -> AsyncClient:
        if self.client is None:
            self.client = AsyncClient(self.target, namespace=self.namespace, tls=None)
        return self.client

    async def aclose(self) -> None:
        if self.client is not None:
            await self.client.close()


class _CallerClient:
    """http: the client carrying the calling request's own bearer token."""

    def __init__(self, pool: ClientPool) -> None:
        self.pool = pool

    async def __call__(self) -> AsyncClient:
        access = get_access_token()
        if access is None:  # the SDK's RequireAuthMiddleware lets no such request through
            raise ToolError("UNAUTHENTICATED: this request carried no bearer token")
        return self.pool.get(access.token)


async def serve_stdio(namespace: str, target: str | None, show_sensitive: bool = False) -> None:
    source = _ConfiguredClient(target or _default_target(), namespace)
    server = build_server(namespace, source, show_sensitive=show_sensitive)
    log.info("serving MCP over stdio (namespace %r, gateway %s)", namespace, source.target)
    if not client_api_key():
        log.warning("no credential: set RECALLMESH_API_KEY (or run `recallmesh up`, which "
                    "writes the local admin key); the gateway will refuse every call")
    try:
        await server.run_stdio_async()
    finally:
        await source.aclose()


async def serve_http(namespace: str, target: str | None, host: str, port: int,
                     show_sensitive: bool = False) -> bool:
    """Serve streamable HTTP at http://host:port/mcp until stopped; False when it could not
    start (e.g. the port is taken)."""
    import uvicorn

    pool = ClientPool(target or _default_target(), namespace)
    url = f"http://{_url_host(host)}:{port}"
    auth = AuthSettings(
        issuer_url=url,  # type: ignore[arg-type]  # pydantic validates the str into AnyHttpUrl
        resource_server_url=None, validate_token_resource=False)
    verifier = GatewayTokenVerifier(pool)
    server = build_server(namespace, _CallerClient(pool), show_sensitive=show_sensitive,
                          token_verifier=verifier, auth=auth)
    health = GatewayHealth(pool.target)
    server.custom_route("/healthz", methods=["GET"], include_in_schema=False)(health.healthz)
    server.custom_route("/readyz", methods=["GET"], include_in_schema=False)(health.readyz)
    app = BearerChallenge(server.streamable_http_app(host=host), verifier)
    config = uvicorn.Config(app, host=host, port=port, log_config=None, lifespan="on",
                            loop="asyncio")
    http = uvicorn.Server(config)
    log.info("serving MCP over streamable HTTP at %s/mcp (namespace %r, gateway %s)", url,
             namespace, pool.target)
    try:
        await http.serve()
    finally:
        await pool.aclose()
        await health.aclose()
    return http.started


def _default_target() -> str:
    return env_str("RECALLMESH_TARGET", DEFAULT_TARGET)


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def run(args: argparse.Namespace) -> int:
    """`recallmesh mcp`: serve until the client goes (stdio) or Ctrl-C (http)."""
    try:
        namespace = validation.namespace(args.namespace or "")
    except InvalidArgument as exc:
        print(f"recallmesh mcp: {exc.message}: give --namespace NS or set "
              "RECALLMESH_MCP_NAMESPACE", file=sys.stderr)
        return 2
    if getattr(args, "show_sensitive", None) is None:
        try:
            args.show_sensitive = env_bool("RECALLMESH_MCP_SHOW_SENSITIVE", False)
        except ConfigError as exc:
            print(f"recallmesh mcp: {exc}", file=sys.stderr)
            return 2
    configure_logging("mcp")  # stderr only: on stdio, stdout is the protocol
    try:
        if args.transport == "http":
            # uvicorn stops on SIGINT / SIGTERM, then raises the signal again once it has
            # stopped: ignored here, so the clients are closed and the exit status is 0.
            previous = signal.signal(signal.SIGTERM, lambda *_: None)
            try:
                started = asyncio.run(serve_http(namespace, args.target, args.host, args.port,
                                                 args.show_sensitive))
            finally:
                signal.signal(signal.SIGTERM, previous)
            return 0 if started else 1
        asyncio.run(serve_stdio(namespace, args.target, args.show_sensitive))
    except KeyboardInterrupt:
        pass
    except SystemExit as exc:  # uvicorn's exit when it cannot start (e.g. the port is taken)
        return exc.code if isinstance(exc.code, int) else 1
    return 0
