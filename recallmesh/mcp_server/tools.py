"""The MCP server's nine tools, each a function at module level of the server's shared state
(`ToolState`: where a call's client comes from, whether sensitive text is shown) and the
arguments a model gives, and `TOOLS`, the one list build_server registers them from, in the
order a client lists them. A tool's name, title, description and hints are beside it
(`@tool`); its arguments' schema is its signature's (args.py, filters.py)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Protocol

from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import AwareDatetime, Field

from recallmesh.client import AsyncClient, RecallmeshError
from recallmesh.mcp_server import results
from recallmesh.mcp_server.args import (
    Category,
    CategoryArg,
    Content,
    Importance,
    MemoryId,
    Metadata,
    Pinned,
    Query,
    Sensitive,
    Supersedes,
    Tags,
    Thread,
)
from recallmesh.mcp_server.filters import FiltersArg, Maybe, filter_options

STORE_WAIT_S = 20.0  # at most: a stored memory is searchable by meaning when store_memory returns
MAX_K = 50
MAX_PAGE = 100  # list_memories: a page a model can read

READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)


class ClientSource(Protocol):
    async def __call__(self) -> AsyncClient: ...


@dataclass(frozen=True)
class ToolState:
    """What every tool reads besides its arguments: where the gateway client of a call comes
    from, and whether sensitive memories' text reaches the model (the operator's setting)."""

    source: ClientSource
    show_sensitive: bool = False

    async def call(self, call: Callable[[AsyncClient], Awaitable[Any]]) -> Any:
        """Run one gateway call; a refusal becomes the tool's error (status name and
        message)."""
        try:
            return await call(await self.source())
        except (RecallmeshError, ValueError) as exc:
            raise _tool_error(exc) from None


ToolFn = Callable[..., Awaitable[CallToolResult]]


@dataclass(frozen=True)
class ToolSpec:
    """A tool as the server lists it: its function (of ToolState first) and what it says."""

    fn: ToolFn
    name: str
    title: str
    description: str
    annotations: ToolAnnotations


def tool(*, name: str, title: str, description: str,
         annotations: ToolAnnotations) -> Callable[[ToolFn], ToolSpec]:
    def spec(fn: ToolFn) -> ToolSpec:
        return ToolSpec(fn, name, title, description, annotations)

    return spec


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


@tool(
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
    state: ToolState,
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
    result = await state.call(lambda c: c.store(
        content, category=category, tags=tags, importance=importance, sensitive=sensitive,
        thread=thread, metadata=metadata, pinned=pinned, supersedes=supersedes,
        wait_indexed=STORE_WAIT_S))
    return results.stored(result)


@tool(
    name="recall", title="Recall memories",
    description=(
        "Search long-term memory for what is relevant to a question, best first. Call it "
        "before answering anything that may depend on the user's past, preferences, "
        "people, projects or earlier decisions, and before storing something that may "
        "already be there. Narrow it with filters (category, tags, thread, metadata, "
        "importance, dates) when the question is about a known subset. Returns one line "
        "per memory: [id] content (category, score); a superseded memory is marked so (a "
        "newer one replaced it), a sensitive one may have its text withheld."),
    annotations=READ_ONLY)
async def recall(
    state: ToolState,
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
    result = await state.call(lambda c: c.recall(query, k=k, **filter_options(
        filters, categories=categories, tags=tags)))
    return results.recalled(result, query, state.show_sensitive)


@tool(
    name="context", title="Memory context for a prompt",
    description=(
        "The memories most relevant to a question as one compact block of text, packed "
        "into a token budget: read it before answering questions about the user's past, "
        "preferences or decisions. Like recall, but ready to read (no scores); pinned "
        "memories come first whatever the question. Use recall instead when you need "
        "memory ids."),
    annotations=READ_ONLY)
async def context(
    state: ToolState,
    query: Query,
    max_tokens: Annotated[int, Field(description="Token budget of the block (16..32768)",
                                     ge=16, le=32768)] = 1000,
    filters: FiltersArg = None,
) -> Annotated[CallToolResult, results.ContextOut]:
    result = await state.call(lambda c: c.context(
        query, max_tokens=max_tokens, include_sensitive=state.show_sensitive,
        **filter_options(filters)))
    return results.context_block(result)


@tool(
    name="get_memory", title="Get a memory",
    description="Fetch one memory by id, with all its fields.", annotations=READ_ONLY)
async def get_memory(state: ToolState,
                     id: MemoryId) -> Annotated[CallToolResult, results.MemoryOut]:
    return results.got(await state.call(lambda c: c.get(id)), state.show_sensitive)


@tool(
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
    state: ToolState,
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
    result = await state.call(lambda c: c.update(
        id, wait_indexed=wait, **fields))
    return results.stored(result, verb="Updated")


@tool(
    name="list_memories", title="List memories",
    description=(
        "Page through the stored memories that pass the filters, newest first by "
        "default, each with its whole text and labels: to review what you know (\"what "
        "do you remember about me?\"), a topic, thread or time span, or before a "
        "clean-up. Not a search: use recall to find what is relevant to a question. "
        "Returns up to page_size memories and a next_page_token for the next page."),
    annotations=READ_ONLY)
async def list_memories(
    state: ToolState,
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
    page = await state.call(lambda c: c.list(
        page_size=page_size, page_token=page_token, order_by=order_by, ascending=ascending,
        include_deleted=include_deleted, include_ended=include_ended,
        **filter_options(filters)))
    return results.listed(page, state.show_sensitive)


@tool(
    name="count_memories", title="Count memories",
    description=(
        "How many stored memories pass the filters (the memories list_memories would "
        "return): e.g. how much is stored about a project or in a thread."),
    annotations=READ_ONLY)
async def count_memories(
    state: ToolState,
    filters: FiltersArg = None,
    include_deleted: Annotated[bool, Field(
        description="Also count memories deleted (not forgotten)")] = False,
    include_ended: Annotated[bool, Field(
        description="Also count memories no longer current (superseded, or valid_to "
                    "passed)")] = False,
) -> Annotated[CallToolResult, results.CountOut]:
    count = await state.call(lambda c: c.count(
        include_deleted=include_deleted, include_ended=include_ended,
        **filter_options(filters)))
    return results.counted(count)


@tool(
    name="memory_history", title="Memory history",
    description=(
        "How one memory changed and what it relates to: the memory now, each earlier "
        "version (what it said before, when, by whom, which fields each update changed) "
        "and its relations both ways (what it supersedes, what superseded it). Use it "
        "when the user asks what a memory used to say or why it changed."),
    annotations=READ_ONLY)
async def memory_history(state: ToolState,
                         id: MemoryId) -> Annotated[CallToolResult, results.HistoryOut]:
    return results.history(await state.call(lambda c: c.history(id)), state.show_sensitive)


@tool(
    name="forget", title="Forget a memory",
    description=(
        "Remove a memory for good (with everything derived from it): when the user asks "
        "you to forget something, or a memory is wrong and should not be corrected. "
        "It cannot be undone."),
    annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True,
                                idempotent_hint=True, open_world_hint=False))
async def forget(state: ToolState,
                 id: MemoryId) -> Annotated[CallToolResult, results.ForgottenOut]:
    return results.forgotten(await state.call(lambda c: c.forget(id)))

TOOLS: tuple[ToolSpec, ...] = (store_memory, recall, context, get_memory, update_memory,
                               list_memories, count_memories, memory_history, forget)
