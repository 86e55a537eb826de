import datetime

from google.protobuf import field_mask_pb2 as _field_mask_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class RelationType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RELATION_TYPE_UNSPECIFIED: _ClassVar[RelationType]
    RELATION_TYPE_SUPERSEDES: _ClassVar[RelationType]
    RELATION_TYPE_DERIVED_FROM: _ClassVar[RelationType]
    RELATION_TYPE_REFERENCES: _ClassVar[RelationType]
    RELATION_TYPE_ABOUT: _ClassVar[RelationType]

class SortBy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SORT_BY_UNSPECIFIED: _ClassVar[SortBy]
    SORT_BY_RELEVANCE: _ClassVar[SortBy]
    SORT_BY_IMPORTANCE: _ClassVar[SortBy]
    SORT_BY_RECENCY: _ClassVar[SortBy]

class LegState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    LEG_STATE_UNSPECIFIED: _ClassVar[LegState]
    LEG_STATE_OK: _ClassVar[LegState]
    LEG_STATE_TIMEOUT: _ClassVar[LegState]
    LEG_STATE_ERROR: _ClassVar[LegState]
    LEG_STATE_SKIPPED: _ClassVar[LegState]

class ListOrder(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    LIST_ORDER_UNSPECIFIED: _ClassVar[ListOrder]
    LIST_ORDER_CREATED: _ClassVar[ListOrder]
    LIST_ORDER_UPDATED: _ClassVar[ListOrder]
    LIST_ORDER_IMPORTANCE: _ClassVar[ListOrder]
RELATION_TYPE_UNSPECIFIED: RelationType
RELATION_TYPE_SUPERSEDES: RelationType
RELATION_TYPE_DERIVED_FROM: RelationType
RELATION_TYPE_REFERENCES: RelationType
RELATION_TYPE_ABOUT: RelationType
SORT_BY_UNSPECIFIED: SortBy
SORT_BY_RELEVANCE: SortBy
SORT_BY_IMPORTANCE: SortBy
SORT_BY_RECENCY: SortBy
LEG_STATE_UNSPECIFIED: LegState
LEG_STATE_OK: LegState
LEG_STATE_TIMEOUT: LegState
LEG_STATE_ERROR: LegState
LEG_STATE_SKIPPED: LegState
LIST_ORDER_UNSPECIFIED: ListOrder
LIST_ORDER_CREATED: ListOrder
LIST_ORDER_UPDATED: ListOrder
LIST_ORDER_IMPORTANCE: ListOrder

class Memory(_message.Message):
    __slots__ = ("id", "namespace", "content", "category", "tags", "importance", "sensitive", "created_at", "updated_at", "valid_from", "valid_to", "metadata", "relations", "expires_at", "thread", "superseded_by", "deleted_at", "pinned")
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    CATEGORY_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    IMPORTANCE_FIELD_NUMBER: _ClassVar[int]
    SENSITIVE_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    VALID_FROM_FIELD_NUMBER: _ClassVar[int]
    VALID_TO_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    RELATIONS_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    THREAD_FIELD_NUMBER: _ClassVar[int]
    SUPERSEDED_BY_FIELD_NUMBER: _ClassVar[int]
    DELETED_AT_FIELD_NUMBER: _ClassVar[int]
    PINNED_FIELD_NUMBER: _ClassVar[int]
    id: str
    namespace: str
    content: str
    category: str
    tags: _containers.RepeatedScalarFieldContainer[str]
    importance: float
    sensitive: bool
    created_at: _timestamp_pb2.Timestamp
    updated_at: _timestamp_pb2.Timestamp
    valid_from: _timestamp_pb2.Timestamp
    valid_to: _timestamp_pb2.Timestamp
    metadata: _containers.ScalarMap[str, str]
    relations: _containers.RepeatedCompositeFieldContainer[MemoryRelation]
    expires_at: _timestamp_pb2.Timestamp
    thread: str
    superseded_by: str
    deleted_at: _timestamp_pb2.Timestamp
    pinned: bool
    def __init__(self, id: _Optional[str] = ..., namespace: _Optional[str] = ..., content: _Optional[str] = ..., category: _Optional[str] = ..., tags: _Optional[_Iterable[str]] = ..., importance: _Optional[float] = ..., sensitive: _Optional[bool] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., updated_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., valid_from: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., valid_to: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., metadata: _Optional[_Mapping[str, str]] = ..., relations: _Optional[_Iterable[_Union[MemoryRelation, _Mapping]]] = ..., expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., thread: _Optional[str] = ..., superseded_by: _Optional[str] = ..., deleted_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., pinned: _Optional[bool] = ...) -> None: ...

class MemoryRelation(_message.Message):
    __slots__ = ("type", "target_id")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    TARGET_ID_FIELD_NUMBER: _ClassVar[int]
    type: RelationType
    target_id: str
    def __init__(self, type: _Optional[_Union[RelationType, str]] = ..., target_id: _Optional[str] = ...) -> None: ...

class RecallFilters(_message.Message):
    __slots__ = ("categories", "tags", "created_after", "created_before", "tags_all", "tags_none", "threads", "metadata", "importance_min", "importance_max", "updated_after", "updated_before", "as_of")
    CATEGORIES_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    CREATED_AFTER_FIELD_NUMBER: _ClassVar[int]
    CREATED_BEFORE_FIELD_NUMBER: _ClassVar[int]
    TAGS_ALL_FIELD_NUMBER: _ClassVar[int]
    TAGS_NONE_FIELD_NUMBER: _ClassVar[int]
    THREADS_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    IMPORTANCE_MIN_FIELD_NUMBER: _ClassVar[int]
    IMPORTANCE_MAX_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AFTER_FIELD_NUMBER: _ClassVar[int]
    UPDATED_BEFORE_FIELD_NUMBER: _ClassVar[int]
    AS_OF_FIELD_NUMBER: _ClassVar[int]
    categories: _containers.RepeatedScalarFieldContainer[str]
    tags: _containers.RepeatedScalarFieldContainer[str]
    created_after: _timestamp_pb2.Timestamp
    created_before: _timestamp_pb2.Timestamp
    tags_all: _containers.RepeatedScalarFieldContainer[str]
    tags_none: _containers.RepeatedScalarFieldContainer[str]
    threads: _containers.RepeatedScalarFieldContainer[str]
    metadata: _containers.RepeatedCompositeFieldContainer[MetadataFilter]
    importance_min: float
    importance_max: float
    updated_after: _timestamp_pb2.Timestamp
    updated_before: _timestamp_pb2.Timestamp
    as_of: _timestamp_pb2.Timestamp
    def __init__(self, categories: _Optional[_Iterable[str]] = ..., tags: _Optional[_Iterable[str]] = ..., created_after: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., created_before: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., tags_all: _Optional[_Iterable[str]] = ..., tags_none: _Optional[_Iterable[str]] = ..., threads: _Optional[_Iterable[str]] = ..., metadata: _Optional[_Iterable[_Union[MetadataFilter, _Mapping]]] = ..., importance_min: _Optional[float] = ..., importance_max: _Optional[float] = ..., updated_after: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., updated_before: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., as_of: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class MetadataFilter(_message.Message):
    __slots__ = ("key", "values")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    key: str
    values: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, key: _Optional[str] = ..., values: _Optional[_Iterable[str]] = ...) -> None: ...

class IndexWait(_message.Message):
    __slots__ = ("wait", "timeout_ms")
    WAIT_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    wait: bool
    timeout_ms: int
    def __init__(self, wait: _Optional[bool] = ..., timeout_ms: _Optional[int] = ...) -> None: ...

class StoreRequest(_message.Message):
    __slots__ = ("namespace", "memory", "index_wait")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    INDEX_WAIT_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    memory: Memory
    index_wait: IndexWait
    def __init__(self, namespace: _Optional[str] = ..., memory: _Optional[_Union[Memory, _Mapping]] = ..., index_wait: _Optional[_Union[IndexWait, _Mapping]] = ...) -> None: ...

class StoreResponse(_message.Message):
    __slots__ = ("memory", "indexed", "existing")
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    INDEXED_FIELD_NUMBER: _ClassVar[int]
    EXISTING_FIELD_NUMBER: _ClassVar[int]
    memory: Memory
    indexed: bool
    existing: bool
    def __init__(self, memory: _Optional[_Union[Memory, _Mapping]] = ..., indexed: _Optional[bool] = ..., existing: _Optional[bool] = ...) -> None: ...

class StoreBatchRequest(_message.Message):
    __slots__ = ("namespace", "memories", "index_wait")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    MEMORIES_FIELD_NUMBER: _ClassVar[int]
    INDEX_WAIT_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    memories: _containers.RepeatedCompositeFieldContainer[Memory]
    index_wait: IndexWait
    def __init__(self, namespace: _Optional[str] = ..., memories: _Optional[_Iterable[_Union[Memory, _Mapping]]] = ..., index_wait: _Optional[_Union[IndexWait, _Mapping]] = ...) -> None: ...

class StoreBatchResponse(_message.Message):
    __slots__ = ("ids", "indexed", "existing")
    IDS_FIELD_NUMBER: _ClassVar[int]
    INDEXED_FIELD_NUMBER: _ClassVar[int]
    EXISTING_FIELD_NUMBER: _ClassVar[int]
    ids: _containers.RepeatedScalarFieldContainer[str]
    indexed: bool
    existing: _containers.RepeatedScalarFieldContainer[bool]
    def __init__(self, ids: _Optional[_Iterable[str]] = ..., indexed: _Optional[bool] = ..., existing: _Optional[_Iterable[bool]] = ...) -> None: ...

class UpdateRequest(_message.Message):
    __slots__ = ("namespace", "id", "memory", "update_mask", "index_wait")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    UPDATE_MASK_FIELD_NUMBER: _ClassVar[int]
    INDEX_WAIT_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    id: str
    memory: Memory
    update_mask: _field_mask_pb2.FieldMask
    index_wait: IndexWait
    def __init__(self, namespace: _Optional[str] = ..., id: _Optional[str] = ..., memory: _Optional[_Union[Memory, _Mapping]] = ..., update_mask: _Optional[_Union[_field_mask_pb2.FieldMask, _Mapping]] = ..., index_wait: _Optional[_Union[IndexWait, _Mapping]] = ...) -> None: ...

class UpdateResponse(_message.Message):
    __slots__ = ("memory", "indexed")
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    INDEXED_FIELD_NUMBER: _ClassVar[int]
    memory: Memory
    indexed: bool
    def __init__(self, memory: _Optional[_Union[Memory, _Mapping]] = ..., indexed: _Optional[bool] = ...) -> None: ...

class GetRequest(_message.Message):
    __slots__ = ("namespace", "id")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    id: str
    def __init__(self, namespace: _Optional[str] = ..., id: _Optional[str] = ...) -> None: ...

class GetResponse(_message.Message):
    __slots__ = ("memory",)
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    memory: Memory
    def __init__(self, memory: _Optional[_Union[Memory, _Mapping]] = ...) -> None: ...

class DeleteRequest(_message.Message):
    __slots__ = ("namespace", "id", "purge")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    PURGE_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    id: str
    purge: bool
    def __init__(self, namespace: _Optional[str] = ..., id: _Optional[str] = ..., purge: _Optional[bool] = ...) -> None: ...

class DeleteResponse(_message.Message):
    __slots__ = ("id", "deleted_at", "purged")
    ID_FIELD_NUMBER: _ClassVar[int]
    DELETED_AT_FIELD_NUMBER: _ClassVar[int]
    PURGED_FIELD_NUMBER: _ClassVar[int]
    id: str
    deleted_at: _timestamp_pb2.Timestamp
    purged: bool
    def __init__(self, id: _Optional[str] = ..., deleted_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., purged: _Optional[bool] = ...) -> None: ...

class DeleteNamespaceRequest(_message.Message):
    __slots__ = ("namespace",)
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    def __init__(self, namespace: _Optional[str] = ...) -> None: ...

class DeleteNamespaceResponse(_message.Message):
    __slots__ = ("memories_removed",)
    MEMORIES_REMOVED_FIELD_NUMBER: _ClassVar[int]
    memories_removed: int
    def __init__(self, memories_removed: _Optional[int] = ...) -> None: ...

class RecallRequest(_message.Message):
    __slots__ = ("namespace", "query", "k", "sort_by", "filters", "budget_ms", "explain", "fusion", "reference_time")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    K_FIELD_NUMBER: _ClassVar[int]
    SORT_BY_FIELD_NUMBER: _ClassVar[int]
    FILTERS_FIELD_NUMBER: _ClassVar[int]
    BUDGET_MS_FIELD_NUMBER: _ClassVar[int]
    EXPLAIN_FIELD_NUMBER: _ClassVar[int]
    FUSION_FIELD_NUMBER: _ClassVar[int]
    REFERENCE_TIME_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    query: str
    k: int
    sort_by: SortBy
    filters: RecallFilters
    budget_ms: int
    explain: bool
    fusion: FusionOverrides
    reference_time: _timestamp_pb2.Timestamp
    def __init__(self, namespace: _Optional[str] = ..., query: _Optional[str] = ..., k: _Optional[int] = ..., sort_by: _Optional[_Union[SortBy, str]] = ..., filters: _Optional[_Union[RecallFilters, _Mapping]] = ..., budget_ms: _Optional[int] = ..., explain: _Optional[bool] = ..., fusion: _Optional[_Union[FusionOverrides, _Mapping]] = ..., reference_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class FusionOverrides(_message.Message):
    __slots__ = ("method", "rrf_k", "weights", "importance_strength", "exact_bonus", "skip_legs", "leg_depth", "lexical_ranking", "bm25_k1", "bm25_b", "graph_second_stage", "context_hits", "context_next_weight", "context_prev_weight", "time_boost", "intent_routing", "min_score", "restated_similarity")
    class WeightsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    METHOD_FIELD_NUMBER: _ClassVar[int]
    RRF_K_FIELD_NUMBER: _ClassVar[int]
    WEIGHTS_FIELD_NUMBER: _ClassVar[int]
    IMPORTANCE_STRENGTH_FIELD_NUMBER: _ClassVar[int]
    EXACT_BONUS_FIELD_NUMBER: _ClassVar[int]
    SKIP_LEGS_FIELD_NUMBER: _ClassVar[int]
    LEG_DEPTH_FIELD_NUMBER: _ClassVar[int]
    LEXICAL_RANKING_FIELD_NUMBER: _ClassVar[int]
    BM25_K1_FIELD_NUMBER: _ClassVar[int]
    BM25_B_FIELD_NUMBER: _ClassVar[int]
    GRAPH_SECOND_STAGE_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_HITS_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_NEXT_WEIGHT_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_PREV_WEIGHT_FIELD_NUMBER: _ClassVar[int]
    TIME_BOOST_FIELD_NUMBER: _ClassVar[int]
    INTENT_ROUTING_FIELD_NUMBER: _ClassVar[int]
    MIN_SCORE_FIELD_NUMBER: _ClassVar[int]
    RESTATED_SIMILARITY_FIELD_NUMBER: _ClassVar[int]
    method: str
    rrf_k: int
    weights: _containers.ScalarMap[str, float]
    importance_strength: float
    exact_bonus: float
    skip_legs: _containers.RepeatedScalarFieldContainer[str]
    leg_depth: int
    lexical_ranking: str
    bm25_k1: float
    bm25_b: float
    graph_second_stage: bool
    context_hits: int
    context_next_weight: float
    context_prev_weight: float
    time_boost: float
    intent_routing: bool
    min_score: float
    restated_similarity: float
    def __init__(self, method: _Optional[str] = ..., rrf_k: _Optional[int] = ..., weights: _Optional[_Mapping[str, float]] = ..., importance_strength: _Optional[float] = ..., exact_bonus: _Optional[float] = ..., skip_legs: _Optional[_Iterable[str]] = ..., leg_depth: _Optional[int] = ..., lexical_ranking: _Optional[str] = ..., bm25_k1: _Optional[float] = ..., bm25_b: _Optional[float] = ..., graph_second_stage: _Optional[bool] = ..., context_hits: _Optional[int] = ..., context_next_weight: _Optional[float] = ..., context_prev_weight: _Optional[float] = ..., time_boost: _Optional[float] = ..., intent_routing: _Optional[bool] = ..., min_score: _Optional[float] = ..., restated_similarity: _Optional[float] = ...) -> None: ...

class LegContribution(_message.Message):
    __slots__ = ("leg", "rank", "score", "reason")
    LEG_FIELD_NUMBER: _ClassVar[int]
    RANK_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    leg: str
    rank: int
    score: float
    reason: str
    def __init__(self, leg: _Optional[str] = ..., rank: _Optional[int] = ..., score: _Optional[float] = ..., reason: _Optional[str] = ...) -> None: ...

class RecallHit(_message.Message):
    __slots__ = ("memory", "score", "legs")
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    LEGS_FIELD_NUMBER: _ClassVar[int]
    memory: Memory
    score: float
    legs: _containers.RepeatedCompositeFieldContainer[LegContribution]
    def __init__(self, memory: _Optional[_Union[Memory, _Mapping]] = ..., score: _Optional[float] = ..., legs: _Optional[_Iterable[_Union[LegContribution, _Mapping]]] = ...) -> None: ...

class LegStatus(_message.Message):
    __slots__ = ("leg", "state", "latency_ms", "candidates", "detail", "score_scale", "score_floor")
    LEG_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    LATENCY_MS_FIELD_NUMBER: _ClassVar[int]
    CANDIDATES_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    SCORE_SCALE_FIELD_NUMBER: _ClassVar[int]
    SCORE_FLOOR_FIELD_NUMBER: _ClassVar[int]
    leg: str
    state: LegState
    latency_ms: float
    candidates: int
    detail: str
    score_scale: float
    score_floor: float
    def __init__(self, leg: _Optional[str] = ..., state: _Optional[_Union[LegState, str]] = ..., latency_ms: _Optional[float] = ..., candidates: _Optional[int] = ..., detail: _Optional[str] = ..., score_scale: _Optional[float] = ..., score_floor: _Optional[float] = ...) -> None: ...

class RecallResponse(_message.Message):
    __slots__ = ("hits", "legs", "degraded", "fusion", "latency_ms", "time_window", "intent", "relevance_floor")
    HITS_FIELD_NUMBER: _ClassVar[int]
    LEGS_FIELD_NUMBER: _ClassVar[int]
    DEGRADED_FIELD_NUMBER: _ClassVar[int]
    FUSION_FIELD_NUMBER: _ClassVar[int]
    LATENCY_MS_FIELD_NUMBER: _ClassVar[int]
    TIME_WINDOW_FIELD_NUMBER: _ClassVar[int]
    INTENT_FIELD_NUMBER: _ClassVar[int]
    RELEVANCE_FLOOR_FIELD_NUMBER: _ClassVar[int]
    hits: _containers.RepeatedCompositeFieldContainer[RecallHit]
    legs: _containers.RepeatedCompositeFieldContainer[LegStatus]
    degraded: bool
    fusion: str
    latency_ms: float
    time_window: TimeWindow
    intent: QueryIntent
    relevance_floor: float
    def __init__(self, hits: _Optional[_Iterable[_Union[RecallHit, _Mapping]]] = ..., legs: _Optional[_Iterable[_Union[LegStatus, _Mapping]]] = ..., degraded: _Optional[bool] = ..., fusion: _Optional[str] = ..., latency_ms: _Optional[float] = ..., time_window: _Optional[_Union[TimeWindow, _Mapping]] = ..., intent: _Optional[_Union[QueryIntent, _Mapping]] = ..., relevance_floor: _Optional[float] = ...) -> None: ...

class QueryIntent(_message.Message):
    __slots__ = ("name", "phrase")
    NAME_FIELD_NUMBER: _ClassVar[int]
    PHRASE_FIELD_NUMBER: _ClassVar[int]
    name: str
    phrase: str
    def __init__(self, name: _Optional[str] = ..., phrase: _Optional[str] = ...) -> None: ...

class TimeWindow(_message.Message):
    __slots__ = ("phrase", "start", "end", "boosted")
    PHRASE_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    BOOSTED_FIELD_NUMBER: _ClassVar[int]
    phrase: str
    start: _timestamp_pb2.Timestamp
    end: _timestamp_pb2.Timestamp
    boosted: int
    def __init__(self, phrase: _Optional[str] = ..., start: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., end: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., boosted: _Optional[int] = ...) -> None: ...

class ContextRequest(_message.Message):
    __slots__ = ("namespace", "query", "max_tokens", "k", "filters", "budget_ms", "reference_time", "include_sensitive", "min_score")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    MAX_TOKENS_FIELD_NUMBER: _ClassVar[int]
    K_FIELD_NUMBER: _ClassVar[int]
    FILTERS_FIELD_NUMBER: _ClassVar[int]
    BUDGET_MS_FIELD_NUMBER: _ClassVar[int]
    REFERENCE_TIME_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_SENSITIVE_FIELD_NUMBER: _ClassVar[int]
    MIN_SCORE_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    query: str
    max_tokens: int
    k: int
    filters: RecallFilters
    budget_ms: int
    reference_time: _timestamp_pb2.Timestamp
    include_sensitive: bool
    min_score: float
    def __init__(self, namespace: _Optional[str] = ..., query: _Optional[str] = ..., max_tokens: _Optional[int] = ..., k: _Optional[int] = ..., filters: _Optional[_Union[RecallFilters, _Mapping]] = ..., budget_ms: _Optional[int] = ..., reference_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., include_sensitive: _Optional[bool] = ..., min_score: _Optional[float] = ...) -> None: ...

class ContextItem(_message.Message):
    __slots__ = ("id", "score", "tokens", "created_at", "pinned")
    ID_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    PINNED_FIELD_NUMBER: _ClassVar[int]
    id: str
    score: float
    tokens: int
    created_at: _timestamp_pb2.Timestamp
    pinned: bool
    def __init__(self, id: _Optional[str] = ..., score: _Optional[float] = ..., tokens: _Optional[int] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., pinned: _Optional[bool] = ...) -> None: ...

class ContextResponse(_message.Message):
    __slots__ = ("text", "items", "tokens", "tokenizer", "superseded_omitted", "sensitive_omitted", "over_budget_omitted", "degraded", "latency_ms", "dated")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    TOKENIZER_FIELD_NUMBER: _ClassVar[int]
    SUPERSEDED_OMITTED_FIELD_NUMBER: _ClassVar[int]
    SENSITIVE_OMITTED_FIELD_NUMBER: _ClassVar[int]
    OVER_BUDGET_OMITTED_FIELD_NUMBER: _ClassVar[int]
    DEGRADED_FIELD_NUMBER: _ClassVar[int]
    LATENCY_MS_FIELD_NUMBER: _ClassVar[int]
    DATED_FIELD_NUMBER: _ClassVar[int]
    text: str
    items: _containers.RepeatedCompositeFieldContainer[ContextItem]
    tokens: int
    tokenizer: str
    superseded_omitted: int
    sensitive_omitted: int
    over_budget_omitted: int
    degraded: bool
    latency_ms: float
    dated: bool
    def __init__(self, text: _Optional[str] = ..., items: _Optional[_Iterable[_Union[ContextItem, _Mapping]]] = ..., tokens: _Optional[int] = ..., tokenizer: _Optional[str] = ..., superseded_omitted: _Optional[int] = ..., sensitive_omitted: _Optional[int] = ..., over_budget_omitted: _Optional[int] = ..., degraded: _Optional[bool] = ..., latency_ms: _Optional[float] = ..., dated: _Optional[bool] = ...) -> None: ...

class ListRequest(_message.Message):
    __slots__ = ("namespace", "filters", "order_by", "ascending", "page_size", "page_token", "include_deleted", "include_ended")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    FILTERS_FIELD_NUMBER: _ClassVar[int]
    ORDER_BY_FIELD_NUMBER: _ClassVar[int]
    ASCENDING_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_DELETED_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_ENDED_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    filters: RecallFilters
    order_by: ListOrder
    ascending: bool
    page_size: int
    page_token: str
    include_deleted: bool
    include_ended: bool
    def __init__(self, namespace: _Optional[str] = ..., filters: _Optional[_Union[RecallFilters, _Mapping]] = ..., order_by: _Optional[_Union[ListOrder, str]] = ..., ascending: _Optional[bool] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., include_deleted: _Optional[bool] = ..., include_ended: _Optional[bool] = ...) -> None: ...

class ListResponse(_message.Message):
    __slots__ = ("memories", "next_page_token")
    MEMORIES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    memories: _containers.RepeatedCompositeFieldContainer[Memory]
    next_page_token: str
    def __init__(self, memories: _Optional[_Iterable[_Union[Memory, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class CountRequest(_message.Message):
    __slots__ = ("namespace", "filters", "include_deleted", "include_ended")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    FILTERS_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_DELETED_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_ENDED_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    filters: RecallFilters
    include_deleted: bool
    include_ended: bool
    def __init__(self, namespace: _Optional[str] = ..., filters: _Optional[_Union[RecallFilters, _Mapping]] = ..., include_deleted: _Optional[bool] = ..., include_ended: _Optional[bool] = ...) -> None: ...

class CountResponse(_message.Message):
    __slots__ = ("count",)
    COUNT_FIELD_NUMBER: _ClassVar[int]
    count: int
    def __init__(self, count: _Optional[int] = ...) -> None: ...

class MemoryLink(_message.Message):
    __slots__ = ("type", "source_id", "target_id", "created_at")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_ID_FIELD_NUMBER: _ClassVar[int]
    TARGET_ID_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    type: RelationType
    source_id: str
    target_id: str
    created_at: _timestamp_pb2.Timestamp
    def __init__(self, type: _Optional[_Union[RelationType, str]] = ..., source_id: _Optional[str] = ..., target_id: _Optional[str] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class MemoryVersion(_message.Message):
    __slots__ = ("version", "memory", "replaced_at", "replaced_by", "changed", "imported_by")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    REPLACED_AT_FIELD_NUMBER: _ClassVar[int]
    REPLACED_BY_FIELD_NUMBER: _ClassVar[int]
    CHANGED_FIELD_NUMBER: _ClassVar[int]
    IMPORTED_BY_FIELD_NUMBER: _ClassVar[int]
    version: int
    memory: Memory
    replaced_at: _timestamp_pb2.Timestamp
    replaced_by: str
    changed: _containers.RepeatedScalarFieldContainer[str]
    imported_by: str
    def __init__(self, version: _Optional[int] = ..., memory: _Optional[_Union[Memory, _Mapping]] = ..., replaced_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., replaced_by: _Optional[str] = ..., changed: _Optional[_Iterable[str]] = ..., imported_by: _Optional[str] = ...) -> None: ...

class HistoryRequest(_message.Message):
    __slots__ = ("namespace", "id")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    id: str
    def __init__(self, namespace: _Optional[str] = ..., id: _Optional[str] = ...) -> None: ...

class HistoryResponse(_message.Message):
    __slots__ = ("memory", "versions", "relations", "versions_left_out", "relations_left_out")
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    VERSIONS_FIELD_NUMBER: _ClassVar[int]
    RELATIONS_FIELD_NUMBER: _ClassVar[int]
    VERSIONS_LEFT_OUT_FIELD_NUMBER: _ClassVar[int]
    RELATIONS_LEFT_OUT_FIELD_NUMBER: _ClassVar[int]
    memory: Memory
    versions: _containers.RepeatedCompositeFieldContainer[MemoryVersion]
    relations: _containers.RepeatedCompositeFieldContainer[MemoryLink]
    versions_left_out: int
    relations_left_out: int
    def __init__(self, memory: _Optional[_Union[Memory, _Mapping]] = ..., versions: _Optional[_Iterable[_Union[MemoryVersion, _Mapping]]] = ..., relations: _Optional[_Iterable[_Union[MemoryLink, _Mapping]]] = ..., versions_left_out: _Optional[int] = ..., relations_left_out: _Optional[int] = ...) -> None: ...

class MemoryRecord(_message.Message):
    __slots__ = ("memory", "relations", "versions", "versions_left_out")
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    RELATIONS_FIELD_NUMBER: _ClassVar[int]
    VERSIONS_FIELD_NUMBER: _ClassVar[int]
    VERSIONS_LEFT_OUT_FIELD_NUMBER: _ClassVar[int]
    memory: Memory
    relations: _containers.RepeatedCompositeFieldContainer[MemoryLink]
    versions: _containers.RepeatedCompositeFieldContainer[MemoryVersion]
    versions_left_out: int
    def __init__(self, memory: _Optional[_Union[Memory, _Mapping]] = ..., relations: _Optional[_Iterable[_Union[MemoryLink, _Mapping]]] = ..., versions: _Optional[_Iterable[_Union[MemoryVersion, _Mapping]]] = ..., versions_left_out: _Optional[int] = ...) -> None: ...

class ExportRequest(_message.Message):
    __slots__ = ("namespace", "filters", "page_size", "page_token")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    FILTERS_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    filters: RecallFilters
    page_size: int
    page_token: str
    def __init__(self, namespace: _Optional[str] = ..., filters: _Optional[_Union[RecallFilters, _Mapping]] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ExportResponse(_message.Message):
    __slots__ = ("records", "next_page_token")
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    records: _containers.RepeatedCompositeFieldContainer[MemoryRecord]
    next_page_token: str
    def __init__(self, records: _Optional[_Iterable[_Union[MemoryRecord, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ImportRequest(_message.Message):
    __slots__ = ("namespace", "records")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    records: _containers.RepeatedCompositeFieldContainer[MemoryRecord]
    def __init__(self, namespace: _Optional[str] = ..., records: _Optional[_Iterable[_Union[MemoryRecord, _Mapping]]] = ...) -> None: ...

class ImportResponse(_message.Message):
    __slots__ = ("imported", "unchanged", "relations_written", "relations_skipped")
    IMPORTED_FIELD_NUMBER: _ClassVar[int]
    UNCHANGED_FIELD_NUMBER: _ClassVar[int]
    RELATIONS_WRITTEN_FIELD_NUMBER: _ClassVar[int]
    RELATIONS_SKIPPED_FIELD_NUMBER: _ClassVar[int]
    imported: int
    unchanged: int
    relations_written: int
    relations_skipped: int
    def __init__(self, imported: _Optional[int] = ..., unchanged: _Optional[int] = ..., relations_written: _Optional[int] = ..., relations_skipped: _Optional[int] = ...) -> None: ...

class ListNamespacesRequest(_message.Message):
    __slots__ = ("prefix", "page_size", "page_token")
    PREFIX_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    prefix: str
    page_size: int
    page_token: str
    def __init__(self, prefix: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class NamespaceSummary(_message.Message):
    __slots__ = ("namespace", "memories", "pinned", "sensitive", "last_updated")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    MEMORIES_FIELD_NUMBER: _ClassVar[int]
    PINNED_FIELD_NUMBER: _ClassVar[int]
    SENSITIVE_FIELD_NUMBER: _ClassVar[int]
    LAST_UPDATED_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    memories: int
    pinned: int
    sensitive: int
    last_updated: _timestamp_pb2.Timestamp
    def __init__(self, namespace: _Optional[str] = ..., memories: _Optional[int] = ..., pinned: _Optional[int] = ..., sensitive: _Optional[int] = ..., last_updated: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class Caller(_message.Message):
    __slots__ = ("subject", "grants", "scopes", "kind")
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    GRANTS_FIELD_NUMBER: _ClassVar[int]
    SCOPES_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    subject: str
    grants: _containers.RepeatedScalarFieldContainer[str]
    scopes: _containers.RepeatedScalarFieldContainer[str]
    kind: str
    def __init__(self, subject: _Optional[str] = ..., grants: _Optional[_Iterable[str]] = ..., scopes: _Optional[_Iterable[str]] = ..., kind: _Optional[str] = ...) -> None: ...

class ListNamespacesResponse(_message.Message):
    __slots__ = ("namespaces", "next_page_token", "caller")
    NAMESPACES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    CALLER_FIELD_NUMBER: _ClassVar[int]
    namespaces: _containers.RepeatedCompositeFieldContainer[NamespaceSummary]
    next_page_token: str
    caller: Caller
    def __init__(self, namespaces: _Optional[_Iterable[_Union[NamespaceSummary, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., caller: _Optional[_Union[Caller, _Mapping]] = ...) -> None: ...

class DeleteMatchingRequest(_message.Message):
    __slots__ = ("namespace", "filters", "confirm", "purge", "sample_size")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    FILTERS_FIELD_NUMBER: _ClassVar[int]
    CONFIRM_FIELD_NUMBER: _ClassVar[int]
    PURGE_FIELD_NUMBER: _ClassVar[int]
    SAMPLE_SIZE_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    filters: RecallFilters
    confirm: bool
    purge: bool
    sample_size: int
    def __init__(self, namespace: _Optional[str] = ..., filters: _Optional[_Union[RecallFilters, _Mapping]] = ..., confirm: _Optional[bool] = ..., purge: _Optional[bool] = ..., sample_size: _Optional[int] = ...) -> None: ...

class DeleteMatchingResponse(_message.Message):
    __slots__ = ("matched", "deleted", "sample", "purged")
    MATCHED_FIELD_NUMBER: _ClassVar[int]
    DELETED_FIELD_NUMBER: _ClassVar[int]
    SAMPLE_FIELD_NUMBER: _ClassVar[int]
    PURGED_FIELD_NUMBER: _ClassVar[int]
    matched: int
    deleted: int
    sample: _containers.RepeatedCompositeFieldContainer[Memory]
    purged: bool
    def __init__(self, matched: _Optional[int] = ..., deleted: _Optional[int] = ..., sample: _Optional[_Iterable[_Union[Memory, _Mapping]]] = ..., purged: _Optional[bool] = ...) -> None: ...
