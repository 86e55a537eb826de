"""recallmesh's Python client: typed, blocking (`Client`) and asyncio (`AsyncClient`).

    from recallmesh.client import Client

    with Client("localhost:50051", namespace="my-agent") as memory:
        memory.store("Maya prefers Svelte over React", category="preference")
        for hit in memory.recall("which frontend framework does Maya like?").hits:
            print(hit.score, hit.memory.content)

docs/client.md has the whole guide (credentials, TLS, retries, several gateways, errors).
"""

from recallmesh.client._wire import (
    ContextOptions,
    FilterOptions,
    ListOptions,
    MemoryFields,
    RecallOptions,
    UpdateFields,
    encoded_size,
)
from recallmesh.client.aio import AsyncClient
from recallmesh.client.errors import (
    AlreadyExistsError,
    DeadlineExceededError,
    InvalidArgumentError,
    NotFoundError,
    PermissionDeniedError,
    RecallmeshError,
    ResourceExhaustedError,
    UnauthenticatedError,
    UnavailableError,
)
from recallmesh.client.sync import Client
from recallmesh.client.types import (
    BatchResult,
    Caller,
    ContextItem,
    ContextResult,
    Deleted,
    DeleteMatchingResult,
    History,
    Hit,
    ImportResult,
    LegContribution,
    LegReport,
    Link,
    Memory,
    NamespaceList,
    NamespaceSummary,
    NewMemory,
    Page,
    QueryIntent,
    RecallResult,
    Relation,
    StoreResult,
    TimeWindow,
    Version,
)
from recallmesh.shared.tls import TlsSettings
from recallmesh.wire.channel import DEFAULT_TARGET, NO_RETRIES, RetryPolicy

__all__ = [
    "DEFAULT_TARGET", "NO_RETRIES", "AlreadyExistsError", "AsyncClient", "BatchResult", "Caller",
    "Client", "ContextItem", "ContextOptions", "ContextResult", "DeadlineExceededError", "Deleted",
    "DeleteMatchingResult", "encoded_size", "FilterOptions", "History", "Hit", "ImportResult",
    "InvalidArgumentError", "LegContribution", "LegReport", "Link", "ListOptions", "Memory",
    "MemoryFields", "NamespaceList", "NamespaceSummary", "NewMemory", "NotFoundError", "Page",
    "PermissionDeniedError", "QueryIntent", "RecallmeshError", "RecallOptions", "RecallResult",
    "Relation", "ResourceExhaustedError", "RetryPolicy", "StoreResult", "TimeWindow",
    "TlsSettings", "UnauthenticatedError", "UnavailableError", "UpdateFields", "Version"
]
