"""Integration: `recallmesh mcp` (docs/mcp.md) driven by the MCP SDK's own client, over stdio
and over streamable HTTP, against the session's real stack.

Each server process starts once per module; each client session lives on a thread of its
own with its own event loop (ClientThread), so the tests are plain functions."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx2
import jsonschema
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, TextContent

from recallmesh.mcp_server.auth import ClientPool, GatewayTokenVerifier
from recallmesh.stack.supervisor import Stack
from tests.helpers import api_key, image_healthcheck, store

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parents[2]
RECALLMESH = (sys.executable, "-m", "recallmesh.cli")
TOOLS = {"store_memory", "recall", "get_memory", "update_memory", "forget", "context",
         "list_memories", "count_memories", "memory_history"}
READ_ONLY = {"recall", "context", "get_memory", "list_memories", "count_memories",
             "memory_history"}
FILTERED = {"recall", "context", "list_memories", "count_memories"}
FILTER_NAMES = {"categories", "tags", "tags_all", "tags_none", "threads", "metadata",
                "importance_min", "importance_max", "created_after", "created_before",
                "updated_after", "updated_before", "as_of"}
UPDATABLE = {"content", "category", "tags", "importance", "sensitive", "metadata", "thread",
             "valid_from", "valid_to", "expires_at", "pinned"}
MAYA = "Maya's favourite frontend framework is Svelte; she finds React verbose"
PARAPHRASE = "which UI library does Maya like?"
# Each mentions Maya too: the paraphrase's one shared word does not pick the answer.
DISTRACTORS = (
    "Maya drinks a flat white every morning before standup",
    "Maya's team deploys the billing service on Fridays",
    "Maya moved from Berlin to Lisbon last spring",
)
CALL_TIMEOUT_S = 90.0


class ClientThread:
    """An MCP client session held open on a thread with its own event loop."""

    def __init__(self, open_client: Callable[[], contextlib.AbstractAsyncContextManager[Client]],
                 timeout: float = CALL_TIMEOUT_S) -> None:
        self.timeout = timeout
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self._ready: concurrent.futures.Future[Client] = concurrent.futures.Future()
        self._stop: asyncio.Event | None = None
        self._main = asyncio.run_coroutine_threadsafe(self._hold(open_client), self.loop)
        try:
            self.client = self._ready.result(timeout)
        except BaseException:
            self._shutdown_loop()
            raise

    async def _hold(self, open_client: Callable[[], Any]) -> None:
        self._stop = asyncio.Event()
        try:
            async with open_client() as client:
                self._ready.set_result(client)
                await self._stop.wait()
        except BaseException as exc:
            if not self._ready.done():
                self._ready.set_exception(exc)
            raise

    def run(self, make: Callable[[Client], Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(make(self.client), self.loop).result(self.timeout)

    def call(self, tool: str, arguments: dict[str, Any]) -> CallToolResult:
        result: CallToolResult = self.run(lambda c: c.call_tool(tool, arguments))
        return result

    def ok(self, tool: str, arguments: dict[str, Any]) -> CallToolResult:
        result = self.call(tool, arguments)
        assert not result.is_error, text(result)
        return result

    def tools(self) -> dict[str, Any]:
        return {t.name: t for t in self.run(lambda c: c.list_tools()).tools}

    def close(self) -> None:
        if self._stop is not None:
            self.loop.call_soon_threadsafe(self._stop.set)
        with contextlib.suppress(Exception):
            self._main.result(30)
        self._shutdown_loop()

    def _shutdown_loop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


def text(result: CallToolResult) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


def server_env(stack: Stack, data_dir: Path, **extra: str) -> dict[str, str]:
    """The MCP server's environment: the stack's gateway, no credential of its own (an
    empty data directory: no local key file) unless `extra` gives one."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("RECALLMESH_API_KEY", "RECALLMESH_MCP_NAMESPACE", "RECALLMESH_DSN")}
    data_dir.mkdir(parents=True, exist_ok=True)
    env.update(RECALLMESH_TARGET=stack.endpoints["gateway"], RECALLMESH_DATA_DIR=str(data_dir),
               RECALLMESH_LOG_FORMAT="text", **extra)
    return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def hit_ids(result: CallToolResult) -> list[str]:
    return [hit["memory"]["id"] for hit in result.structured_content["hits"]]


def listed_ids(result: CallToolResult) -> list[str]:
    return [memory["id"] for memory in result.structured_content["memories"]]


