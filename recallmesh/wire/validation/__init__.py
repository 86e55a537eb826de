"""Request validation: proto messages in, plain validated values out.

Every limit a caller can hit is defined in this package and documented in docs/api.md.
Violations raise InvalidArgument with a message naming the field. By what is validated:

- names.py: namespaces (and their prefixes), memory ids, no NUL in a text;
- memories.py: a memory's fields (Store, StoreBatch, Update, Import), a batch, a write's
  wait for indexing, the largest request;
- recall.py: Recall and Context requests;
- listing.py: List, Count, Export, DeleteMatching and ListNamespaces, and their pages;
- records.py: Import's records and versions, and the bounds on versions and answers.

The names the rest of the code uses are importable from here.
"""

from recallmesh.wire.validation.listing import (
    DEFAULT_EXPORT_PAGE_SIZE,
    DEFAULT_PAGE_SIZE,
    DEFAULT_SAMPLE,
    LIST_ORDERS,
    MAX_PAGE_SIZE,
    MAX_PAGE_TOKEN_CHARS,
    MAX_SAMPLE,
    PAGE_TOKEN_NOT_OURS,
    ListQuery,
    NamespacesQuery,
    count_query,
    delete_matching,
    export_query,
    list_query,
    namespaces_query,
)
from recallmesh.wire.validation.memories import (
    MAX_BATCH,
    MAX_CONTENT_BYTES,
    MAX_INDEX_WAIT_MS,
    MAX_METADATA_ENTRIES,
    MAX_METADATA_VALUE_CHARS,
    MAX_RELATIONS,
    MAX_REQUEST_BYTES,
    MAX_TAGS,
    MAX_THREAD_CHARS,
    index_wait,
    memory_update,
    new_memories,
    new_memory,
)
from recallmesh.wire.validation.names import (
    MAX_NAMESPACE_CHARS,
    memory_id,
    namespace,
    namespace_prefix,
)
from recallmesh.wire.validation.recall import (
    DEFAULT_CONTEXT_K,
    DEFAULT_CONTEXT_TOKENS,
    DEFAULT_K,
    MAX_BUDGET_MS,
    MAX_CONTEXT_TOKENS,
    MAX_K,
    MAX_QUERY_BYTES,
    MIN_CONTEXT_TOKENS,
    ContextQuery,
    RecallQuery,
    context_query,
    query_text,
    recall_query,
)
from recallmesh.wire.validation.records import (
    MAX_IMPORT_VERSIONS,
    MAX_RESPONSE_BYTES,
    MAX_VERSION_NUMBER,
    MAX_VERSIONS,
    ImportedMemory,
    ImportedVersion,
    imported_records,
)

__all__ = [
    "DEFAULT_CONTEXT_K",
    "DEFAULT_CONTEXT_TOKENS",
    "DEFAULT_EXPORT_PAGE_SIZE",
    "DEFAULT_K",
    "DEFAULT_PAGE_SIZE",
    "DEFAULT_SAMPLE",
    "LIST_ORDERS",
    "MAX_BATCH",
    "MAX_BUDGET_MS",
    "MAX_CONTENT_BYTES",
    "MAX_CONTEXT_TOKENS",
    "MAX_IMPORT_VERSIONS",
    "MAX_INDEX_WAIT_MS",
    "MAX_K",
    "MAX_METADATA_ENTRIES",
    "MAX_METADATA_VALUE_CHARS",
    "MAX_NAMESPACE_CHARS",
    "MAX_PAGE_SIZE",
    "MAX_PAGE_TOKEN_CHARS",
    "MAX_QUERY_BYTES",
    "MAX_RELATIONS",
    "MAX_REQUEST_BYTES",
    "MAX_RESPONSE_BYTES",
    "MAX_SAMPLE",
    "MAX_TAGS",
    "MAX_THREAD_CHARS",
    "MAX_VERSIONS",
    "MAX_VERSION_NUMBER",
    "MIN_CONTEXT_TOKENS",
    "PAGE_TOKEN_NOT_OURS",
    "ContextQuery",
    "ImportedMemory",
    "ImportedVersion",
    "ListQuery",
    "NamespacesQuery",
    "RecallQuery",
    "context_query",
    "count_query",
    "delete_matching",
    "export_query",
    "imported_records",
    "index_wait",
    "list_query",
    "memory_id",
    "memory_update",
    "namespace",
    "namespace_prefix",
    "namespaces_query",
    "new_memories",
    "new_memory",
    "query_text",
    "recall_query",
]
