"""The MCP server's tools in-process, over a fake client: what each tool asks of the client
(the filter grammar, every field update_memory can change, list/count/history), what it
returns (structured content and text), and the sensitive-text rule in memory_history.
tests/integration/test_mcp.py drives the same tools against the real stack."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from mcp import Client
from pydantic import ValidationError

from recallmesh.client import (
    ContextItem,
    ContextResult,
    History,
    Hit,
    InvalidArgumentError,
    Link,
    Memory,
    Page,
    QueryIntent,
    RecallResult,
    StoreResult,
    TimeWindow,
    Version,
)
from recallmesh.mcp_server import build_server
from recallmesh.mcp_server.filters import MemoryFilters, filter_options
from recallmesh.mcp_server.server import plain_validation

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
M1 = "11111111-1111-4111-8111-111111111111"
M2 = "22222222-2222-4222-8222-222222222222"
M3 = "33333333-3333-4333-8333-333333333333"


def memory(id: str = M1, content: str = "Maya prefers Svelte", **fields: Any) -> Memory:
    return Memory(id=id, namespace="ns", content=content, category="preference",
                  created_at=NOW, updated_at=NOW, **fields)


class FakeClient:
    """Records each call (method, positional, keyword) and answers from `replies`."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
        self.replies: dict[str, Any] = {}

    def __getattr__(self, method: str) -> Any:
        async def call(*args: Any, **kwargs: Any) -> Any:
            self.calls.append((method, args, kwargs))
            reply = self.replies[method]
            if isinstance(reply, Exception):
                raise reply
            return reply

        return call


def run_tool(fake: FakeClient, tool: str, arguments: dict[str, Any],
             show_sensitive: bool = False) -> Any:
    async def source() -> Any:
        return fake

    async def go() -> Any:
        server = build_server("ns", source, show_sensitive=show_sensitive)
        async with Client(server) as client:
            return await client.call_tool(tool, arguments)

    return asyncio.run(go())


