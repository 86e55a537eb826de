from recallmesh.v1 import memory_pb2 as _memory_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SearchRequest(_message.Message):
    __slots__ = ("namespace", "query", "query_vector", "k", "filters", "sort_by", "vector_model", "ranking", "bm25_k1", "bm25_b", "seed_memory_ids")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    QUERY_VECTOR_FIELD_NUMBER: _ClassVar[int]
    K_FIELD_NUMBER: _ClassVar[int]
    FILTERS_FIELD_NUMBER: _ClassVar[int]
    SORT_BY_FIELD_NUMBER: _ClassVar[int]
    VECTOR_MODEL_FIELD_NUMBER: _ClassVar[int]
    RANKING_FIELD_NUMBER: _ClassVar[int]
    BM25_K1_FIELD_NUMBER: _ClassVar[int]
    BM25_B_FIELD_NUMBER: _ClassVar[int]
    SEED_MEMORY_IDS_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    query: str
    query_vector: _containers.RepeatedScalarFieldContainer[float]
    k: int
    filters: _memory_pb2.RecallFilters
    sort_by: _memory_pb2.SortBy
    vector_model: str
    ranking: str
    bm25_k1: float
    bm25_b: float
    seed_memory_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, namespace: _Optional[str] = ..., query: _Optional[str] = ..., query_vector: _Optional[_Iterable[float]] = ..., k: _Optional[int] = ..., filters: _Optional[_Union[_memory_pb2.RecallFilters, _Mapping]] = ..., sort_by: _Optional[_Union[_memory_pb2.SortBy, str]] = ..., vector_model: _Optional[str] = ..., ranking: _Optional[str] = ..., bm25_k1: _Optional[float] = ..., bm25_b: _Optional[float] = ..., seed_memory_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class Candidate(_message.Message):
    __slots__ = ("memory_id", "score", "importance", "exact_match", "reason", "sensitive")
    MEMORY_ID_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    IMPORTANCE_FIELD_NUMBER: _ClassVar[int]
    EXACT_MATCH_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    SENSITIVE_FIELD_NUMBER: _ClassVar[int]
    memory_id: str
    score: float
    importance: float
    exact_match: bool
    reason: str
    sensitive: bool
    def __init__(self, memory_id: _Optional[str] = ..., score: _Optional[float] = ..., importance: _Optional[float] = ..., exact_match: _Optional[bool] = ..., reason: _Optional[str] = ..., sensitive: _Optional[bool] = ...) -> None: ...

class SearchResponse(_message.Message):
    __slots__ = ("candidates", "diagnostics", "score_min", "score_max", "score_scale", "score_floor")
    class DiagnosticsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CANDIDATES_FIELD_NUMBER: _ClassVar[int]
    DIAGNOSTICS_FIELD_NUMBER: _ClassVar[int]
    SCORE_MIN_FIELD_NUMBER: _ClassVar[int]
    SCORE_MAX_FIELD_NUMBER: _ClassVar[int]
    SCORE_SCALE_FIELD_NUMBER: _ClassVar[int]
    SCORE_FLOOR_FIELD_NUMBER: _ClassVar[int]
    candidates: _containers.RepeatedCompositeFieldContainer[Candidate]
    diagnostics: _containers.ScalarMap[str, str]
    score_min: float
    score_max: float
    score_scale: float
    score_floor: float
    def __init__(self, candidates: _Optional[_Iterable[_Union[Candidate, _Mapping]]] = ..., diagnostics: _Optional[_Mapping[str, str]] = ..., score_min: _Optional[float] = ..., score_max: _Optional[float] = ..., score_scale: _Optional[float] = ..., score_floor: _Optional[float] = ...) -> None: ...
