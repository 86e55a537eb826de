"""Integration: recallmesh.client (blocking and asyncio) and the Context RPC against the real
stack (every service its own process, embedded Postgres, the real model)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import grpc
import pytest

from recallmesh.client import (
    AlreadyExistsError,
    AsyncClient,
    Client,
    InvalidArgumentError,
    NewMemory,
    NotFoundError,
    PermissionDeniedError,
    UnauthenticatedError,
)
from recallmesh.stack.supervisor import Stack
from recallmesh.wire.validation import MAX_INDEX_WAIT_MS
from tests.helpers import api_key

pytestmark = pytest.mark.integration

# the longest index wait the gateway allows: the indexer may still be busy with earlier tests'
# memories (the client's deadline grows with the wait)
INDEX_WAIT_S = MAX_INDEX_WAIT_MS / 1000


@pytest.fixture(scope="module")
def client(stack: Stack) -> Iterator[Client]:
    with Client(stack.endpoints["gateway"], api_key=stack.api_key, tls=False) as c:
        yield c


def test_store_get_update_recall_forget(client: Client, ns: str) -> None:
    stored = client.store("Maya's favourite frontend framework is Svelte; she finds React "
                          "verbose", namespace=ns, category="preference",
                          tags=["frontend", "maya"], importance=0.8, thread="chat-1",
                          metadata={"source": "chat"}, wait_indexed=INDEX_WAIT_S)
    memory = stored.memory
    assert stored.indexed, f"not embedded within {INDEX_WAIT_S:.0f} s"
    assert uuid.UUID(memory.id)
    assert (memory.namespace, memory.category, memory.tags, memory.thread) == (
        ns, "preference", ("frontend", "maya"), "chat-1")
    assert memory.importance == pytest.approx(0.8) and memory.metadata == {"source": "chat"}
    assert memory.created_at is not None and memory.created_at.tzinfo is not None

    assert client.get(memory.id, namespace=ns) == memory
    hits = client.recall("which UI library does Maya like?", namespace=ns, explain=True).hits
    assert hits[0].memory.id == memory.id
    assert {c.leg for c in hits[0].legs} >= {"vector"}

    updated = client.update(memory.id, namespace=ns, importance=0.3, tags=["ui"]).memory
    assert updated.importance == pytest.approx(0.3)
    assert (updated.tags, updated.content) == (("ui",), memory.content)

    deleted = client.forget(memory.id, namespace=ns)
    assert deleted.purged and deleted.id == memory.id
    with pytest.raises(NotFoundError) as caught:
        client.get(memory.id, namespace=ns)
    assert caught.value.code == grpc.StatusCode.NOT_FOUND
    assert client.recall("which UI library does Maya like?", namespace=ns).hits == ()


def test_store_batch_and_a_retried_write_is_the_same_write(client: Client, ns: str) -> None:
    batch = client.store_batch(["The office is in Lyon", NewMemory("Standup is at 9:30",
                                                                   category="fact")],
                               namespace=ns)
    assert len(batch.ids) == 2
    memory_id = str(uuid.uuid4())
    first = client.store("Deploys happen on Tuesdays", namespace=ns, id=memory_id).memory
    again = client.store("Deploys happen on Tuesdays", namespace=ns, id=memory_id).memory
    assert first == again
    with pytest.raises(AlreadyExistsError):
        client.store("something else", namespace=ns, id=memory_id)


def test_errors_keep_their_status_and_message(client: Client, stack: Stack, ns: str) -> None:
    with pytest.raises(InvalidArgumentError, match="content"):
        client.store("   ", namespace=ns)
    with pytest.raises(InvalidArgumentError, match="max_tokens"):
        client.context("anything", namespace=ns, max_tokens=5)
    with Client(stack.endpoints["gateway"], namespace=ns, api_key="rmk_nope_nope",
                tls=False) as stranger:
        with pytest.raises(UnauthenticatedError):
            stranger.recall("anything")
    other = api_key(stack.dsn, grants=("someone-else",), scopes=("read",))
    with Client(stack.endpoints["gateway"], namespace=ns, api_key=other, tls=False) as c:
        with pytest.raises(PermissionDeniedError):
            c.context("anything")


def test_context_packs_current_facts_within_the_budget(client: Client, ns: str) -> None:
    old = client.store("The user's favourite editor is Vim", namespace=ns,
                       category="preference").memory
    new = client.store("The user switched editors and now prefers VS Code", namespace=ns,
                       category="preference", supersedes=[old.id], wait_indexed=INDEX_WAIT_S).memory
    client.store("Bank PIN hint: the code word is lighthouse", namespace=ns, sensitive=True)
    client.store("The user moved to Berlin in March", namespace=ns, wait_indexed=INDEX_WAIT_S)

    # the floor off: the ended fact is recalled, then left out (and counted)
    result = client.context("Which editor does the user prefer?", namespace=ns, min_score=0.0)
    assert result.text.splitlines()[0] == "Relevant memories (most relevant first):"
    assert new.id in result.ids and old.id not in result.ids
    assert "VS Code" in result.text and "Vim\n" not in result.text + "\n"
    assert result.superseded_omitted == 1
    assert result.tokenizer.startswith("tokenizer:") and 0 < result.tokens <= 1000
    assert not result.dated and "[20" not in result.text

    secret = client.context("lighthouse", namespace=ns)
    assert "lighthouse" not in secret.text and secret.sensitive_omitted == 1
    shown = client.context("lighthouse", namespace=ns, include_sensitive=True)
    assert "lighthouse" in shown.text

    dated = client.context("When did the user move to Berlin?", namespace=ns)
    today = datetime.now(UTC).date().isoformat()
    assert dated.dated and f"[{today}] The user moved to Berlin" in dated.text

    small = client.context("Which editor does the user prefer?", namespace=ns, max_tokens=24,
                           min_score=0.0)  # the floor off: more than fits is recalled
    assert small.tokens <= 24 and len(small.items) == 1 and small.over_budget_omitted >= 1


async def test_async_client_round_trip(stack: Stack, ns: str) -> None:
    async with AsyncClient(stack.endpoints["gateway"], namespace=ns, api_key=stack.api_key,
                           tls=False) as c:
        stored = await c.store("Ravi is allergic to peanuts", category="fact",
                               expires_at=datetime.now(UTC) + timedelta(days=1),
                               wait_indexed=INDEX_WAIT_S)
        results = await asyncio.gather(c.recall("food allergies of Ravi"),
                                       c.context("what can't Ravi eat?"),
                                       c.get(stored.memory.id))
        assert results[0].hits[0].memory.id == stored.memory.id
        assert stored.memory.id in results[1].ids
        assert results[2].expires_at is not None
        await c.delete(stored.memory.id)
        with pytest.raises(NotFoundError):
            await c.get(stored.memory.id)


def test_context_command_prints_the_block(client: Client, stack: Stack, ns: str,
                                          monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from recallmesh.cli import main

    client.store("The user's dog is called Biscuit", namespace=ns, wait_indexed=INDEX_WAIT_S)
    monkeypatch.setenv("RECALLMESH_API_KEY", stack.api_key)
    target = stack.endpoints["gateway"]
    assert main(["context", "what is my dog's name?", "-n", ns, "--target", target]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("Relevant memories") and "Biscuit" in printed
    monkeypatch.setattr("sys.stdin", __import__("io").StringIO("name of the dog"))
    assert main(["context", "-", "-n", ns, "--target", target, "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert "Biscuit" in answer["text"] and len(answer["ids"]) == 1
    assert main(["context", "dog", "-n", ns, "--target", target, "--max-tokens", "3"]) == 1
    assert "INVALID_ARGUMENT" in capsys.readouterr().err


def test_context_calls_are_timed_like_every_rpc(client: Client, stack: Stack, ns: str) -> None:
    import urllib.request

    client.context("anything at all", namespace=ns)
    with pytest.raises(InvalidArgumentError):
        client.context("   ", namespace=ns)
    text = urllib.request.urlopen(f"http://localhost:{stack.metrics['gateway']}/metrics",
                                  timeout=5).read().decode()
    assert 'grpc_server_handling_seconds_bucket{grpc_code="OK",grpc_method="Context"' in text
    assert 'grpc_code="INVALID_ARGUMENT",grpc_method="Context"' in text


def test_delete_namespace_removes_every_memory_and_says_how_many(
        client: Client, stack: Stack, ns: str, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    from recallmesh.cli import main

    client.store_batch(["first of three", "second of three", "third of three"], namespace=ns)
    assert client.delete_namespace(namespace=ns) == 3
    assert client.recall("three", namespace=ns).hits == ()
    assert client.delete_namespace(namespace=ns) == 0  # nothing left: nothing removed
    other = f"{ns}-cli"
    client.store("kept until the command runs", namespace=other)
    target = stack.endpoints["gateway"]
    monkeypatch.setenv("RECALLMESH_API_KEY", stack.api_key)
    # without the name repeated nothing is removed
    assert main(["delete-namespace", "-n", other, "--target", target]) == 2
    assert main(["delete-namespace", "-n", other, "--target", target, "--confirm", other]) == 0
    assert "(1 memories removed)" in capsys.readouterr().out
    with pytest.raises(InvalidArgumentError):
        client.delete_namespace(namespace=" ")