def text(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


def test_list_memories_passes_the_filters_and_pages() -> None:
    fake = FakeClient()
    fake.replies["list"] = Page((memory(metadata={"source": "email"}, thread="t1",
                                        tags=("frontend",), pinned=True),), "tok-2")
    result = run_tool(fake, "list_memories", {
        "filters": {"metadata": {"source": "email", "project": ["atlas", "zephyr"]},
                    "tags_all": ["a", "b"], "tags_none": ["c"], "threads": ["t1"],
                    "categories": ["preference"], "importance_min": 0.2,
                    "importance_max": 0.9, "created_after": "2026-01-01T00:00:00Z",
                    "as_of": "2026-02-01T00:00:00+01:00", "tags": []},
        "order_by": "importance", "ascending": True, "page_size": 7, "page_token": "tok-1",
        "include_deleted": True, "include_ended": True})
    assert not result.is_error, text(result)
    (method, args, kwargs), = fake.calls
    assert method == "list" and args == ()
    assert kwargs["metadata"] == {"source": "email", "project": ["atlas", "zephyr"]}
    assert kwargs["created_after"] == datetime(2026, 1, 1, tzinfo=UTC)
    assert kwargs["as_of"] == datetime(2026, 1, 31, 23, 0, tzinfo=UTC)
    assert kwargs["as_of"].tzinfo is not None
    assert "tags" not in kwargs  # an empty list is no condition
    assert {k: kwargs[k] for k in ("order_by", "ascending", "page_size", "page_token",
                                   "include_deleted", "include_ended", "tags_all",
                                   "importance_min")} == {
        "order_by": "importance", "ascending": True, "page_size": 7, "page_token": "tok-1",
        "include_deleted": True, "include_ended": True, "tags_all": ["a", "b"],
        "importance_min": 0.2}
    out = result.structured_content
    assert out["next_page_token"] == "tok-2"
    listed = out["memories"][0]
    assert (listed["metadata"], listed["pinned"], listed["thread"]) == (
        {"source": "email"}, True, "t1")
    assert text(result).startswith(
        f'[{M1}] Maya prefers Svelte (preference, tags frontend, metadata {{"source": '
        f'"email"}}, thread t1, created 2026-03-01 12:00 UTC, pinned)\n')
    assert "'tok-2'" in text(result)


def test_filters_refuse_unknown_keys_naive_times_and_a_condition_given_twice() -> None:
    fake = FakeClient()
    fake.replies["count"] = 3
    bads: list[dict[str, object]] = [{"tag": ["x"]}, {"created_after": "2026-01-01T00:00:00"},
                                     {"importance_min": 1.5}, {"metadata": {"k": []}}]
    for bad in bads:
        result = run_tool(fake, "count_memories", {"filters": bad})
        assert result.is_error, bad
    assert fake.calls == []
    fake.replies["recall"] = RecallResult((), (), False, "cc", 1.0)
    twice = run_tool(fake, "recall", {"query": "q", "tags": ["a"], "filters": {"tags": ["b"]}})
    assert twice.is_error and "INVALID_ARGUMENT" in text(twice) and "once" in text(twice)
    assert fake.calls == []
    with pytest.raises(ValueError, match="once"):
        filter_options(MemoryFilters(categories=["fact"]), categories=["note"])


def test_count_memories() -> None:
    fake = FakeClient()
    fake.replies["count"] = 1
    result = run_tool(fake, "count_memories", {"filters": {"threads": ["t1"]},
                                               "include_ended": True})
    assert result.structured_content == {"count": 1} and text(result) == "1 memory matches."
    assert fake.calls == [("count", (), {"include_deleted": False, "include_ended": True,
                                         "threads": ["t1"]})]


def test_recall_takes_the_filters_and_reports_intent_and_time_window() -> None:
    fake = FakeClient()
    fake.replies["recall"] = RecallResult(
        (Hit(memory(pinned=True), 0.42),), (), False, "cc", 3.0,
        QueryIntent("advice", "should i"),
        TimeWindow("last saturday", NOW - timedelta(days=3), NOW - timedelta(days=2), 1))
    result = run_tool(fake, "recall", {"query": "what should I do", "k": 3, "tags": ["x"],
                                       "filters": {"metadata": {"source": "email"}}})
    assert fake.calls == [("recall", ("what should I do",), {
        "k": 3, "metadata": {"source": "email"}, "tags": ["x"]})]
    out = result.structured_content
    assert out["intent"] == {"name": "advice", "phrase": "should i"}
    assert out["time_window"]["phrase"] == "last saturday" and out["time_window"]["boosted"] == 1
    assert out["hits"][0]["memory"]["pinned"] is True
    assert "'last saturday': 2026-02-26 12:00 UTC to 2026-02-27 12:00 UTC" in text(result)


def test_context_takes_the_filters_and_names_the_pinned() -> None:
    fake = FakeClient()
    fake.replies["context"] = ContextResult(
        "Relevant memories:\n- Maya prefers Svelte", (ContextItem(M1, 0.0, 5, NOW, True),),
        9, "approximation", False, False, 2.0)
    result = run_tool(fake, "context", {"query": "q", "filters": {"as_of": "2026-01-01T00:00:00Z"}})
    assert not result.is_error, text(result)
    assert fake.calls[0][2]["as_of"] == datetime(2026, 1, 1, tzinfo=UTC)
    assert fake.calls[0][2]["include_sensitive"] is False
    assert result.structured_content["pinned"] == [M1]


def test_update_memory_changes_every_field_an_update_can() -> None:
    fake = FakeClient()
    fake.replies["update"] = StoreResult(memory(pinned=True), True)
    result = run_tool(fake, "update_memory", {
        "id": M1, "metadata": {"by": "cto"}, "thread": "t2", "pinned": True,
        "valid_from": "2025-01-01T00:00:00Z", "valid_to": "2027-01-01T00:00:00Z",
        "expires_at": "2027-06-01T00:00:00Z", "tags": [], "category": "decision",
        "importance": 0.7})
    assert not result.is_error, text(result)
    (method, args, kwargs), = fake.calls
    assert (method, args, kwargs.pop("wait_indexed")) == ("update", (M1,), False)
    assert kwargs == {"metadata": {"by": "cto"}, "thread": "t2", "pinned": True,
                      "valid_from": datetime(2025, 1, 1, tzinfo=UTC),
                      "valid_to": datetime(2027, 1, 1, tzinfo=UTC),
                      "expires_at": datetime(2027, 6, 1, tzinfo=UTC), "tags": [],
                      "category": "decision", "importance": 0.7}
    assert result.structured_content["memory"]["pinned"] is True

    fake.calls.clear()
    run_tool(fake, "update_memory", {"id": M1, "expires_at": "never", "thread": ""})
    assert fake.calls[0][2] == {"wait_indexed": False, "expires_at": None, "thread": ""}
    fake.calls.clear()
    run_tool(fake, "update_memory", {"id": M1, "content": "Maya prefers Solid"})
    assert fake.calls[0][2]["wait_indexed"] == 20.0  # a new text is searchable on return
    for bad in ({"id": M1}, {"id": M1, "expires_at": "tomorrow"},
                {"id": M1, "valid_to": "2027-01-01T00:00:00"}):
        assert run_tool(fake, "update_memory", bad).is_error, bad


def test_store_memory_takes_pinned_and_metadata() -> None:
    fake = FakeClient()
    fake.replies["store"] = StoreResult(memory(pinned=True, metadata={"source": "chat"}), True)
    result = run_tool(fake, "store_memory", {"content": "Maya prefers Svelte", "pinned": True,
                                             "metadata": {"source": "chat"}})
    assert not result.is_error, text(result)
    kwargs = fake.calls[0][2]
    assert (kwargs["pinned"], kwargs["metadata"]) == (True, {"source": "chat"})
    assert result.structured_content["memory"]["metadata"] == {"source": "chat"}
    plain = FakeClient()
    plain.replies["store"] = StoreResult(memory(), True)
    run_tool(plain, "store_memory", {"content": "Maya prefers Svelte"})
    assert (plain.calls[0][2]["pinned"], plain.calls[0][2]["metadata"]) == (False, {})


def history(sensitive_now: bool = False) -> History:
    v1 = memory(content="The deploy window is Tuesday PIN 4921", metadata={"by": "ops"})
    v2 = memory(content="The deploy window is Wednesday", metadata={"by": "ops"},
                sensitive=True)
    now = memory(content="The deploy window is Wednesday", metadata={"by": "cto"},
                 pinned=True, sensitive=sensitive_now, thread="t2")
    return History(now, (
        Version(1, v1, NOW, "admin", ("content", "sensitive")),
        Version(2, v2, NOW + timedelta(minutes=1), "admin",
                ("metadata", "pinned", "sensitive", "thread")),
    ), (Link("supersedes", M1, M2, NOW), Link("supersedes", M3, M1, NOW)))


def test_memory_history_shows_versions_and_relations_both_ways() -> None:
    fake = FakeClient()
    fake.replies["history"] = history()
    result = run_tool(fake, "memory_history", {"id": M1}, show_sensitive=True)
    out = result.structured_content
    assert [v["version"] for v in out["versions"]] == [1, 2]
    assert out["versions"][1]["changed"] == ["metadata", "pinned", "sensitive", "thread"]
    assert out["versions"][1]["memory"]["metadata"] == {"by": "ops"}
    assert out["memory"]["pinned"] is True
    assert [(r["direction"], r["source_id"], r["target_id"]) for r in out["relations"]] == [
        ("outgoing", M1, M2), ("incoming", M3, M1)]
    lines = text(result).splitlines()
    assert "- version 1, replaced 2026-03-01 12:00 UTC by admin: content was The deploy " \
           "window is Tuesday PIN 4921; sensitive was no" in lines
    assert ('- version 2, replaced 2026-03-01 12:01 UTC by admin: metadata was {"by": "ops"}; '
            'pinned was no; sensitive was yes; thread was none') in lines
    assert f"- this memory supersedes [{M2}]" in lines
    assert f"- [{M3}] supersedes this memory" in lines


def test_memory_history_says_who_imported_a_version() -> None:
    fake = FakeClient()
    base = history()
    imported = Version(1, base.versions[0].memory, NOW, "the-ceo", ("content",),
                       imported_by="migration-job")
    fake.replies["history"] = History(base.memory, (imported,), ())
    result = run_tool(fake, "memory_history", {"id": M1}, show_sensitive=True)
    assert result.structured_content["versions"][0]["imported_by"] == "migration-job"
    said = "- version 1, replaced 2026-03-01 12:00 UTC by the-ceo (imported by migration-job): "
    assert any(line.startswith(said) for line in text(result).splitlines())


def test_memory_history_withholds_what_a_memory_said_before_it_was_marked_sensitive() -> None:
    """Version 1 was not sensitive, but the update after it marked the memory sensitive:
    what it said then is withheld too (unless the server shows sensitive memories)."""
    fake = FakeClient()
    fake.replies["history"] = history()
    result = run_tool(fake, "memory_history", {"id": M1})
    assert "4921" not in text(result)
    versions = result.structured_content["versions"]
    assert [v["memory"]["withheld"] for v in versions] == [True, True]
    assert versions[0]["memory"]["metadata"] == {}
    assert result.structured_content["memory"]["withheld"] is False  # not sensitive now
    fake.replies["history"] = history(sensitive_now=True)
    withheld = run_tool(fake, "memory_history", {"id": M1}).structured_content
    assert withheld["memory"]["content"] == "" and withheld["memory"]["metadata"] == {}


def test_gateway_refusals_are_tool_errors() -> None:
    fake = FakeClient()
    fake.replies["list"] = InvalidArgumentError("page_token continues another query")
    result = run_tool(fake, "list_memories", {"page_token": "x"})
    assert result.is_error and "INVALID_ARGUMENT: page_token continues another query" in text(
        result)


@pytest.mark.parametrize(("given", "said"), [
    ({"importance_min": 3}, "importance_min should be less than or equal to 1"),
    ({"tags": "frontend"}, "tags should be a valid list"),
    ({"metadata": {"source": 5}}, "metadata.source should be a valid string"),
    ({"created_before": "2026-01-01"}, "created_before should have timezone info"),
    ({"tagz": ["x"]}, "tagz is not a field this tool takes"),
])
def test_invalid_filters_are_one_plain_sentence_naming_the_field(given: dict[str, Any],
                                                                  said: str) -> None:
    with pytest.raises(ValidationError) as caught:
        MemoryFilters.model_validate(given)
    sentence = plain_validation(caught.value)
    assert sentence == said  # nothing else: no None member, no types, no links
