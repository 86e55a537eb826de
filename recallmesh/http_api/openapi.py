"""The OpenAPI 3.1 description of the HTTP/JSON API, generated from the protos (never written
by hand): every MemoryService method a POST path, every message a schema, the protos'
comments their descriptions.

  python -m recallmesh.http_api.openapi [--check]      (`make openapi`)

writes recallmesh/http_api/openapi.json (package data: GET /openapi.json serves it) from
protos/recallmesh/v1/memory.proto, compiled with its comments by grpc_tools.protoc (the
stubs' compiler: the `dev` extra); --check exits 1 when the committed file is not what the
protos give. The JSON mapping is protobuf's (transcode.py): snake_case names, 64-bit integers
as strings, enums by name, Timestamp as RFC 3339, FieldMask as a comma-separated string.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from importlib import resources
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
PROTO = "recallmesh/v1/memory.proto"
SERVICE = "recallmesh.v1.MemoryService"
OUT = Path(__file__).with_name("openapi.json")

# FieldDescriptorProto.Type -> the JSON schema of its value in protobuf's JSON mapping
_SCALARS: dict[int, dict[str, Any]] = {
    1: {"type": "number", "format": "double"}, 2: {"type": "number", "format": "float"},
    3: {"type": ["string", "integer"], "format": "int64"},
    4: {"type": ["string", "integer"], "format": "uint64"},
    5: {"type": "integer", "format": "int32"},
    6: {"type": ["string", "integer"], "format": "uint64"},
    7: {"type": "integer", "format": "uint32"}, 8: {"type": "boolean"}, 9: {"type": "string"},
    12: {"type": "string", "format": "byte"}, 13: {"type": "integer", "format": "uint32"},
    15: {"type": "integer", "format": "int32"},
    16: {"type": ["string", "integer"], "format": "int64"},
    17: {"type": "integer", "format": "int32"},
    18: {"type": ["string", "integer"], "format": "int64"},
}
_WELL_KNOWN: dict[str, dict[str, Any]] = {
    ".google.protobuf.Timestamp": {"type": "string", "format": "date-time",
                                   "description": "RFC 3339, e.g. 2026-03-01T09:00:00Z"},
    ".google.protobuf.Duration": {"type": "string", "description": "seconds, e.g. 1.5s"},
    ".google.protobuf.FieldMask": {"type": "string",
                                   "description": "field paths, comma-separated"},
    ".google.protobuf.Struct": {"type": "object"},
    ".google.protobuf.Value": {},
    ".google.protobuf.Empty": {"type": "object"},
}
ERROR = {
    "type": "object", "required": ["code", "message"],
    "description": "A refusal: the gateway's gRPC status code in lower case and its message "
                   "(the HTTP status follows google.rpc.Code's mapping).",
    "properties": {"code": {"type": "string", "examples": ["invalid_argument"]},
                   "message": {"type": "string"}},
}


def descriptor_set() -> Any:
    """memory.proto and its imports, compiled with source info (comments)."""
    from google.protobuf import descriptor_pb2

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "set.pb"
        subprocess.run([sys.executable, "-m", "grpc_tools.protoc", f"-I{REPO / 'protos'}",
                        f"-I{resources.files('grpc_tools') / '_proto'}", "--include_imports",
                        "--include_source_info", f"--descriptor_set_out={out}", PROTO],
                       check=True, cwd=REPO)
        return descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())


def _comments(file: Any) -> dict[tuple[int, ...], str]:
    return {tuple(loc.path): " ".join(loc.leading_comments.split())
            for loc in file.source_code_info.location if loc.leading_comments.strip()}


class _Index:
    """Every message and enum of the descriptor set by full name, and where each message's
    comments are (the file's comments, the message's source path)."""

    def __init__(self, files: Any) -> None:
        self.enums: dict[str, list[str]] = {}
        self.messages: dict[str, Any] = {}
        self.comments_for: dict[str, tuple[dict[Any, str], tuple[int, ...]]] = {}
        for f in files:
            for e in f.enum_type:
                self.enums[f".{f.package}.{e.name}"] = [v.name for v in e.value]
        for f in files:
            self._walk(f.message_type, f".{f.package}", (4,), _comments(f))

    def _walk(self, messages: Any, scope: str, path: tuple[int, ...],
              comments: dict[Any, str]) -> None:
        for i, m in enumerate(messages):
            full = f"{scope}.{m.name}"
            for e in m.enum_type:
                self.enums[f"{full}.{e.name}"] = [v.name for v in e.value]
            self.messages[full] = m
            if m.options.map_entry:
                continue
            m_path = (*path, i)
            self.comments_for[full] = (comments, m_path)
            self._walk(m.nested_type, full, (*m_path, 3), comments)

    def field_schema(self, field: Any) -> dict[str, Any]:
        if field.type == 11:  # message
            entry = self.messages.get(field.type_name)
            if entry is not None and entry.options.map_entry:
                value = next(f for f in entry.field if f.name == "value")
                return {"type": "object", "additionalProperties": self.field_schema(value)}
            if field.type_name in _WELL_KNOWN:
                schema = dict(_WELL_KNOWN[field.type_name])
            else:
                schema = {"$ref": f"#/components/schemas/{_name_of(field.type_name)}"}
        elif field.type == 14:  # enum
            schema = {"type": "string", "enum": self.enums[field.type_name]}
        else:
            schema = dict(_SCALARS[field.type])
        if field.label == 3:  # repeated
            return {"type": "array", "items": schema}
        return schema

    def message_schema(self, full: str) -> tuple[dict[str, Any], list[str]]:
        """A message's schema, and the messages its fields name (to describe next)."""
        message = self.messages[full]
        comments, m_path = self.comments_for[full]
        properties: dict[str, Any] = {}
        named = []
        for k, field in enumerate(message.field):
            schema = self.field_schema(field)
            if said := comments.get((*m_path, 2, k)):
                schema = {**schema, "description": said} if "$ref" not in schema else {
                    "allOf": [schema], "description": said}
            properties[field.name] = schema
            if field.type == 11 and field.type_name not in _WELL_KNOWN:
                entry = self.messages[field.type_name]
                if entry.options.map_entry:
                    value = next(f for f in entry.field if f.name == "value")
                    if value.type == 11 and value.type_name not in _WELL_KNOWN:
                        named.append(value.type_name)
                else:
                    named.append(field.type_name)
        schema = {"type": "object", "properties": properties, "additionalProperties": False}
        if said := comments.get(m_path):
            schema["description"] = said
        return schema, named


