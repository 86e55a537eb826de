"""HTTP/JSON for every MemoryService RPC, read from the service's descriptor (nothing per
method by hand): `POST /recallmesh.v1.MemoryService/<Method>` with the request message as
JSON, answered with the response message as JSON, the Connect protocol's unary JSON shape
(docs/decisions/0027-http-json.md).

JSON is protobuf's JSON mapping (google.protobuf.json_format): a request may name fields
either way (`max_tokens` or `maxTokens`), unknown fields are refused; a response names them
as the protos do (snake_case) and includes fields at their default (a `degraded: false` is
said, not left out). A refusal is the gateway's gRPC status as an HTTP status
(recallmesh.wire.http_status) and a body `{"code": "invalid_argument", "message": "..."}`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from google.protobuf import json_format
from google.protobuf.descriptor import MethodDescriptor, ServiceDescriptor
from google.protobuf.message import Message
from google.protobuf.message_factory import GetMessageClass

from recallmesh.v1 import memory_pb2
from recallmesh.wire.http_status import http_status

SERVICE: ServiceDescriptor = memory_pb2.DESCRIPTOR.services_by_name["MemoryService"]
PREFIX = f"/{SERVICE.full_name}/"


@dataclass(frozen=True)
class Method:
    """One RPC as HTTP serves it."""

    name: str
    path: str  # POST path, also the gRPC method's full name
    request: type[Message]
    response: type[Message]
    descriptor: MethodDescriptor


METHODS: dict[str, Method] = {
    m.name: Method(m.name, PREFIX + m.name, GetMessageClass(m.input_type),
                   GetMessageClass(m.output_type), m)
    for m in SERVICE.methods
}


class Refusal(Exception):
    """A request the HTTP front answers itself, with a gRPC code's name and a message."""

    def __init__(self, code: str, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status if status is not None else http_status(code)


def read_request(method: Method, body: bytes) -> Message:
    """The request message a JSON body holds; INVALID_ARGUMENT, in words, when it holds none."""
    if not body.strip():
        return method.request()  # an empty body is the empty message, as in Connect
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise Refusal("INVALID_ARGUMENT", "the body is not UTF-8 text") from None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise Refusal("INVALID_ARGUMENT", f"the body is not JSON: {str(exc)[:200]}") from None
    if not isinstance(value, dict):
        raise Refusal("INVALID_ARGUMENT",
                      f"the body must be a JSON object (a {method.request.DESCRIPTOR.name})")
    try:
        return json_format.ParseDict(value, method.request(), ignore_unknown_fields=False,
                                     max_recursion_depth=32)
    except (json_format.ParseError, ValueError, RecursionError) as exc:
        raise Refusal("INVALID_ARGUMENT", _parse_message(str(exc))) from None


def _parse_message(text: str) -> str:
    """json_format's message, without the message type's package."""
    return text.replace(f"{SERVICE.file.package}.", "")[:400] or "the body does not fit"


def response_json(message: Message) -> bytes:
    return json.dumps(json_format.MessageToDict(
        message, preserving_proto_field_name=True, always_print_fields_with_no_presence=True),
        ensure_ascii=False).encode("utf-8")


def error_json(code: str, message: str) -> bytes:
    """Connect's error body: the code in lower case (`invalid_argument`), the message."""
    return json.dumps({"code": code.lower(), "message": message},
                      ensure_ascii=False).encode("utf-8")


def describe() -> dict[str, Any]:
    """What GET / says: the service and its methods' paths."""
    return {"service": SERVICE.full_name,
            "methods": {name: m.path for name, m in METHODS.items()},
            "openapi": "/openapi.json"}
