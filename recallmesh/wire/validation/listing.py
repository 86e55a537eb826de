"""What a listing reads: List, Count, Export and DeleteMatching (ListQuery), ListNamespaces
(NamespacesQuery), and their pages (size and token)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from recallmesh.shared.errors import InvalidArgument
from recallmesh.v1 import memory_pb2
from recallmesh.wire.filters import Filters, filters_from_proto
from recallmesh.wire.validation.names import namespace, namespace_prefix

# Listing: List / Count / Export / DeleteMatching (recallmesh/gateway/listing.py).
DEFAULT_PAGE_SIZE = 100
DEFAULT_EXPORT_PAGE_SIZE = 200
MAX_PAGE_SIZE = 1000
MAX_PAGE_TOKEN_CHARS = 1024
PAGE_TOKEN_NOT_OURS = "page_token is not one this server made"
DEFAULT_SAMPLE = 10
MAX_SAMPLE = 100
LIST_ORDERS = {
    memory_pb2.LIST_ORDER_UNSPECIFIED: "created_at",
    memory_pb2.LIST_ORDER_CREATED: "created_at",
    memory_pb2.LIST_ORDER_UPDATED: "updated_at",
    memory_pb2.LIST_ORDER_IMPORTANCE: "importance",
}


@dataclass(frozen=True)
class ListQuery:
    """Which memories of a namespace a List, Count, Export or DeleteMatching reads."""

    namespace: str
    filters: Filters = Filters()
    order_by: str = "created_at"  # a column: created_at, updated_at or importance
    ascending: bool = False
    page_size: int = DEFAULT_PAGE_SIZE
    page_token: str = ""
    include_deleted: bool = False
    include_ended: bool = False


def _page(size: int, default: int, token: str) -> tuple[int, str]:
    if not 0 <= size <= MAX_PAGE_SIZE:
        raise InvalidArgument(f"page_size must be within 0..{MAX_PAGE_SIZE}, got {size}")
    if len(token) > MAX_PAGE_TOKEN_CHARS:
        raise InvalidArgument(PAGE_TOKEN_NOT_OURS)
    return size or default, token


def _filters(msg: Any) -> Filters:
    return filters_from_proto(msg.filters if msg.HasField("filters") else None)


def list_query(msg: memory_pb2.ListRequest) -> ListQuery:
    ns = namespace(msg.namespace)
    if msg.order_by not in LIST_ORDERS:
        raise InvalidArgument(f"order_by must be one of LIST_ORDER_*, got {msg.order_by}")
    size, token = _page(msg.page_size, DEFAULT_PAGE_SIZE, msg.page_token)
    return ListQuery(ns, _filters(msg), LIST_ORDERS[msg.order_by], msg.ascending, size, token,
                     msg.include_deleted, msg.include_ended)


@dataclass(frozen=True)
class NamespacesQuery:
    """Which namespaces a ListNamespaces reads (of those the caller's grants cover)."""

    prefix: str = ""
    page_size: int = DEFAULT_PAGE_SIZE
    page_token: str = ""


def namespaces_query(msg: memory_pb2.ListNamespacesRequest) -> NamespacesQuery:
    size, token = _page(msg.page_size, DEFAULT_PAGE_SIZE, msg.page_token)
    return NamespacesQuery(namespace_prefix(msg.prefix), size, token)


def count_query(msg: memory_pb2.CountRequest) -> ListQuery:
    return ListQuery(namespace(msg.namespace), _filters(msg),
                     include_deleted=msg.include_deleted, include_ended=msg.include_ended)


def export_query(msg: memory_pb2.ExportRequest) -> ListQuery:
    """Export: the live memories, current and ended, oldest first."""
    ns = namespace(msg.namespace)
    size, token = _page(msg.page_size, DEFAULT_EXPORT_PAGE_SIZE, msg.page_token)
    return ListQuery(ns, _filters(msg), "created_at", True, size, token,
                     include_deleted=False, include_ended=True)


def delete_matching(msg: memory_pb2.DeleteMatchingRequest) -> tuple[ListQuery, int]:
    """The memories a DeleteMatching names (live ones, current and ended), and its sample
    size. Filters are required: DeleteNamespace is the call that removes everything."""
    ns = namespace(msg.namespace)
    filters = _filters(msg)
    if filters.empty:
        raise InvalidArgument("filters must name at least one condition (DeleteNamespace "
                              "removes a whole namespace)")
    if msg.purge and not msg.confirm:
        raise InvalidArgument("purge needs confirm (a dry run deletes nothing)")
    if not 0 <= msg.sample_size <= MAX_SAMPLE:
        raise InvalidArgument(f"sample_size must be within 0..{MAX_SAMPLE}, got "
                              f"{msg.sample_size}")
    return (ListQuery(ns, filters, include_deleted=False, include_ended=True),
            msg.sample_size or DEFAULT_SAMPLE)

