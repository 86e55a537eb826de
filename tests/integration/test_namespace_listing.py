"""Integration: ListNamespaces through real gRPC against real Postgres, as the typed client and
the raw stub call it: counts as Count counts them (deleted, ended, expired and purged memories
told apart), only the namespaces a key's grants cover (a pattern, an exact name, `*`, none), the
prefix (no LIKE pattern), pages and their tokens, the scope; and the relevance floor a recall
reports."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import grpc
import pytest

from recallmesh.client import Client, NamespaceList, NewMemory, PermissionDeniedError
from recallmesh.policy import DEFAULT_MIN_SCORE
from recallmesh.stack.supervisor import Stack
from recallmesh.v1 import memory_pb2, memory_pb2_grpc
from tests.helpers import api_key

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def admin(stack: Stack) -> Iterator[Client]:
    with Client(stack.endpoints["gateway"], api_key=stack.api_key, tls=False) as c:
        yield c


@pytest.fixture(scope="module")
def base() -> str:
    """The start of every namespace this module makes (other tests' namespaces share the
    database)."""
    return f"lsn{uuid.uuid4().hex[:8]}-"


@pytest.fixture(scope="module")
def seeded(admin: Client, base: str) -> dict[str, str]:
    """acme-a: 4 current (1 pinned, 1 sensitive), 1 ended, 1 deleted; acme-b: 1 current, 1
    deleted; acme-c: only a deleted one; acme-d: only a purged one; acme-e: only an expired
    one; beta: 1; p%q and pXq: 1 each."""
    ns = {name: base + name for name in ("acme-a", "acme-b", "acme-c", "acme-d", "acme-e",
                                         "beta", "p%q", "pXq")}
    a = ns["acme-a"]
    admin.store_batch([NewMemory("Maya's editor is Helix", pinned=True),
                       NewMemory("Maya's door code is 4711", sensitive=True),
                       NewMemory("The build runs on Fridays")], namespace=a)
    old = admin.store("The office is in Lyon", namespace=a).memory
    admin.store("The office moved to Berlin", namespace=a, supersedes=[old.id])
    admin.delete(admin.store("scratch", namespace=a).memory.id, namespace=a)
    admin.store("kept", namespace=ns["acme-b"])
    admin.delete(admin.store("gone", namespace=ns["acme-b"]).memory.id, namespace=ns["acme-b"])
    admin.delete(admin.store("gone", namespace=ns["acme-c"]).memory.id, namespace=ns["acme-c"])
    admin.forget(admin.store("gone", namespace=ns["acme-d"]).memory.id, namespace=ns["acme-d"])
    admin.store("soon gone", namespace=ns["acme-e"],
                expires_at=datetime.now(UTC) + timedelta(seconds=1))
    for name in ("beta", "p%q", "pXq"):
        admin.store(f"in {name}", namespace=ns[name])
    time.sleep(1.2)  # acme-e's memory expires (the stack's sweeper is off: it is not purged)
    return ns


def names(listing: NamespaceList, base: str) -> list[str]:
    return [n.namespace.removeprefix(base) for n in listing.namespaces
            if n.namespace.startswith(base)]


def test_counts_are_counts_live_and_current(admin: Client, base: str,
                                            seeded: dict[str, str]) -> None:
    started = datetime.now(UTC)
    listing = admin.namespaces(prefix=base)
    # acme-d (purged) and acme-e (expired) hold nothing; the order is the database's collation
    assert sorted(names(listing, base)) == ["acme-a", "acme-b", "acme-c", "beta", "p%q", "pXq"]
    by_name = {n.namespace.removeprefix(base): n for n in listing.namespaces}
    a = by_name["acme-a"]
    assert (a.memories, a.pinned, a.sensitive) == (4, 1, 1)
    for name, summary in by_name.items():
        assert summary.memories == admin.count(namespace=seeded[name])
        assert summary.last_updated is not None and summary.last_updated <= started
    assert (by_name["acme-b"].memories, by_name["acme-c"].memories) == (1, 0)
    # the delete in acme-c is its last change
    deleted = admin.list(namespace=seeded["acme-c"], include_deleted=True).memories[0]
    assert by_name["acme-c"].last_updated == deleted.deleted_at
    caller = listing.caller
    assert (caller.kind, caller.grants, caller.scopes) == ("api_key", ("*",),
                                                           ("read", "write", "admin"))
    assert caller.subject and "rmk_" not in caller.subject


def test_a_key_sees_only_what_its_grants_cover(stack: Stack, base: str,
                                               seeded: dict[str, str]) -> None:
    def listing(grants: tuple[str, ...], prefix: str = "") -> NamespaceList:
        key = api_key(stack.dsn, grants, ("read",), name="lister")
        with Client(stack.endpoints["gateway"], api_key=key, tls=False) as client:
            return client.namespaces(prefix=prefix)

    acme = listing((base + "acme-*",))
    assert sorted(names(acme, base)) == ["acme-a", "acme-b", "acme-c"]
    assert len(acme.namespaces) == 3  # nothing of any other namespace
    assert (acme.caller.grants, acme.caller.scopes) == ((base + "acme-*",), ("read",))
    assert acme.caller.subject.startswith("key:") and acme.caller.subject.endswith(" (lister)")
    assert listing((base + "acme-*",), prefix=base + "beta").namespaces == ()
    exact = listing((base + "beta", base + "acme-d", base + "acme-e"))
    assert names(exact, base) == ["beta"] and len(exact.namespaces) == 1
    both = listing((base + "beta", base + "acme-b"))
    assert sorted(names(both, base)) == ["acme-b", "beta"]
    assert listing((base + "nobody-*",)).namespaces == ()  # empty, not an error
    # % and _ are plain characters of a prefix (no LIKE pattern)
    assert names(listing((base + "p%*",)), base) == ["p%q"]
    assert names(listing((base + "*",), prefix=base + "p%"), base) == ["p%q"]
    assert names(listing((base + "*",), prefix=base + "acme_"), base) == []


def test_pages_follow_in_order_and_tokens_are_checked(stack: Stack, base: str,
                                                      seeded: dict[str, str]) -> None:
    with stack.dial(token=stack.api_key) as channel:
        stub = memory_pb2_grpc.MemoryServiceStub(channel)
        seen, token, pages = [], "", 0
        while True:
            reply = stub.ListNamespaces(memory_pb2.ListNamespacesRequest(
                prefix=base, page_size=2, page_token=token), timeout=10)
            seen += [n.namespace for n in reply.namespaces]
            pages += 1
            if not (token := reply.next_page_token):
                break
        whole = stub.ListNamespaces(memory_pb2.ListNamespacesRequest(prefix=base), timeout=10)
        assert seen == [n.namespace for n in whole.namespaces] and len(seen) == 6
        assert pages == 3
        first = stub.ListNamespaces(memory_pb2.ListNamespacesRequest(prefix=base, page_size=2),
                                    timeout=10)
        for request, message in (
                (memory_pb2.ListNamespacesRequest(prefix=base + "a",
                                                  page_token=first.next_page_token),
                 "page_token continues another listing"),
                (memory_pb2.ListNamespacesRequest(page_token="garbage"),
                 "page_token is not one this server made"),
                (memory_pb2.ListNamespacesRequest(page_size=1001), "page_size must be within"),
                (memory_pb2.ListNamespacesRequest(prefix="a\x00b"), "prefix must not contain")):
            with pytest.raises(grpc.RpcError) as refused:
                stub.ListNamespaces(request, timeout=10)
            assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert message in refused.value.details()


def test_a_key_without_the_read_scope_is_refused(stack: Stack, base: str) -> None:
    key = api_key(stack.dsn, ("*",), ("write",), name="writer")
    with Client(stack.endpoints["gateway"], api_key=key, tls=False) as client:
        with pytest.raises(PermissionDeniedError, match="lacks the 'read' scope"):
            client.namespaces(prefix=base)


def test_recall_reports_the_relevance_floor(admin: Client, ns: str) -> None:
    admin.store("Maya's favourite editor is Helix", namespace=ns, wait_indexed=True)
    assert admin.recall("Maya's editor", namespace=ns).relevance_floor == DEFAULT_MIN_SCORE
    assert admin.recall("Maya's editor", namespace=ns, min_score=0.3).relevance_floor == 0.3
    assert admin.recall("Maya's editor", namespace=ns, min_score=0).relevance_floor == 0.0
    recent = admin.recall("Maya's editor", namespace=ns, sort_by="recency", min_score=0.2)
    assert recent.relevance_floor == 0.2


def test_the_cli_prints_the_namespaces_and_the_caller(stack: Stack, base: str,
                                                      seeded: dict[str, str],
                                                      tmp_path: Path) -> None:
    from tests.integration.test_up_and_cli import client_env, run

    env = client_env(stack, tmp_path)
    out = run(env, "namespaces", "--prefix", base + "acme-").stdout
    lines = out.splitlines()
    row = next(line for line in lines if seeded["acme-a"] in line)
    # memories, pinned, sensitive
    assert [c.strip() for c in row.split("│")[2:5]] == ["4", "1", "1"]
    assert "3 namespaces" in out and seeded["beta"] not in out
    assert lines[-1].startswith("caller: ") and "(api_key); grants: *; scopes: read, write, " \
        "admin" in lines[-1]
    listed = json.loads(run(env, "namespaces", "--prefix", base + "beta", "--json").stdout)
    assert [n["namespace"] for n in listed["namespaces"]] == [seeded["beta"]]
    assert listed["namespaces"][0]["memories"] == 1
    assert listed["namespaces"][0]["last_updated"].endswith("Z")
    assert listed["caller"]["kind"] == "api_key"
    empty = run(env, "namespaces", "--prefix", base + "nothing").stdout
    assert empty.startswith("no namespace this key may see holds memories")
