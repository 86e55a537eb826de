"""The MCP server: recallmesh's memory as nine tools for an agent, over stdio or streamable
HTTP (docs/mcp.md).

Every tool works in the one namespace the server was started with (--namespace or
RECALLMESH_MCP_NAMESPACE); no tool takes a namespace, so a model cannot reach another.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Literal, Protocol

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import AwareDatetime, Field, ValidationError

from recallmesh.client import DEFAULT_TARGET, AsyncClient, RecallmeshError
from recallmesh.mcp_server import results
from recallmesh.mcp_server.auth import BearerChallenge, ClientPool, GatewayTokenVerifier
from recallmesh.mcp_server.filters import FiltersArg, Maybe, MemoryFilters, filter_options
from recallmesh.shared.credentials import client_api_key
from recallmesh.shared.errors import InvalidArgument
from recallmesh.shared.logs import configure_logging
from recallmesh.shared.settings import ConfigError, env_bool, env_str
from recallmesh.wire import validation
from recallmesh.wire.health import GatewayHealth

log = logging.getLogger("recallmesh.mcp")

STORE_WAIT_S = 20.0  # at most: a stored memory is searchable by meaning when store_memory returns
MAX_K = 50
MAX_PAGE = 100  # list_memories: a page a model can read

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

Category = Literal["fact", "preference", "decision", "note"]

MemoryId = Annotated[str, Field(
    description="The memory's id: the UUID shown in [brackets] by recall and store_memory",
    min_length=1, max_length=64)]
Content = Annotated[str, Field(
    description="One self-contained fact, preference or decision, written to make sense "
                "on its own later: name the people and things it is about (\"Maya's team "
                "deploys on Fridays\", not \"they deploy then\"). One fact per memory.",
    min_length=1, max_length=16000)]
CategoryArg = Annotated[Category, Field(
    description="fact: something true about the user, a person or a project; preference: "
                "what the user likes, dislikes or wants done a certain way; decision: "
                "something agreed or chosen (and why); note: anything else worth keeping")]
Tags = Annotated[list[str], Field(
    description="A few short lowercase topic words, e.g. [\"frontend\", \"maya\"] (at most "
                "32); recall can filter by them", max_length=32)]
Importance = Annotated[float, Field(
    description="0..1: 0.5 for ordinary memories, 0.8 or more for what must not be "
                "forgotten (allergies, hard constraints, deadlines), 0.2 for trivia",
    ge=0.0, le=1.0)]
Sensitive = Annotated[bool, Field(
    description="True for secrets, credentials, health, finances or anything private: "
                "never embedded, found only by its exact words, its text withheld from "
                "recall and context unless the server is configured to show it")]
Thread = Annotated[str, Field(
    description="Optional: the conversation or session it came from", max_length=256)]
Metadata = Annotated[dict[str, str], Field(
    description="Free-form key/value strings (at most 64 entries), e.g. {\"source\": "
                "\"email\", \"project\": \"atlas\"}; list_memories, count_memories, recall "
                "and context can filter by them", max_length=64)]
Pinned = Annotated[bool, Field(
    description="True only for the few memories that belong in every answer (who the user "
                "is, standing instructions): always in context, first, whatever the question")]
Supersedes = Annotated[list[str], Field(
    description="Ids of memories this one replaces, when a fact changed (\"Maya moved from "
                "Berlin to Lisbon\": pass the Berlin memory's id). They stay as history; "
                "recall ranks this one first", max_length=32)]
Query = Annotated[str, Field(
    description="What you want to know, in natural language (the user's question works "
                "well); matched by meaning and by words", min_length=1, max_length=4096)]


class ClientSource(Protocol):
    async def __call__(self) -> AsyncClient: ...


def _deprecated(schema: dict[str, Any]) -> None:
    """An optional parameter (Maybe) marked deprecated in the tool's schema only: pydantic's
    own deprecated= warns on every read of the argument."""
    if "default" in schema and schema["default"] is None:
        del schema["default"]
    schema["deprecated"] = True


def _tool_error(exc: Exception) -> ToolError:
    if isinstance(exc, RecallmeshError):
        return ToolError(f"{exc.code.name}: {exc.details}")
    return ToolError(f"INVALID_ARGUMENT: {exc}")


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


async def _call(source: ClientSource, call: Callable[[AsyncClient], Awaitable[Any]]) -> Any:
    """Run one gateway call; a refusal becomes the tool's error (status name and message)."""
    try:
        return await call(await source())
    except (RecallmeshError, ValueError) as exc:
        raise _tool_error(exc) from None


