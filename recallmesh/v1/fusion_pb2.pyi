from recallmesh.v1 import memory_pb2 as _memory_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class FusionMethod(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FUSION_METHOD_UNSPECIFIED: _ClassVar[FusionMethod]
    FUSION_METHOD_RRF: _ClassVar[FusionMethod]
    FUSION_METHOD_CC: _ClassVar[FusionMethod]
    FUSION_METHOD_CC_BOUNDED: _ClassVar[FusionMethod]
    FUSION_METHOD_CALIBRATED: _ClassVar[FusionMethod]
FUSION_METHOD_UNSPECIFIED: FusionMethod
FUSION_METHOD_RRF: FusionMethod
FUSION_METHOD_CC: FusionMethod
FUSION_METHOD_CC_BOUNDED: FusionMethod
FUSION_METHOD_CALIBRATED: FusionMethod

class FusionCandidate(_message.Message):
    __slots__ = ("memory_id", "score", "importance", "exact_match", "sensitive")
    MEMORY_ID_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    IMPORTANCE_FIELD_NUMBER: _ClassVar[int]
    EXACT_MATCH_FIELD_NUMBER: _ClassVar[int]
    SENSITIVE_FIELD_NUMBER: _ClassVar[int]
    memory_id: str
    score: float
    importance: float
    exact_match: bool
    sensitive: bool
    def __init__(self, memory_id: _Optional[str] = ..., score: _Optional[float] = ..., importance: _Optional[float] = ..., exact_match: _Optional[bool] = ..., sensitive: _Optional[bool] = ...) -> None: ...

class RankedList(_message.Message):
    __slots__ = ("leg", "weight", "candidates", "score_min", "score_max", "score_scale", "blind_to_sensitive", "score_floor")
    LEG_FIELD_NUMBER: _ClassVar[int]
    WEIGHT_FIELD_NUMBER: _ClassVar[int]
    CANDIDATES_FIELD_NUMBER: _ClassVar[int]
    SCORE_MIN_FIELD_NUMBER: _ClassVar[int]
    SCORE_MAX_FIELD_NUMBER: _ClassVar[int]
    SCORE_SCALE_FIELD_NUMBER: _ClassVar[int]
    BLIND_TO_SENSITIVE_FIELD_NUMBER: _ClassVar[int]
    SCORE_FLOOR_FIELD_NUMBER: _ClassVar[int]
    leg: str
    weight: float
    candidates: _containers.RepeatedCompositeFieldContainer[FusionCandidate]
    score_min: float
    score_max: float
    score_scale: float
    blind_to_sensitive: bool
    score_floor: float
    def __init__(self, leg: _Optional[str] = ..., weight: _Optional[float] = ..., candidates: _Optional[_Iterable[_Union[FusionCandidate, _Mapping]]] = ..., score_min: _Optional[float] = ..., score_max: _Optional[float] = ..., score_scale: _Optional[float] = ..., blind_to_sensitive: _Optional[bool] = ..., score_floor: _Optional[float] = ...) -> None: ...

class FusionSettings(_message.Message):
    __slots__ = ("method", "rrf_k", "importance_strength", "exact_bonus", "sort_by")
    METHOD_FIELD_NUMBER: _ClassVar[int]
    RRF_K_FIELD_NUMBER: _ClassVar[int]
    IMPORTANCE_STRENGTH_FIELD_NUMBER: _ClassVar[int]
    EXACT_BONUS_FIELD_NUMBER: _ClassVar[int]
    SORT_BY_FIELD_NUMBER: _ClassVar[int]
    method: FusionMethod
    rrf_k: int
    importance_strength: float
    exact_bonus: float
    sort_by: _memory_pb2.SortBy
    def __init__(self, method: _Optional[_Union[FusionMethod, str]] = ..., rrf_k: _Optional[int] = ..., importance_strength: _Optional[float] = ..., exact_bonus: _Optional[float] = ..., sort_by: _Optional[_Union[_memory_pb2.SortBy, str]] = ...) -> None: ...

class FuseRequest(_message.Message):
    __slots__ = ("lists", "settings", "limit")
    LISTS_FIELD_NUMBER: _ClassVar[int]
    SETTINGS_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    lists: _containers.RepeatedCompositeFieldContainer[RankedList]
    settings: FusionSettings
    limit: int
    def __init__(self, lists: _Optional[_Iterable[_Union[RankedList, _Mapping]]] = ..., settings: _Optional[_Union[FusionSettings, _Mapping]] = ..., limit: _Optional[int] = ...) -> None: ...

class FusedHit(_message.Message):
    __slots__ = ("memory_id", "score", "contributions")
    MEMORY_ID_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    CONTRIBUTIONS_FIELD_NUMBER: _ClassVar[int]
    memory_id: str
    score: float
    contributions: _containers.RepeatedCompositeFieldContainer[_memory_pb2.LegContribution]
    def __init__(self, memory_id: _Optional[str] = ..., score: _Optional[float] = ..., contributions: _Optional[_Iterable[_Union[_memory_pb2.LegContribution, _Mapping]]] = ...) -> None: ...

class FuseResponse(_message.Message):
    __slots__ = ("hits",)
    HITS_FIELD_NUMBER: _ClassVar[int]
    hits: _containers.RepeatedCompositeFieldContainer[FusedHit]
    def __init__(self, hits: _Optional[_Iterable[_Union[FusedHit, _Mapping]]] = ...) -> None: ...
