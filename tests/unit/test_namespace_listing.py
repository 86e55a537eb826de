"""ListNamespaces' plain-Python core: its request checked, its page tokens (signed, bound to
the prefix, never a List token), the caller it reports, and what the typed client reads from
its replies (and from RecallResponse.relevance_floor)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from recallmesh.auth.principal import UNAUTHENTICATED_LOCAL, Principal, Scope
from recallmesh.client import _wire
from recallmesh.client.types import Caller, NamespaceSummary
from recallmesh.gateway import namespaces
from recallmesh.gateway.listing import PageTokens
from recallmesh.gateway.servicer import caller_to_proto
from recallmesh.shared.errors import InvalidArgument
from recallmesh.v1 import memory_pb2
from recallmesh.wire.timestamps import to_proto_timestamp
from recallmesh.wire.validation import ListQuery, NamespacesQuery, namespaces_query

PAGES = PageTokens(b"k" * 32)


def test_the_request_is_checked() -> None:
    assert namespaces_query(memory_pb2.ListNamespacesRequest()) == NamespacesQuery("", 100, "")
    query = namespaces_query(memory_pb2.ListNamespacesRequest(prefix="acme-", page_size=1000))
    assert query == NamespacesQuery("acme-", 1000, "")
    # NFC, not trimmed: a prefix may end with the space inside a name
    assert namespaces_query(memory_pb2.ListNamespacesRequest(prefix="cafe\u0301 ")).prefix == \
        "caf\u00e9 "
    for bad, message in ((memory_pb2.ListNamespacesRequest(page_size=1001), "page_size"),
                         (memory_pb2.ListNamespacesRequest(page_size=-1), "page_size"),
                         (memory_pb2.ListNamespacesRequest(prefix="a\u200bb"), "prefix must not"),
                         (memory_pb2.ListNamespacesRequest(prefix="x" * 129), "prefix must be"),
                         (memory_pb2.ListNamespacesRequest(page_token="x" * 2000),
                          "not one this server made")):
        with pytest.raises(InvalidArgument, match=message):
            namespaces_query(bad)


def test_a_page_token_continues_only_its_own_listing() -> None:
    query = NamespacesQuery("acme-", 2)
    token = namespaces.page_token(PAGES, query, "acme-b")
    assert namespaces.after(PAGES, NamespacesQuery("acme-", 5, token)) == "acme-b"
    assert namespaces.after(PAGES, query) is None  # the first page
    with pytest.raises(InvalidArgument, match="another listing"):
        namespaces.after(PAGES, NamespacesQuery("beta-", 2, token))
    list_token = PAGES.seal(["2026-01-01T00:00:00+00:00",
                             "00000000-0000-0000-0000-000000000001", "0" * 16])
    elsewhere = namespaces.page_token(PageTokens(b"o" * 32), query, "acme-b")
    for bad in ("nope", token + "A", elsewhere, list_token, PAGES.seal(["namespaces", "acme-"]),
                PAGES.seal(["namespaces", "acme-", 7])):
        with pytest.raises(InvalidArgument, match="not one this server made"):
            namespaces.after(PAGES, NamespacesQuery("acme-", 2, bad))
    # and List does not take a ListNamespaces token
    with pytest.raises(InvalidArgument):
        PAGES.after(ListQuery("acme-b", page_token=token))


def test_the_caller_is_told_without_a_secret() -> None:
    local = caller_to_proto(UNAUTHENTICATED_LOCAL)
    assert (local.subject, list(local.grants), list(local.scopes), local.kind) == (
        "local (authentication off)", ["*"], ["read", "write", "admin"], "local")
    key = caller_to_proto(Principal("agent-7", ("acme-*", "beta"), frozenset({Scope.READ}),
                                    key_id="rmk_0123"))
    assert (key.subject, list(key.grants), list(key.scopes), key.kind) == (
        "agent-7", ["acme-*", "beta"], ["read"], "api_key")
    assert "rmk_0123" not in str(key)


def test_the_client_reads_pages_and_the_relevance_floor() -> None:
    when = datetime(2026, 3, 1, 12, tzinfo=UTC)
    reply = memory_pb2.ListNamespacesResponse(
        next_page_token="t", caller=memory_pb2.Caller(subject="s", grants=["*"],
                                                      scopes=["read"], kind="api_key"))
    to_proto_timestamp(when, reply.namespaces.add(namespace="a", memories=3, pinned=1,
                                                  sensitive=2).last_updated)
    reply.namespaces.add(namespace="b")
    first = _wire.namespaces_result(reply)
    assert first == ([NamespaceSummary("a", 3, 1, 2, when), NamespaceSummary("b", 0, 0, 0, None)],
                     Caller("s", ("*",), ("read",), "api_key"), "t")
    last = _wire.namespaces_result(memory_pb2.ListNamespacesResponse(
        namespaces=[memory_pb2.NamespaceSummary(namespace="c", memories=1)],
        caller=reply.caller))
    listing = _wire.namespace_list([first, last])
    assert [n.namespace for n in listing.namespaces] == ["a", "b", "c"]
    assert listing.caller.grants == ("*",)

    assert _wire.recall_result(memory_pb2.RecallResponse()).relevance_floor is None
    assert _wire.recall_result(memory_pb2.RecallResponse(relevance_floor=0)).relevance_floor == 0
    assert _wire.recall_result(
        memory_pb2.RecallResponse(relevance_floor=0.075)).relevance_floor == 0.075