def remember_recall_forget(session: ClientThread) -> None:
    """The whole life of one memory through the tools: store, recall by a paraphrase,
    context, forget, gone."""
    for distractor in DISTRACTORS:
        session.ok("store_memory", {"content": distractor, "category": "fact"})
    stored = session.ok("store_memory", {"content": MAYA, "category": "preference",
                                         "tags": ["frontend", "maya"], "importance": 0.6})
    memory = stored.structured_content["memory"]
    memory_id = memory["id"]
    assert (memory["content"], memory["category"], memory["tags"]) == (
        MAYA, "preference", ["frontend", "maya"])
    assert stored.structured_content["indexed"] is True  # the tool waits for the index
    assert f"[{memory_id}]" in text(stored)

    recalled = session.ok("recall", {"query": PARAPHRASE, "k": 5})
    ids = hit_ids(recalled)
    assert ids and ids[0] == memory_id, text(recalled)
    scores = [hit["score"] for hit in recalled.structured_content["hits"]]
    # by a good margin (or alone: the others fell below the relevance floor)
    assert len(scores) == 1 or scores[0] > 2 * scores[1], text(recalled)
    first_line = text(recalled).splitlines()[0]
    assert first_line.startswith(f"1. [{memory_id}] {MAYA} (preference, score "), first_line

    context = session.ok("context", {"query": PARAPHRASE, "max_tokens": 200})
    assert MAYA in text(context)
    assert context.structured_content["ids"][0] == memory_id

    got = session.ok("get_memory", {"id": memory_id})
    assert got.structured_content["content"] == MAYA

    forgotten = session.ok("forget", {"id": memory_id})
    assert forgotten.structured_content == {
        "id": memory_id, "purged": True, "deleted_at": forgotten.structured_content["deleted_at"]}
    assert memory_id not in hit_ids(session.ok("recall", {"query": PARAPHRASE}))
    gone = session.call("get_memory", {"id": memory_id})
    assert gone.is_error and "NOT_FOUND" in text(gone), text(gone)


def check_tools(session: ClientThread) -> dict[str, Any]:
    tools = session.tools()
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert len(tool.description or "") > 40, tool.name
        assert tool.output_schema, tool.name
        assert "namespace" not in tool.input_schema.get("properties", {}), tool.name
        # valid JSON Schemas, objects at the root
        jsonschema.Draft202012Validator.check_schema(tool.input_schema)
        jsonschema.Draft202012Validator.check_schema(tool.output_schema)
        assert tool.input_schema["type"] == tool.output_schema["type"] == "object", tool.name
        assert bool(tool.annotations.read_only_hint) == (tool.name in READ_ONLY), tool.name
    check_new_schemas(tools)
    return tools


def check_new_schemas(tools: dict[str, Any]) -> None:
    """The filters are one shared definition, referenced by every tool that filters; the new
    tools' parameters are typed; update_memory names every field an Update can change."""
    for name in FILTERED:
        schema = tools[name].input_schema
        assert schema["properties"]["filters"]["$ref"] == "#/$defs/MemoryFilters", name
        filters = schema["$defs"]["MemoryFilters"]
        assert set(filters["properties"]) == FILTER_NAMES, name
        assert filters["additionalProperties"] is False
        assert filters["properties"]["as_of"] == {**filters["properties"]["as_of"],
                                                  "type": "string", "format": "date-time"}
        assert "filters" not in schema.get("required", []), name
        # an example call validates against the published schema; a misspelled one does not
        example: dict[str, Any] = {
            "filters": {"metadata": {"source": ["email", "chat"]}, "tags_all": ["a"],
                        "importance_min": 0.5, "as_of": "2026-01-01T00:00:00Z"}}
        if name in ("recall", "context"):
            example["query"] = "q"
        jsonschema.validate(example, schema)
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate({**example, "filters": {"tag": ["a"]}}, schema)
    listing = tools["list_memories"].input_schema["properties"]
    assert set(listing) == {"filters", "order_by", "ascending", "page_size", "page_token",
                            "include_deleted", "include_ended"}
    assert listing["order_by"]["enum"] == ["created", "updated", "importance"]
    assert (listing["page_size"]["minimum"], listing["page_size"]["maximum"]) == (1, 100)
    assert set(tools["count_memories"].input_schema["properties"]) == {
        "filters", "include_deleted", "include_ended"}
    assert tools["memory_history"].input_schema["required"] == ["id"]
    update = tools["update_memory"].input_schema
    assert set(update["properties"]) == {"id"} | UPDATABLE and update["required"] == ["id"]
    assert {"type": "string", "const": "never"} in update["properties"]["expires_at"]["anyOf"]
    store_schema = tools["store_memory"].input_schema["properties"]
    assert store_schema["pinned"]["type"] == "boolean"
    assert store_schema["metadata"]["additionalProperties"] == {"type": "string"}
    history_out = tools["memory_history"].output_schema
    assert {"memory", "versions", "relations"} <= set(history_out["properties"])
    assert {"intent", "time_window"} <= set(tools["recall"].output_schema["properties"])


# --------------------------------------------------------------------------- stdio


@pytest.fixture(scope="module")
def stdio_ns() -> str:
    return f"mcp-stdio-{uuid.uuid4().hex[:10]}"