def _name_of(full: str) -> str:
    return full.rsplit(".", 1)[-1] if full.count(".") <= 3 else "_".join(full.split(".")[3:])


def _schemas(index: _Index, service: Any) -> dict[str, Any]:
    """The schema of every message the service's methods take or give, and of those their
    fields name, by short name."""
    schemas: dict[str, Any] = {"Error": ERROR}
    pending = sorted({m.input_type for m in service.method}
                     | {m.output_type for m in service.method})
    done: set[str] = set()
    while pending:
        full = pending.pop()
        if full in done or full in _WELL_KNOWN:
            continue
        done.add(full)
        schemas[_name_of(full)], named = index.message_schema(full)
        pending += named
    return dict(sorted(schemas.items()))


def _paths(memory: Any, service: Any) -> dict[str, Any]:
    """One POST path per method, its request and response by reference."""
    service_index = list(memory.service).index(service)
    comments = _comments(memory)
    paths: dict[str, Any] = {}
    for k, method in enumerate(service.method):
        said = comments.get((6, service_index, 2, k), "")
        paths[f"/{SERVICE}/{method.name}"] = {"post": {
            "operationId": method.name,
            "summary": method.name,
            **({"description": said} if said else {}),
            "requestBody": {"required": True, "content": {"application/json": {
                "schema": {"$ref": f"#/components/schemas/{_name_of(method.input_type)}"}}}},
            "responses": {
                "200": {"description": "the response message", "content": {
                    "application/json": {"schema": {
                        "$ref": f"#/components/schemas/{_name_of(method.output_type)}"}}}},
                "default": {"description": "a refusal (400 invalid_argument, 401 "
                            "unauthenticated, 403 permission_denied, 404 not_found, 429 "
                            "resource_exhausted, 503 unavailable, 504 deadline_exceeded, ...)",
                            "content": {"application/json": {
                                "schema": {"$ref": "#/components/schemas/Error"}}}},
            },
        }}
    return paths


def generate() -> dict[str, Any]:
    files = descriptor_set().file
    memory = next(f for f in files if f.name == PROTO)
    service = _service(memory)
    return {
        "openapi": "3.1.0",
        "info": {"title": "recallmesh MemoryService (HTTP/JSON)", "version": "v1",
                 "description": "Every MemoryService RPC as POST /recallmesh.v1.MemoryService/"
                                "<Method> with the request message as JSON (the Connect "
                                "protocol's unary JSON; docs/http.md). Generated from "
                                "protos/recallmesh/v1/memory.proto by `make openapi`."},
        "servers": [{"url": "http://localhost:8081"}],
        "security": [{"bearer": []}],
        "paths": _paths(memory, service),
        "components": {"schemas": _schemas(_Index(files), service), "securitySchemes": {
            "bearer": {"type": "http", "scheme": "bearer",
                       "description": "a recallmesh API key (rmk_...) or a JWT"}}},
    }


def _service(file: Any) -> Any:
    return next(s for s in file.service if f"{file.package}.{s.name}" == SERVICE)


def text() -> str:
    return json.dumps(generate(), indent=1, ensure_ascii=False) + "\n"


def document() -> dict[str, Any]:
    """The committed description (package data), as GET /openapi.json serves it."""
    raw = resources.files("recallmesh.http_api").joinpath("openapi.json").read_text("utf-8")
    loaded: dict[str, Any] = json.loads(raw)
    return loaded


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m recallmesh.http_api.openapi")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if the committed file is not what the protos give")
    args = parser.parse_args(argv)
    generated = text()
    if args.check:
        if OUT.read_text(encoding="utf-8") != generated:
            print(f"{OUT} is stale: run `make openapi`", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(generated, encoding="utf-8")
    print(f"wrote {OUT.relative_to(REPO)} ({len(generated)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
