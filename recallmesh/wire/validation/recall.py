"""A recall's request: Recall (RecallQuery) and Context (ContextQuery, a recall packed into a
token budget): the query text, k, the budget, the filters, the reference time and the
request's recall settings."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from recallmesh.policy import Overrides, SortBy, checked
from recallmesh.shared.errors import InvalidArgument
from recallmesh.v1 import memory_pb2
from recallmesh.wire.enums import sort_by
from recallmesh.wire.filters import Filters, filters_from_proto
from recallmesh.wire.timestamps import from_proto_timestamp
from recallmesh.wire.validation.names import namespace, no_nul

MAX_QUERY_BYTES = 4 * 1024
DEFAULT_K = 10
MAX_K = 100
# A recall's budget holds a concurrency slot, a connection per leg and the embedding queue
# for as long as it runs: far above any recall's need, short enough that a client cannot park
# work on the gateway (docs/decisions/0017-smaller-settings-and-limits.md).
MAX_BUDGET_MS = 10_000


@dataclass(frozen=True)
class RecallQuery:
    namespace: str
    query: str
    k: int = DEFAULT_K
    sort_by: SortBy = "relevance"
    filters: Filters = Filters()
    budget_ms: int | None = None
    explain: bool = False
    fusion: Overrides = Overrides()  # the request's recall settings (recallmesh/policy.py)
    reference_time: datetime | None = None  # None: the server's clock
    # The relevance floor cuts each hit (Context) instead of the answer as a whole (Recall).
    floor_each_hit: bool = False


def query_text(value: str) -> str:
    no_nul(value, "query")
    if not value.strip():
        raise InvalidArgument("query must not be empty")
    if len(value.encode("utf-8")) > MAX_QUERY_BYTES:
        raise InvalidArgument(f"query exceeds {MAX_QUERY_BYTES} bytes")
    return value


def _recall_basics(msg: memory_pb2.RecallRequest | memory_pb2.ContextRequest,
                   default_k: int) -> tuple[str, str, int, int | None]:
    """A RecallRequest's or ContextRequest's namespace, query, k and budget_ms (None: the
    server's), validated in this order."""
    ns = namespace(msg.namespace)
    query = query_text(msg.query)
    k = msg.k or default_k
    if not 1 <= k <= MAX_K:
        raise InvalidArgument(f"k must be within 1..{MAX_K}, got {msg.k}")
    if not 0 <= msg.budget_ms <= MAX_BUDGET_MS:
        raise InvalidArgument(f"budget_ms must be within 0..{MAX_BUDGET_MS}, got {msg.budget_ms}")
    return ns, query, k, msg.budget_ms or None


def _filters_and_reference_time(
    msg: memory_pb2.RecallRequest | memory_pb2.ContextRequest,
) -> tuple[Filters, datetime | None]:
    return (filters_from_proto(msg.filters if msg.HasField("filters") else None),
            from_proto_timestamp(msg.reference_time, "reference_time")
            if msg.HasField("reference_time") else None)


def recall_query(msg: memory_pb2.RecallRequest) -> RecallQuery:
    """Validate a recallmesh.v1.RecallRequest."""
    ns, query, k, budget_ms = _recall_basics(msg, DEFAULT_K)
    order = sort_by(msg.sort_by)
    filters, reference_time = _filters_and_reference_time(msg)
    return RecallQuery(
        namespace=ns,
        query=query,
        k=k,
        sort_by=order,
        filters=filters,
        budget_ms=budget_ms,
        explain=msg.explain,
        fusion=Overrides.from_proto(msg.fusion) if msg.HasField("fusion") else Overrides(),
        reference_time=reference_time,
    )


# Context (a recall packed into a token budget): its limits.
DEFAULT_CONTEXT_TOKENS = 1000
MIN_CONTEXT_TOKENS = 16  # the heading line always fits
MAX_CONTEXT_TOKENS = 32_768
DEFAULT_CONTEXT_K = 20


@dataclass(frozen=True)
class ContextQuery:
    recall: RecallQuery
    max_tokens: int = DEFAULT_CONTEXT_TOKENS
    include_sensitive: bool = False


def context_query(msg: memory_pb2.ContextRequest) -> ContextQuery:
    """Validate a recallmesh.v1.ContextRequest."""
    ns, query, k, budget_ms = _recall_basics(msg, DEFAULT_CONTEXT_K)
    max_tokens = msg.max_tokens or DEFAULT_CONTEXT_TOKENS
    if not MIN_CONTEXT_TOKENS <= max_tokens <= MAX_CONTEXT_TOKENS:
        raise InvalidArgument(f"max_tokens must be within {MIN_CONTEXT_TOKENS}.."
                              f"{MAX_CONTEXT_TOKENS}, got {msg.max_tokens}")
    filters, reference_time = _filters_and_reference_time(msg)
    fusion = Overrides()
    if msg.HasField("min_score"):
        fusion = Overrides({"min_score": checked("min_score", msg.min_score, "min_score")})
    recall = RecallQuery(namespace=ns, query=query, k=k, filters=filters, budget_ms=budget_ms,
                         reference_time=reference_time, fusion=fusion, floor_each_hit=True)
    return ContextQuery(recall, max_tokens, msg.include_sensitive)