@pytest.fixture(scope="module")
def stdio(stack: Stack, stdio_ns: str, tmp_path_factory: pytest.TempPathFactory
          ) -> Iterator[ClientThread]:
    folder = tmp_path_factory.mktemp("mcp-stdio")
    params = StdioServerParameters(
        command=RECALLMESH[0], args=[*RECALLMESH[1:], "mcp", "--namespace", stdio_ns],
        env=server_env(stack, folder / "data", RECALLMESH_API_KEY=stack.api_key), cwd=str(ROOT))
    with open(folder / "server.log", "w") as errlog:
        session = ClientThread(lambda: Client(stdio_client(params, errlog=errlog),
                                              read_timeout_seconds=CALL_TIMEOUT_S))
        yield session
        session.close()


def test_stdio_tools_and_instructions(stdio: ClientThread) -> None:
    tools = check_tools(stdio)
    assert "recall" in (stdio.client.instructions or "")
    store_schema = tools["store_memory"].input_schema
    assert store_schema["required"] == ["content"]
    assert store_schema["properties"]["category"]["enum"] == [
        "fact", "preference", "decision", "note"]
    assert tools["recall"].input_schema["properties"]["k"]["maximum"] == 50


def test_stdio_store_recall_context_forget(stdio: ClientThread) -> None:
    remember_recall_forget(stdio)


def test_stdio_sees_only_its_namespace(stdio: ClientThread, stdio_ns: str, gateway: Any) -> None:
    other = f"{stdio_ns}-other"
    secret = "Maya's favourite frontend framework in the other namespace is Angular"
    other_id = store(gateway, other, secret)
    mine = stdio.ok("store_memory", {"content": "Maya's favourite editor is Neovim",
                                     "category": "preference"})
    recalled = stdio.ok("recall", {"query": "Maya favourite frontend framework", "k": 50})
    assert other_id not in hit_ids(recalled) and "Angular" not in text(recalled)
    assert mine.structured_content["memory"]["id"] in hit_ids(recalled)
    context = stdio.ok("context", {"query": "Maya favourite frontend framework"})
    assert "Angular" not in text(context)
    got = stdio.call("get_memory", {"id": other_id})
    assert got.is_error and "NOT_FOUND" in text(got)
    history = stdio.call("memory_history", {"id": other_id})
    assert history.is_error and "NOT_FOUND" in text(history)
    listed = stdio.ok("list_memories", {"page_size": 100, "include_ended": True})
    assert other_id not in listed_ids(listed) and "Angular" not in text(listed)
    assert mine.structured_content["memory"]["id"] in listed_ids(listed)
    # a namespace argument is not one of the tool's: refused or ignored, never obeyed
    sneaky = stdio.call("recall", {"query": "Maya favourite frontend framework",
                                   "namespace": other})
    assert sneaky.is_error or other_id not in hit_ids(sneaky)


def test_stdio_errors_are_tool_errors(stdio: ClientThread) -> None:
    bad = stdio.call("get_memory", {"id": "not-a-uuid"})
    assert bad.is_error and "INVALID_ARGUMENT" in text(bad) and "Traceback" not in text(bad)
    nothing = stdio.call("update_memory", {"id": str(uuid.uuid4())})
    assert nothing.is_error and "at least one field" in text(nothing)
    missing = stdio.call("forget", {"id": str(uuid.uuid4())})
    assert missing.is_error and "NOT_FOUND" in text(missing)
    # arguments the tool's schema refuses: one plain sentence naming each field
    bad_filter = stdio.call("list_memories", {"filters": {"importance_min": 3, "tagz": ["x"],
                                                          "created_after": "2026-01-01"}})
    said = text(bad_filter)
    assert bad_filter.is_error and said.startswith("INVALID_ARGUMENT: "), said
    assert "filters.importance_min should be less than or equal to 1" in said, said
    assert "filters.tagz is not a field this tool takes" in said, said
    assert "filters.created_after should have timezone info" in said, said
    assert "\n" not in said and "pydantic" not in said and "type=" not in said, said


def test_stdio_supersedes_and_update(stdio: ClientThread) -> None:
    old = stdio.ok("store_memory", {"content": "Maya's team ships with Webpack",
                                    "category": "fact"}).structured_content["memory"]["id"]
    new = stdio.ok("store_memory", {"content": "Maya's team switched its bundler to Vite",
                                    "category": "decision", "supersedes": [old]})
    new_id = new.structured_content["memory"]["id"]
    recalled = stdio.ok("recall", {"query": "which bundler does Maya's team use?"})
    ids = hit_ids(recalled)
    # the ended fact comes after its replacement, marked, or not at all (below the floor)
    assert ids[0] == new_id and (old not in ids or f"superseded by [{new_id}]" in text(recalled))
    got = stdio.ok("get_memory", {"id": old})
    assert got.structured_content["superseded"] is True
    assert got.structured_content["superseded_by"] == new_id and f"by [{new_id}]" in text(got)
    updated = stdio.ok("update_memory", {"id": new_id, "importance": 0.9, "tags": ["build"]})
    assert updated.structured_content["memory"]["importance"] == pytest.approx(0.9)
    assert updated.structured_content["memory"]["tags"] == ["build"]


