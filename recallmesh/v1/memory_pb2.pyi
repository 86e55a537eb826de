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

class Memory(_message.Message):
    __slots__ = ("id", "namespace", "content", "category", "tags", "importance", "sensitive", "created_at", "updated_at", "valid_from", "valid_to", "metadata", "relations", "expires_at", "thread", "superseded_by")
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
    def __init__(self, id: _Optional[str] = ..., namespace: _Optional[str] = ..., content: _Optional[str] = ..., category: _Optional[str] = ..., tags: _Optional[_Iterable[str]] = ..., importance: _Optional[float] = ..., sensitive: _Optional[bool] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., updated_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., valid_from: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., valid_to: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., metadata: _Optional[_Mapping[str, str]] = ..., relations: _Optional[_Iterable[_Union[MemoryRelation, _Mapping]]] = ..., expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., thread: _Optional[str] = ..., superseded_by: _Optional[str] = ...) -> None: ...

class MemoryRelation(_message.Message):
    __slots__ = ("type", "target_id")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    TARGET_ID_FIELD_NUMBER: _ClassVar[int]
    type: RelationType
    target_id: str
    def __init__(self, type: _Optional[_Union[RelationType, str]] = ..., target_id: _Optional[str] = ...) -> None: ...

class RecallFilters(_message.Message):
    __slots__ = ("categories", "tags", "created_after", "created_before")
    CATEGORIES_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    CREATED_AFTER_FIELD_NUMBER: _ClassVar[int]
    CREATED_BEFORE_FIELD_NUMBER: _ClassVar[int]
    categories: _containers.RepeatedScalarFieldContainer[str]
    tags: _containers.RepeatedScalarFieldContainer[str]
    created_after: _timestamp_pb2.Timestamp
    created_before: _timestamp_pb2.Timestamp
    def __init__(self, categories: _Optional[_Iterable[str]] = ..., tags: _Optional[_Iterable[str]] = ..., created_after: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., created_before: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

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
    __slots__ = ("hits", "legs", "degraded", "fusion", "latency_ms", "time_window", "intent")
    HITS_FIELD_NUMBER: _ClassVar[int]
    LEGS_FIELD_NUMBER: _ClassVar[int]
    DEGRADED_FIELD_NUMBER: _ClassVar[int]
    FUSION_FIELD_NUMBER: _ClassVar[int]
    LATENCY_MS_FIELD_NUMBER: _ClassVar[int]
    TIME_WINDOW_FIELD_NUMBER: _ClassVar[int]
    INTENT_FIELD_NUMBER: _ClassVar[int]
    hits: _containers.RepeatedCompositeFieldContainer[RecallHit]
    legs: _containers.RepeatedCompositeFieldContainer[LegStatus]
    degraded: bool
    fusion: str
    latency_ms: float
    time_window: TimeWindow
    intent: QueryIntent
    def __init__(self, hits: _Optional[_Iterable[_Union[RecallHit, _Mapping]]] = ..., legs: _Optional[_Iterable[_Union[LegStatus, _Mapping]]] = ..., degraded: _Optional[bool] = ..., fusion: _Optional[str] = ..., latency_ms: _Optional[float] = ..., time_window: _Optional[_Union[TimeWindow, _Mapping]] = ..., intent: _Optional[_Union[QueryIntent, _Mapping]] = ...) -> None: ...

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
    __slots__ = ("id", "score", "tokens", "created_at")
    ID_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    id: str
    score: float
    tokens: int
    created_at: _timestamp_pb2.Timestamp
    def __init__(self, id: _Optional[str] = ..., score: _Optional[float] = ..., tokens: _Optional[int] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

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