def build_server(namespace: str, source: ClientSource, *, show_sensitive: bool = False,
                 token_verifier: Any = None, auth: AuthSettings | None = None) -> MCPServer:
    """The MCPServer with its nine tools, each calling the gateway through `source` in
    `namespace`. Sensitive memories' text reaches the model only with `show_sensitive` (the
    operator's setting, --show-sensitive / RECALLMESH_MCP_SHOW_SENSITIVE): no tool argument
    can turn it on."""
    server: MCPServer = _Server(
        name="recallmesh", title="recallmesh memory", instructions=INSTRUCTIONS,
        version=_version(), token_verifier=token_verifier, auth=auth)
    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    @server.tool(
        name="store_memory", title="Store a memory",
        description=(
            "Save one durable fact, preference or decision about the user or their work to "
            "long-term memory, so you can recall it in later conversations. Store when the "
            "user tells you something that will still matter later; not chit-chat, one-off "
            "task details, or what is already stored. One fact per memory. When it replaces "
            "an earlier memory (the fact changed), pass that memory's id in supersedes. "
            "Returns the new memory's id."),
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False,
                                    idempotent_hint=False, open_world_hint=False))
    async def store_memory(
        content: Content,
        category: CategoryArg = "fact",
        *,
        tags: Annotated[Tags, Field(default_factory=list)],
        importance: Importance = 0.5,
        sensitive: Sensitive = False,
        thread: Thread = "",
        metadata: Annotated[Metadata, Field(default_factory=dict)],
        pinned: Pinned = False,
        supersedes: Annotated[Supersedes, Field(default_factory=list)],
    ) -> Annotated[CallToolResult, results.StoredOut]:
        result = await _call(source, lambda c: c.store(
            content, category=category, tags=tags, importance=importance, sensitive=sensitive,
            thread=thread, metadata=metadata, pinned=pinned, supersedes=supersedes,
            wait_indexed=STORE_WAIT_S))
        return results.stored(result)

    @server.tool(
        name="recall", title="Recall memories",
        description=(
            "Search long-term memory for what is relevant to a question, best first. Call it "
            "before answering anything that may depend on the user's past, preferences, "
            "people, projects or earlier decisions, and before storing something that may "
            "already be there. Narrow it with filters (category, tags, thread, metadata, "
            "importance, dates) when the question is about a known subset. Returns one line "
            "per memory: [id] content (category, score); a superseded memory is marked so (a "
            "newer one replaced it), a sensitive one may have its text withheld."),
        annotations=read_only)
    async def recall(
        query: Query,
        k: Annotated[int, Field(description=f"How many memories at most (1..{MAX_K})",
                                ge=1, le=MAX_K)] = 8,
        filters: FiltersArg = None,
        categories: Annotated[Maybe[list[str]], Field(
            description="Only these categories: the same as filters.categories (kept for "
                        "earlier callers)", json_schema_extra=_deprecated)] = None,
        tags: Annotated[Maybe[list[str]], Field(
            description="Only memories with at least one of these tags: the same as "
                        "filters.tags (kept for earlier callers)",
            json_schema_extra=_deprecated)] = None,
    ) -> Annotated[CallToolResult, results.RecallOut]:
        result = await _call(source, lambda c: c.recall(query, k=k, **filter_options(
            filters, categories=categories, tags=tags)))
        return results.recalled(result, query, show_sensitive)

    @server.tool(
        name="context", title="Memory context for a prompt",
        description=(
            "The memories most relevant to a question as one compact block of text, packed "
            "into a token budget: read it before answering questions about the user's past, "
            "preferences or decisions. Like recall, but ready to read (no scores); pinned "
            "memories come first whatever the question. Use recall instead when you need "
            "memory ids."),
        annotations=read_only)
    async def context(
        query: Query,
        max_tokens: Annotated[int, Field(description="Token budget of the block (16..32768)",
                                         ge=16, le=32768)] = 1000,
        filters: FiltersArg = None,
    ) -> Annotated[CallToolResult, results.ContextOut]:
        result = await _call(source, lambda c: c.context(
            query, max_tokens=max_tokens, include_sensitive=show_sensitive,
            **filter_options(filters)))
        return results.context_block(result)

    @server.tool(
        name="get_memory", title="Get a memory",
        description="Fetch one memory by id, with all its fields.", annotations=read_only)
    async def get_memory(id: MemoryId) -> Annotated[CallToolResult, results.MemoryOut]:
        return results.got(await _call(source, lambda c: c.get(id)), show_sensitive)

    @server.tool(
        name="update_memory", title="Update a memory",
        description=(
            "Correct a memory in place: give its id and only the fields to change (the rest "
            "stay as they are; the state it replaces is kept, see memory_history). Use it to "
            "fix wording, labels, importance, sensitivity, metadata, thread, validity, "
            "expiry or pinning. When a fact itself changed (the user moved, changed their "
            "mind), store a new memory with supersedes instead, which keeps the history."),
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True,
                                    idempotent_hint=True, open_world_hint=False))
    async def update_memory(
        id: MemoryId,
        content: Annotated[Maybe[Content], Field(description="New text")] = None,
        category: Annotated[Maybe[Category], Field(description="New category")] = None,
        tags: Annotated[Maybe[Annotated[list[str], Field(max_length=32)]], Field(
            description="New tags (replace the old ones; [] removes them)")] = None,
        importance: Annotated[Maybe[Annotated[float, Field(ge=0.0, le=1.0)]], Field(
            description="New importance, 0..1")] = None,
        sensitive: Annotated[Maybe[bool], Field(description="New sensitivity")] = None,
        metadata: Annotated[Maybe[Annotated[dict[str, str], Field(max_length=64)]], Field(
            description="New metadata (replaces all of it; {} removes it)")] = None,
        thread: Annotated[Maybe[Annotated[str, Field(max_length=256)]], Field(
            description="New thread (\"\" removes it)")] = None,
        valid_from: Annotated[Maybe[AwareDatetime], Field(
            description="When the fact became true (ISO 8601 with a timezone)")] = None,
        valid_to: Annotated[Maybe[AwareDatetime], Field(
            description="When the fact stopped being true (ISO 8601 with a timezone); a past "
                        "time ends it, as superseding does")] = None,
        expires_at: Annotated[Maybe[AwareDatetime | Literal["never"]], Field(
            description="When the memory expires and is removed (a future ISO 8601 time "
                        "with a timezone), or \"never\" to keep it for good")] = None,
        pinned: Annotated[Maybe[bool], Field(
            description="Pin it (always in context, first) or unpin it")] = None,
    ) -> Annotated[CallToolResult, results.StoredOut]:
        given = {"content": content, "category": category, "tags": tags,
                 "importance": importance, "sensitive": sensitive, "metadata": metadata,
                 "thread": thread, "valid_from": valid_from, "valid_to": valid_to,
                 "expires_at": expires_at, "pinned": pinned}
        fields: dict[str, Any] = {name: value for name, value in given.items()
                                  if value is not None}
        if not fields:
            raise ToolError("INVALID_ARGUMENT: give at least one field to change")
        if fields.get("expires_at") == "never":
            fields["expires_at"] = None  # named without a value: the memory no longer expires
        wait = STORE_WAIT_S if "content" in fields or "sensitive" in fields else False
        result = await _call(source, lambda c: c.update(
            id, wait_indexed=wait, **fields))
        return results.stored(result, verb="Updated")

    @server.tool(
        name="list_memories", title="List memories",
        description=(
            "Page through the stored memories that pass the filters, newest first by "
            "default, each with its whole text and labels: to review what you know (\"what "
            "do you remember about me?\"), a topic, thread or time span, or before a "
            "clean-up. Not a search: use recall to find what is relevant to a question. "
            "Returns up to page_size memories and a next_page_token for the next page."),
        annotations=read_only)
    async def list_memories(
        filters: FiltersArg = None,
        order_by: Annotated[Literal["created", "updated", "importance"], Field(
            description="created (default), updated or importance")] = "created",
        ascending: Annotated[bool, Field(
            description="Oldest / least important first (default: newest / most important "
                        "first)")] = False,
        page_size: Annotated[int, Field(description=f"Memories per page (1..{MAX_PAGE})",
                                        ge=1, le=MAX_PAGE)] = 20,
        page_token: Annotated[str, Field(
            description="Empty for the first page; then the next_page_token of the page "
                        "before, with the same filters and order", max_length=4096)] = "",
        include_deleted: Annotated[bool, Field(
            description="Also memories deleted (not forgotten): they carry deleted_at")
        ] = False,
        include_ended: Annotated[bool, Field(
            description="Also memories no longer current (superseded, or valid_to passed)")
        ] = False,
    ) -> Annotated[CallToolResult, results.PageOut]:
        page = await _call(source, lambda c: c.list(
            page_size=page_size, page_token=page_token, order_by=order_by, ascending=ascending,
            include_deleted=include_deleted, include_ended=include_ended,
            **filter_options(filters)))
        return results.listed(page, show_sensitive)

    @server.tool(
        name="count_memories", title="Count memories",
        description=(
            "How many stored memories pass the filters (the memories list_memories would "
            "return): e.g. how much is stored about a project or in a thread."),
        annotations=read_only)
    async def count_memories(
        filters: FiltersArg = None,
        include_deleted: Annotated[bool, Field(
            description="Also count memories deleted (not forgotten)")] = False,
        include_ended: Annotated[bool, Field(
            description="Also count memories no longer current (superseded, or valid_to "
                        "passed)")] = False,
    ) -> Annotated[CallToolResult, results.CountOut]:
        count = await _call(source, lambda c: c.count(
            include_deleted=include_deleted, include_ended=include_ended,
            **filter_options(filters)))
        return results.counted(count)

    @server.tool(
        name="memory_history", title="Memory history",
        description=(
            "How one memory changed and what it relates to: the memory now, each earlier "
            "version (what it said before, when, by whom, which fields each update changed) "
            "and its relations both ways (what it supersedes, what superseded it). Use it "
            "when the user asks what a memory used to say or why it changed."),
        annotations=read_only)
    async def memory_history(id: MemoryId) -> Annotated[CallToolResult, results.HistoryOut]:
        return results.history(await _call(source, lambda c: c.history(id)), show_sensitive)

    @server.tool(
        name="forget", title="Forget a memory",
        description=(
            "Remove a memory for good (with everything derived from it): when the user asks "
            "you to forget something, or a memory is wrong and should not be corrected. "
            "It cannot be undone."),
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True,
                                    idempotent_hint=True, open_world_hint=False))
    async def forget(id: MemoryId) -> Annotated[CallToolResult, results.ForgottenOut]:
        return results.forgotten(await _call(source, lambda c: c.forget(id)))

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