def test_stdio_withholds_a_sensitive_memorys_text(stdio: ClientThread) -> None:
    """A server without --show-sensitive names a matching sensitive memory by its id and
    withholds its text from recall, get_memory and context; no tool argument shows it."""
    pin = "Maya's bank PIN is 4921 and it unlocks the card ending 7710"
    secret_id = stdio.ok("store_memory", {
        "content": pin, "sensitive": True, "tags": ["maya", "bank"]}
    ).structured_content["memory"]["id"]
    recalled = stdio.ok("recall", {"query": "Maya bank PIN", "k": 5})
    hit = next(h for h in recalled.structured_content["hits"] if h["memory"]["id"] == secret_id)
    assert hit["memory"]["withheld"] is True and hit["memory"]["content"] == ""
    assert hit["memory"]["tags"] == []
    assert "4921" not in text(recalled) and f"[{secret_id}]" in text(recalled)
    assert "withheld" in text(recalled)
    got = stdio.ok("get_memory", {"id": secret_id})
    assert got.structured_content["withheld"] is True and "4921" not in text(got)
    context_tool = stdio.tools()["context"]
    assert "include_sensitive" not in context_tool.input_schema.get("properties", {})
    sneaky = stdio.call("context", {"query": "Maya bank PIN", "include_sensitive": True})
    assert "4921" not in text(sneaky)
    if not sneaky.is_error:
        assert sneaky.structured_content["sensitive_omitted"] >= 1
        assert "sensitive memory matched" in text(sneaky), text(sneaky)
    stdio.ok("forget", {"id": secret_id})


def test_stdio_list_and_count_with_filters_and_pages(stdio: ClientThread) -> None:
    """list_memories pages through a metadata filter's memories, newest first, each once and
    whole; count_memories counts what it lists; a page token continues only its query."""
    run = uuid.uuid4().hex[:8]  # this test's memories, in the module's shared namespace
    ids = []
    for i in range(5):
        stored = stdio.ok("store_memory", {
            "content": f"Project atlas build note {i}: the compiler runs with flag F{i} {run}",
            "category": "note" if i % 2 else "fact", "tags": ["atlas"] + (["ci"] * (i < 2)),
            "thread": f"thread-{run}-{i % 2}",
            "metadata": {"run": run, "source": "email" if i < 3 else "chat"}})
        memory = stored.structured_content["memory"]
        assert memory["metadata"] == {"run": run, "source": "email" if i < 3 else "chat"}
        ids.append(memory["id"])
    mine = {"metadata": {"run": run}}

    seen, token, pages = [], "", 0
    while True:
        page = stdio.ok("list_memories", {"filters": mine, "page_size": 2, "page_token": token})
        seen += listed_ids(page)
        pages += 1
        token = page.structured_content["next_page_token"]
        if not token:
            break
        assert f"page_token {token!r}" in text(page)
    assert seen == ids[::-1] and pages == 3  # newest first, every memory once
    oldest = stdio.ok("list_memories", {"filters": mine, "ascending": True})
    assert listed_ids(oldest) == ids
    first = oldest.structured_content["memories"][0]
    assert first["content"] == f"Project atlas build note 0: the compiler runs with flag F0 {run}"
    assert text(oldest).splitlines()[0].startswith(f"[{ids[0]}] {first['content']} (fact, ")

    email = {"metadata": {"run": run, "source": "email"}}
    assert listed_ids(stdio.ok("list_memories", {"filters": email})) == ids[2::-1]
    assert stdio.ok("count_memories", {"filters": email}).structured_content == {"count": 3}
    either = {"metadata": {"run": run, "source": ["chat", "fax"]}}
    assert stdio.ok("count_memories", {"filters": either}).structured_content["count"] == 2
    counts: dict[str, dict[str, Any]] = {
        "all": {}, "tags_all": {"tags_all": ["atlas", "ci"]}, "tags_none": {"tags_none": ["ci"]},
        "thread": {"threads": [f"thread-{run}-1"]}, "notes": {"categories": ["note"]},
        "created": {"created_after": (datetime.now(UTC) + timedelta(hours=1)).isoformat()}}
    found = {name: stdio.ok("count_memories", {"filters": {**mine, **extra}})
             .structured_content["count"] for name, extra in counts.items()}
    assert found == {"all": 5, "tags_all": 2, "tags_none": 3, "thread": 2, "notes": 2,
                     "created": 0}
    assert text(stdio.ok("count_memories", {"filters": mine})) == "5 memories match."

    # a token continues only the query that made it
    first_page = stdio.ok("list_memories", {"filters": mine, "page_size": 2})
    other = stdio.call("list_memories", {"filters": email, "page_size": 2,
                                         "page_token": first_page.structured_content[
                                             "next_page_token"]})
    assert other.is_error and "INVALID_ARGUMENT" in text(other), text(other)
    for bad in ({"filters": {"metadta": {"run": run}}},  # misspelled: refused, not ignored
                {"filters": {"created_after": "2026-01-01T00:00:00"}},  # no timezone
                {"page_size": 1000}):
        refused = stdio.call("list_memories", bad)
        assert refused.is_error and "Traceback" not in text(refused), bad

    # recall and context take the same filters
    recalled = stdio.ok("recall", {"query": "which flag does the compiler run with?",
                                   "filters": email, "k": 10})
    assert hit_ids(recalled) and set(hit_ids(recalled)) <= set(ids[:3])
    context = stdio.ok("context", {"query": "which flag does the compiler run with?",
                                   "filters": {"metadata": {"run": run, "source": "chat"}}})
    assert set(context.structured_content["ids"]) <= set(ids[3:]), text(context)
    twice = stdio.call("recall", {"query": "compiler flag", "tags": ["atlas"],
                                  "filters": {"tags": ["ci"]}})
    assert twice.is_error and "INVALID_ARGUMENT" in text(twice)
    for memory_id in ids:
        stdio.ok("forget", {"id": memory_id})
    assert stdio.ok("count_memories", {"filters": mine}).structured_content["count"] == 0


