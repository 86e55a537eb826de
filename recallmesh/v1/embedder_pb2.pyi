from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class EmbedKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    EMBED_KIND_UNSPECIFIED: _ClassVar[EmbedKind]
    EMBED_KIND_QUERY: _ClassVar[EmbedKind]
    EMBED_KIND_DOCUMENT: _ClassVar[EmbedKind]
EMBED_KIND_UNSPECIFIED: EmbedKind
EMBED_KIND_QUERY: EmbedKind
EMBED_KIND_DOCUMENT: EmbedKind

class EmbedRequest(_message.Message):
    __slots__ = ("texts", "kind")
    TEXTS_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    texts: _containers.RepeatedScalarFieldContainer[str]
    kind: EmbedKind
    def __init__(self, texts: _Optional[_Iterable[str]] = ..., kind: _Optional[_Union[EmbedKind, str]] = ...) -> None: ...

class Embedding(_message.Message):
    __slots__ = ("values",)
    VALUES_FIELD_NUMBER: _ClassVar[int]
    values: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, values: _Optional[_Iterable[float]] = ...) -> None: ...

class EmbedResponse(_message.Message):
    __slots__ = ("embeddings", "model_id", "dimension", "truncated")
    EMBEDDINGS_FIELD_NUMBER: _ClassVar[int]
    MODEL_ID_FIELD_NUMBER: _ClassVar[int]
    DIMENSION_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    embeddings: _containers.RepeatedCompositeFieldContainer[Embedding]
    model_id: str
    dimension: int
    truncated: int
    def __init__(self, embeddings: _Optional[_Iterable[_Union[Embedding, _Mapping]]] = ..., model_id: _Optional[str] = ..., dimension: _Optional[int] = ..., truncated: _Optional[int] = ...) -> None: ...

class ModelInfoRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ModelInfoResponse(_message.Message):
    __slots__ = ("model_id", "dimension", "max_tokens", "provider", "precision", "pooling", "max_texts_per_call", "provider_note")
    MODEL_ID_FIELD_NUMBER: _ClassVar[int]
    DIMENSION_FIELD_NUMBER: _ClassVar[int]
    MAX_TOKENS_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    PRECISION_FIELD_NUMBER: _ClassVar[int]
    POOLING_FIELD_NUMBER: _ClassVar[int]
    MAX_TEXTS_PER_CALL_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_NOTE_FIELD_NUMBER: _ClassVar[int]
    model_id: str
    dimension: int
    max_tokens: int
    provider: str
    precision: str
    pooling: str
    max_texts_per_call: int
    provider_note: str
    def __init__(self, model_id: _Optional[str] = ..., dimension: _Optional[int] = ..., max_tokens: _Optional[int] = ..., provider: _Optional[str] = ..., precision: _Optional[str] = ..., pooling: _Optional[str] = ..., max_texts_per_call: _Optional[int] = ..., provider_note: _Optional[str] = ...) -> None: ...
