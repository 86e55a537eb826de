"""Integration: seeing and managing memory through the typed client against the real stack:
List / Count with filters and page tokens, the filter grammar inside Recall's legs and as of T,
History (versions and relations both ways, gone with a purge), Export -> Import round trips,
DeleteMatching (dry run, confirm, never beyond the namespace) and pinned memories in Context."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from recallmesh.client import (
    Client,
    InvalidArgumentError,
    NewMemory,
    NotFoundError,
    Relation,
)
from recallmesh.stack.supervisor import Stack
from recallmesh.wire.validation import MAX_INDEX_WAIT_MS

pytestmark = pytest.mark.integration

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture(scope="module")
def client(stack: Stack) -> Iterator[Client]:
    with Client(stack.endpoints["gateway"], api_key=stack.api_key, tls=False) as c:
        yield c


def _seed(client: Client, ns: str, n: int = 25) -> list[str]:
    memories = [NewMemory(f"note {i}: the build uses compiler flag number {i}",
                          category="fact" if i % 2 else "note", tags=("build",) + (
                              ("ci",) if i % 3 == 0 else ()),
                          importance=round(i / n, 2), thread=f"t{i % 4}",
                          metadata={"source": "chat" if i % 5 else "email", "n": str(i)},
                          created_at=T0 + timedelta(hours=i)) for i in range(n)]
    return list(client.store_batch(memories, namespace=ns).ids)


def test_list_pages_in_a_stable_order_with_filters_and_counts(client: Client, ns: str) -> None:
    ids = _seed(client, ns)
    seen, token, pages = [], "", 0
    while True:
        page = client.list(namespace=ns, page_size=7, page_token=token)
        seen += [m.id for m in page.memories]
        pages += 1
        if not (token := page.next_page_token):
            break
    assert seen == ids[::-1] and pages == 4  # newest first, every memory once
    oldest = [m.id for m in client.iter_memories(namespace=ns, page_size=10, ascending=True)]
    assert oldest == ids
    by_importance = [m.importance for m in client.iter_memories(
        namespace=ns, order_by="importance", page_size=4)]
    assert by_importance == sorted(by_importance, reverse=True)
    assert client.count(namespace=ns) == 25

    email = client.list(namespace=ns, metadata={"source": "email"}).memories
    assert sorted(int(m.metadata["n"]) for m in email) == [0, 5, 10, 15, 20]
    either = client.count(namespace=ns, metadata={"n": ["3", "4", "99"]})
    assert either == 2
    assert client.count(namespace=ns, tags_all=["build", "ci"]) == 9
    assert client.count(namespace=ns, tags_none=["ci"]) == 16
    assert client.count(namespace=ns, threads=["t1"], categories=["fact"]) == 6
    assert client.count(namespace=ns, importance_min=0.2, importance_max=0.4) == 6
    assert client.count(namespace=ns, created_after=T0 + timedelta(hours=20)) == 5

    # a token continues only its own query
    first = client.list(namespace=ns, page_size=5)
    with pytest.raises(InvalidArgumentError, match="another query"):
        client.list(namespace=ns, page_size=5, page_token=first.next_page_token,
                     categories=["fact"])
    with pytest.raises(InvalidArgumentError, match="page_token"):
        client.list(namespace=ns, page_token="not-a-token")


def test_recall_filters_run_inside_the_legs(client: Client, ns: str) -> None:
    _seed(client, ns)
    hits = client.recall("compiler flag number", namespace=ns, k=5,
                         metadata={"source": "email"}).hits
    assert hits and {h.memory.metadata["source"] for h in hits} == {"email"}
    assert len(hits) == 5  # the filter selects before the top k, not after it
    hits = client.recall("compiler flag number", namespace=ns, k=10, tags_all=["ci"],
                         threads=["t0"]).hits
    assert {int(h.memory.metadata["n"]) for h in hits} == {0, 12, 24}
    ctx = client.context("compiler flag", namespace=ns, metadata={"n": "7"})
    assert [i.id for i in ctx.items] == [client.list(namespace=ns, metadata={"n": "7"})
                                         .memories[0].id]


def test_as_of_sees_the_fact_that_was_current_then(client: Client, ns: str) -> None:
    old = client.store("Maya lives in Lyon", namespace=ns).memory
    time.sleep(0.05)
    between = datetime.now(UTC)
    time.sleep(0.05)
    new = client.store("Maya moved: she lives in Berlin now", namespace=ns,
                       supersedes=[old.id]).memory
    assert [m.id for m in client.list(namespace=ns).memories] == [new.id]
    assert [m.id for m in client.list(namespace=ns, as_of=between).memories] == [old.id]
    assert {m.id for m in client.list(namespace=ns, include_ended=True).memories} == {
        old.id, new.id}
    hits = client.recall("where does Maya live", namespace=ns, as_of=between).hits
    assert [h.memory.id for h in hits] == [old.id]
    ctx = client.context("where does Maya live", namespace=ns, as_of=between, min_score=0)
    assert ctx.ids == [old.id]  # current at that time, so not left out as superseded


def test_history_keeps_every_version_and_relations_both_ways(client: Client, ns: str,
                                                             db: psycopg.Connection) -> None:
    first = client.store("The deploy window is Tuesday", namespace=ns, category="decision",
                         metadata={"by": "ops"}).memory
    client.update(first.id, namespace=ns, content="The deploy window is Wednesday")
    client.update(first.id, namespace=ns, metadata={"by": "cto"}, pinned=True)
    later = client.store("The deploy window moved to Thursday", namespace=ns,
                         supersedes=[first.id]).memory
    history = client.history(first.id, namespace=ns)
    assert [v.version for v in history.versions] == [1, 2]
    assert history.versions[0].memory.content == "The deploy window is Tuesday"
    assert history.versions[0].changed == ("content",)
    assert history.versions[1].memory.metadata == {"by": "ops"}
    assert history.versions[1].changed == ("metadata", "pinned")
    assert all(v.replaced_by for v in history.versions)  # the API key's name
    assert history.memory.content == "The deploy window is Wednesday" and history.memory.pinned
    assert history.superseded_by == [later.id]
    assert client.history(later.id, namespace=ns).supersedes == [first.id]
    with pytest.raises(NotFoundError):
        client.history(first.id, namespace=ns + "-other")

    client.forget(first.id, namespace=ns)
    rows = db.execute("SELECT count(*) FROM memory_versions WHERE memory_id = %s",
                      (first.id,)).fetchone()
    assert rows == (0,)
    with pytest.raises(NotFoundError):
        client.history(first.id, namespace=ns)


def _snapshot(client: Client, ns: str) -> list[dict[str, Any]]:
    records = list(client.export(namespace=ns))
    for record in records:
        record["memory"].pop("namespace", None)
    return records


def test_export_then_import_reproduces_a_namespace_exactly(client: Client, ns: str) -> None:
    _seed(client, ns, 6)
    a = client.store("Alex prefers tea", namespace=ns, pinned=True,
                     expires_at=datetime.now(UTC) + timedelta(days=30)).memory
    b = client.store("Alex switched to coffee", namespace=ns, supersedes=[a.id],
                     valid_from=T0).memory
    client.update(b.id, namespace=ns, tags=["drinks"], importance=0.9)
    client.store("A note about Alex's coffee", namespace=ns,
                 relations=[client_relation("about", b.id)])
    exported = _snapshot(client, ns)
    assert len(exported) == 9

    versions = client.history(b.id, namespace=ns).versions
    records = list(client.export(namespace=ns))
    # ids are unique in a deployment: the namespace is emptied, then imported into again
    # (a move to another deployment is the same export and import)
    assert client.delete_namespace(namespace=ns) == 9
    assert client.count(namespace=ns, include_deleted=True) == 0
    result = client.import_records(records, namespace=ns)
    assert (result.imported, result.unchanged, result.relations_written,
            result.relations_skipped) == (9, 0, 2, 0)
    assert _snapshot(client, ns) == exported
    # History says who imported each version (issue 54); Export leaves it out
    after = client.history(b.id, namespace=ns).versions
    assert [replace(v, imported_by="") for v in after] == list(versions)
    assert all(v.imported_by for v in after)
    again = client.import_records(records, namespace=ns)
    assert (again.imported, again.unchanged, again.relations_skipped) == (0, 9, 0)
    assert _snapshot(client, ns) == exported
    hits = client.recall("what does Alex drink", namespace=ns).hits
    assert hits[0].memory.id == b.id  # found again: lexical postings and vectors rebuilt


def client_relation(kind: str, target: str) -> Relation:
    return Relation(kind, target)


def test_delete_matching_is_a_dry_run_until_confirmed_and_stays_in_its_namespace(client: Client,
                                                                                 ns: str) -> None:
    _seed(client, ns, 10)
    other = ns + "-neighbour"
    _seed(client, other, 10)
    with pytest.raises(InvalidArgumentError, match="at least one condition"):
        client.delete_matching(namespace=ns, confirm=True)
    dry = client.delete_matching(namespace=ns, metadata={"source": "email"})
    assert (dry.matched, dry.deleted, len(dry.sample)) == (2, 0, 2)
    assert client.count(namespace=ns) == 10
    none = client.delete_matching(namespace=ns, metadata={"source": "fax"}, confirm=True)
    assert (none.matched, none.deleted) == (0, 0) and client.count(namespace=ns) == 10
    done = client.delete_matching(namespace=ns, metadata={"source": "email"}, confirm=True)
    assert done.deleted == 2 and client.count(namespace=ns) == 8
    assert client.count(namespace=ns, include_deleted=True) == 10
    purged = client.delete_matching(namespace=ns, categories=["fact"], confirm=True,
                                    purge=True)
    assert purged.purged and purged.deleted == 4  # the fifth fact (n=5) was deleted above
    assert client.count(namespace=ns, include_deleted=True) == 6
    assert client.count(namespace=other) == 10  # the other tenant's rows are untouched
    client.delete_namespace(namespace=other)


def test_pinned_memories_come_first_in_context_whatever_the_query(client: Client, ns: str) -> None:
    client.store_batch([f"Trivia {i}: the museum opens at {i} o'clock" for i in range(8)],
                       namespace=ns, wait_indexed=MAX_INDEX_WAIT_MS / 1000)
    pin = client.store("The user is called Robin and wants short answers", namespace=ns,
                       pinned=True).memory
    ctx = client.context("when does the museum open", namespace=ns, max_tokens=200)
    assert ctx.items[0].id == pin.id and ctx.items[0].pinned
    assert "The user is called Robin" in ctx.text.splitlines()[1]
    assert not any(i.pinned for i in ctx.items[1:])
    nothing = client.context("quantum chromodynamics lattice", namespace=ns, min_score=0.99)
    assert nothing.ids == [pin.id]  # nothing relevant: the pinned memory still comes
    client.update(pin.id, namespace=ns, pinned=False)
    assert pin.id not in client.context("when does the museum open", namespace=ns).ids[:1]


def test_bad_filters_and_pages_are_clear_errors(client: Client, ns: str) -> None:
    with pytest.raises(InvalidArgumentError, match="importance_min"):
        client.count(namespace=ns, importance_min=1.5)
    with pytest.raises(InvalidArgumentError, match="tags_none"):
        client.count(namespace=ns, tags=["a"], tags_none=["a"])
    with pytest.raises(InvalidArgumentError, match="page_size"):
        client.list(namespace=ns, page_size=5000)
    with pytest.raises(InvalidArgumentError, match="values"):
        client.count(namespace=ns, metadata={"k": []})
    assert client.count(namespace=ns + "-" + uuid.uuid4().hex[:6]) == 0