def test_stdio_update_every_field_then_history(stdio: ClientThread) -> None:
    """update_memory changes metadata, thread, validity, expiry (and clears it) and the pin;
    memory_history shows each earlier version, what each update changed, and the relations
    both ways."""
    run = uuid.uuid4().hex[:8]
    content = f"The deploy window of service {run} is Tuesday afternoon"
    memory_id = stdio.ok("store_memory", {
        "content": content, "category": "decision", "metadata": {"by": "ops"},
        "thread": "standup-1"}).structured_content["memory"]["id"]
    expires = (datetime.now(UTC) + timedelta(days=30)).replace(microsecond=0)
    updated = stdio.ok("update_memory", {
        "id": memory_id, "metadata": {"by": "cto", "run": run}, "thread": "standup-2",
        "expires_at": expires.isoformat(), "pinned": True,
        "valid_from": "2025-01-01T00:00:00Z"}).structured_content["memory"]
    assert (updated["metadata"], updated["thread"], updated["pinned"]) == (
        {"by": "cto", "run": run}, "standup-2", True)
    assert datetime.fromisoformat(updated["expires_at"]) == expires
    assert datetime.fromisoformat(updated["valid_from"]) == datetime(2025, 1, 1, tzinfo=UTC)
    got = stdio.ok("get_memory", {"id": memory_id})
    assert "pinned" in text(got) and "expires:" in text(got) and '"by": "cto"' in text(got)
    # pinned: first in context, whatever the question
    context = stdio.ok("context", {"query": "what does Maya drink in the morning?"})
    assert context.structured_content["pinned"] == [memory_id]
    assert context.structured_content["ids"][0] == memory_id

    never = stdio.ok("update_memory", {"id": memory_id, "expires_at": "never",
                                        "pinned": False}).structured_content["memory"]
    assert never["expires_at"] is None and never["pinned"] is False
    stdio.ok("update_memory", {"id": memory_id,
                               "content": f"The deploy window of service {run} is Wednesday"})
    newer = stdio.ok("store_memory", {
        "content": f"The deploy window of service {run} moved to Thursday mornings",
        "supersedes": [memory_id]}).structured_content["memory"]["id"]

    history = stdio.ok("memory_history", {"id": memory_id})
    out = history.structured_content
    assert [v["version"] for v in out["versions"]] == [1, 2, 3]
    first, second, third = out["versions"]
    assert sorted(first["changed"]) == ["expires_at", "metadata", "pinned", "thread",
                                        "valid_from"]
    assert (first["memory"]["metadata"], first["memory"]["thread"], first["memory"]["pinned"],
            first["memory"]["expires_at"]) == ({"by": "ops"}, "standup-1", False, None)
    assert first["memory"]["content"] == content and first["replaced_by"]
    assert sorted(second["changed"]) == ["expires_at", "pinned"]
    assert second["memory"]["pinned"] is True and second["memory"]["expires_at"]
    assert third["changed"] == ["content"] and third["memory"]["content"] == content
    now = out["memory"]
    assert now["content"].endswith("is Wednesday") and now["expires_at"] is None
    assert (now["metadata"], now["thread"], now["pinned"]) == (
        {"by": "cto", "run": run}, "standup-2", False)
    assert now["superseded"] is True and now["superseded_by"] == newer
    assert [(r["type"], r["direction"], r["source_id"], r["target_id"])
            for r in out["relations"]] == [("supersedes", "incoming", newer, memory_id)]
    lines = text(history).splitlines()
    assert any(line.startswith("- version 1, replaced ") and 'metadata was {"by": "ops"}' in line
               and "thread was standup-1" in line and "expires_at was never" in line
               for line in lines), lines
    assert f"- [{newer}] supersedes this memory" in lines
    newer_history = stdio.ok("memory_history", {"id": newer}).structured_content
    assert newer_history["versions"] == []
    assert [(r["direction"], r["target_id"]) for r in newer_history["relations"]] == [
        ("outgoing", memory_id)]
    # an ended fact is listed only on request
    mine = {"metadata": {"run": run}}
    assert listed_ids(stdio.ok("list_memories", {"filters": mine})) == []
    assert listed_ids(stdio.ok("list_memories", {"filters": mine, "include_ended": True})) == [
        memory_id]
    for gone in (newer, memory_id):
        stdio.ok("forget", {"id": gone})
    missing = stdio.call("memory_history", {"id": memory_id})
    assert missing.is_error and "NOT_FOUND" in text(missing)


def test_stdio_recall_reports_the_intent(stdio: ClientThread) -> None:
    stdio.ok("store_memory", {"content": "Maya grows tomatoes and basil on her balcony"})
    routed = stdio.ok("recall", {"query": "What should I plant next? Any tips for my garden?"})
    assert routed.structured_content["intent"] == {"name": "advice", "phrase": "should i"}
    assert routed.structured_content["time_window"] is None  # it names no time
    plain = stdio.ok("recall", {"query": "Which herbs grow on Maya's balcony?"})
    assert plain.structured_content["intent"] is None


def test_show_sensitive_is_the_servers_setting() -> None:
    from datetime import UTC, datetime

    from recallmesh.client import Memory
    from recallmesh.mcp_server import results

    memory = Memory(id="m1", namespace="ns", content="PIN 4921", category="fact",
                    tags=("bank",), importance=0.5, sensitive=True, thread="",
                    created_at=datetime.now(UTC), updated_at=datetime.now(UTC))
    assert results.memory_out(memory, show_sensitive=False).content == ""
    assert results.memory_out(memory, show_sensitive=True).content == "PIN 4921"
    block = results.got(memory, show_sensitive=True).content[0]
    assert isinstance(block, TextContent) and "4921" in block.text


def test_auto_recall_hook(stdio: ClientThread, stdio_ns: str, stack: Stack,
                          tmp_path: Path) -> None:
    """examples/mcp/auto_recall_hook.py: the hook's JSON in, the context block out."""
    content = "Maya's cat is called Pixel and hates the vacuum cleaner"
    stdio.ok("store_memory", {"content": content, "category": "fact"})
    event = {"session_id": "s1", "hook_event_name": "UserPromptSubmit",
             "prompt": "what is the name of Maya's pet?"}
    env = server_env(stack, tmp_path / "data", RECALLMESH_API_KEY=stack.api_key,
                     RECALLMESH_MCP_NAMESPACE=stdio_ns)
    done = subprocess.run([sys.executable, str(ROOT / "examples/mcp/auto_recall_hook.py")],
                          input=json.dumps(event), capture_output=True, text=True, env=env,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Relevant memories"), done.stdout + done.stderr
    assert content in done.stdout


def shell_sessions(page: Path) -> list[tuple[str, str]]:
    """The page's `$ command` blocks: (the command, its continuation lines joined, and the
    output the page shows under it)."""
    found = []
    for block in re.findall(r"^```sh\n(\$ .*?)^```", page.read_text(encoding="utf-8"),
                            flags=re.MULTILINE | re.DOTALL):
        lines = block.splitlines()
        command = [lines.pop(0)[2:]]
        while command[-1].endswith("\\"):
            command.append(lines.pop(0))
        found.append(("\n".join(command), "\n".join(lines)))
    return found


def test_the_auto_recall_examples_print_what_the_page_shows(stack: Stack,
                                                            tmp_path: Path) -> None:
    """docs/mcp.md's two auto-recall sessions run as written (the namespace a fresh one, the
    page's `recallmesh` and `.venv/bin/python` this checkout's) over the memories they show,
    and print what the page shows: its lines first, in its order. The other memory may follow
    (the page says so): its estimate for the other prompt is near the floor, and the BM25
    index's statistics span every namespace of the session's stack."""
    sessions = shell_sessions(ROOT / "docs" / "mcp.md")
    assert len(sessions) == 2, sessions
    ns = f"hook-{uuid.uuid4().hex[:8]}"
    shown = {line[2:] for _, output in sessions for line in output.splitlines()
             if line.startswith("- ")}
    with stack.client(namespace=ns) as client:
        for line in sorted(shown):
            content, _, category = line.rpartition(" (")
            client.store(content, category=category.rstrip(")"), wait_indexed=True)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "recallmesh").write_text(
        f'#!/bin/sh\nexec {sys.executable} -m recallmesh.cli "$@"\n')
    (bin_dir / "recallmesh").chmod(0o755)
    env = server_env(stack, tmp_path / "data", RECALLMESH_API_KEY=stack.api_key,
                     RECALLMESH_BIN=str(bin_dir / "recallmesh"))
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    for command, output in sessions:
        command = command.replace("my-agent", ns).replace(".venv/bin/python", sys.executable)
        done = subprocess.run(["bash", "-c", command], capture_output=True, text=True,
                              env=env, cwd=ROOT, timeout=60)
        assert done.returncode == 0, done.stderr
        printed, shown_here = done.stdout.strip().splitlines(), output.strip().splitlines()
        assert printed[:len(shown_here)] == shown_here, (command, done.stdout, done.stderr)
        assert {line[2:] for line in printed[len(shown_here):]} <= shown, done.stdout


# --------------------------------------------------------------------------- HTTP


@pytest.fixture(scope="module")
def http_ns() -> str:
    return f"mcp-http-{uuid.uuid4().hex[:10]}"


@pytest.fixture(scope="module")
def http_url(stack: Stack, http_ns: str, tmp_path_factory: pytest.TempPathFactory
             ) -> Iterator[str]:
    """`recallmesh mcp --transport http`, holding no credential of its own."""
    folder = tmp_path_factory.mktemp("mcp-http")
    port = free_port()
    log_path = folder / "server.log"
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            [*RECALLMESH, "mcp", "--transport", "http", "--namespace", http_ns,
             "--port", str(port)],
            env=server_env(stack, folder / "data"), cwd=ROOT, stdout=log,
            stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 90
        while True:
            assert process.poll() is None, log_path.read_text()[-3000:]
            assert time.monotonic() < deadline, log_path.read_text()[-3000:]
            try:
                if httpx2.post(url, json={}, timeout=5).status_code == 401:
                    break
            except httpx2.TransportError:
                time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        try:
            code = process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            raise
    assert code == 0, log_path.read_text()[-3000:]


def http_session(url: str, token: str) -> ClientThread:
    def open_client() -> contextlib.AbstractAsyncContextManager[Client]:
        @contextlib.asynccontextmanager
        async def session() -> AsyncIterator[Client]:
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"},
                                          timeout=httpx2.Timeout(CALL_TIMEOUT_S)) as http:
                async with Client(streamable_http_client(url, http_client=http),
                                  read_timeout_seconds=CALL_TIMEOUT_S) as client:
                    yield client

        return session()

    return ClientThread(open_client)


@pytest.fixture(scope="module")
def http(http_url: str, stack: Stack) -> Iterator[ClientThread]:
    session = http_session(http_url, stack.api_key)
    yield session
    session.close()


def test_http_tools(http: ClientThread) -> None:
    check_tools(http)


def test_http_store_recall_context_forget(http: ClientThread) -> None:
    remember_recall_forget(http)


INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "test", "version": "1"}}}


def post(url: str, token: str | None) -> httpx2.Response:
    headers = {"Accept": "application/json, text/event-stream"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return httpx2.post(url, json=INITIALIZE, headers=headers, timeout=30)


def challenge(reply: httpx2.Response) -> str:
    """A refusal's WWW-Authenticate header, checked to say the same as its JSON body."""
    header = reply.headers.get("www-authenticate", "")
    assert header.startswith('Bearer realm="recallmesh"'), header
    assert f'error_description="{reply.json()["error_description"]}"' in header, header
    return header


def test_http_needs_a_credential_the_gateway_accepts(http_url: str, stack: Stack,
                                                     http_ns: str) -> None:
    """Each refusal says why in words, in a Bearer challenge without OAuth metadata (so a
    spec-following client reports it instead of starting an OAuth flow)."""
    missing = post(url=http_url, token=None)
    assert missing.status_code == 401
    assert "error=" not in challenge(missing) and "recallmesh keys create" in challenge(missing)
    wrong = post(http_url, "rmk_notakey_0123456789")
    assert wrong.status_code == 401
    assert 'error="invalid_token"' in challenge(wrong) and "did not accept" in challenge(wrong)
    elsewhere = api_key(stack.dsn, grants=(f"{http_ns}-other",), scopes=("read", "write"))
    other = post(http_url, elsewhere)
    assert other.status_code == 401
    assert f"may not read namespace '{http_ns}'" in challenge(other)
    basic = httpx2.post(http_url, json=INITIALIZE, timeout=30,
                        headers={"Accept": "application/json, text/event-stream",
                                 "Authorization": "Basic dXNlcjpwYXNz"})
    assert basic.status_code == 401 and 'error="invalid_request"' in challenge(basic)
    assert "resource_metadata" not in wrong.headers["www-authenticate"]
    root = http_url.rsplit("/mcp", 1)[0]
    for discovery in ("/.well-known/oauth-protected-resource/mcp",
                      "/.well-known/oauth-authorization-server"):
        found = httpx2.get(root + discovery, timeout=30)
        assert found.status_code == 404 and "no OAuth" in found.json()["error_description"]
    assert post(http_url, stack.api_key).status_code == 200


def test_http_verifier_never_lends_its_own_credential() -> None:
    """An empty or malformed token is refused before any client exists: AsyncClient would
    take an empty one as "use this process's credential"."""
    pool = ClientPool("localhost:1", "ns")
    verifier = GatewayTokenVerifier(pool)
    for token in ("", " ", "rmk key", "tok\n"):
        assert asyncio.run(verifier.verify_token(token)) is None
    assert len(pool) == 0


def test_http_read_only_key_recalls_but_cannot_store(http_url: str, http: ClientThread,
                                                     stack: Stack, http_ns: str) -> None:
    content = "Maya reviews pull requests every afternoon"
    memory_id = http.ok("store_memory", {"content": content}).structured_content["memory"]["id"]
    reader = http_session(http_url, api_key(stack.dsn, grants=(http_ns,), scopes=("read",)))
    try:
        assert memory_id in hit_ids(reader.ok("recall", {"query": "when does Maya review code?"}))
        refused = reader.call("store_memory", {"content": "Maya likes tea"})
        assert refused.is_error and "PERMISSION_DENIED" in text(refused), text(refused)
        refused = reader.call("forget", {"id": memory_id})
        assert refused.is_error and "PERMISSION_DENIED" in text(refused), text(refused)
        refused = reader.call("update_memory", {"id": memory_id, "pinned": True})
        assert refused.is_error and "PERMISSION_DENIED" in text(refused), text(refused)
        # the new tools only read: a read-only key may use them
        assert memory_id in listed_ids(reader.ok("list_memories", {"page_size": 100}))
        assert reader.ok("count_memories", {}).structured_content["count"] >= 1
        history = reader.ok("memory_history", {"id": memory_id}).structured_content
        assert history["memory"]["content"] == content and history["versions"] == []
    finally:
        reader.close()
    assert http.ok("get_memory", {"id": memory_id}).structured_content["content"] == content


def test_example_mcp_json_matches_the_cli() -> None:
    """examples/mcp/mcp.json (docs/mcp.md): its stdio entry is a valid `recallmesh mcp`
    command line, its HTTP entry the default endpoint with a bearer header."""
    from recallmesh.cli import build_parser

    servers = json.loads((ROOT / "examples/mcp/mcp.json").read_text())["mcpServers"]
    stdio_entry = servers["recallmesh"]
    assert Path(stdio_entry["command"]).name == "recallmesh"
    args = build_parser().parse_args(stdio_entry["args"])
    assert (args.command, args.transport, args.namespace) == ("mcp", "stdio", "my-agent")
    assert set(stdio_entry["env"]) == {"RECALLMESH_TARGET", "RECALLMESH_API_KEY"}
    http_entry = servers["recallmesh-http"]
    defaults = build_parser().parse_args(["mcp", "--transport", "http"])
    assert http_entry["url"] == f"http://{defaults.host}:{defaults.port}/mcp"
    assert http_entry["headers"]["Authorization"].startswith("Bearer rmk_")


def test_http_probes_need_no_credential_and_tell_the_truth(http_url: str, stack: Stack,
                                                            tmp_path: Path) -> None:
    base = http_url.removesuffix("/mcp")
    assert httpx2.get(f"{base}/healthz", timeout=10).status_code == 200
    ready = httpx2.get(f"{base}/readyz", timeout=10)
    assert (ready.status_code, ready.text) == (200, "ready\n")
    # the image's HEALTHCHECK (docker/healthcheck.py) reads the same /readyz
    healthcheck = image_healthcheck().main
    ready_port = base.rsplit(":", 1)[-1]
    assert healthcheck(["recallmesh", "mcp", "--transport", "http", "--port", ready_port]) == 0
    # a server whose gateway is not there is alive but not ready
    port = free_port()
    with open(tmp_path / "log", "w") as log:
        process = subprocess.Popen(
            [*RECALLMESH, "mcp", "--transport", "http", "--namespace", "ns", "--port",
             str(port), "--target", f"127.0.0.1:{free_port()}"],
            env=server_env(stack, tmp_path / "data"), cwd=ROOT, stdout=log,
            stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None and time.monotonic() < deadline
            try:
                alive = httpx2.get(f"http://127.0.0.1:{port}/healthz", timeout=5)
                break
            except httpx2.TransportError:
                time.sleep(0.1)
        assert alive.status_code == 200
        unready = httpx2.get(f"http://127.0.0.1:{port}/readyz", timeout=10)
        assert unready.status_code == 503 and "UNAVAILABLE" in unready.text
        assert healthcheck(["recallmesh", "mcp", "--transport", "http", "--port",
                            str(port)]) == 1
    finally:
        process.terminate()
        process.wait(30)

