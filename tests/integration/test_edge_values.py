"""Issue 54's property test: every public RPC (MemoryService and KeyService) with fields at the
edges of their types, through real gRPC on the session's stack.

Each RPC starts from a valid request; its fields are found from the message descriptors (so a
field added later is fed too), down to records[0].versions[0].memory.importance. Edge values
by type: doubles at the single-precision limits (1e-50, 7e-46, the smallest single, just past
one and past the largest single), the smallest double, NaN and infinities; int32 and int64 at
their ends and just past the documented limits; strings empty, blank, NUL, bidi control,
129 and 5,000 characters, emoji, SQL; timestamps at and past the ends of their range, nanos
past a second; enum values that do not exist; ids upper case, in braces, or no id; metadata
keys blank or with NUL. `test_every_field_at_every_edge` sets one field at a time to every edge
value of its type; the hypothesis test sets several at once. Every answer is a status of the
documented set (never UNKNOWN, INTERNAL, or a retryable UNAVAILABLE for a request's content),
and afterwards no service has logged a traceback or an unhandled error for any of it.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recallmesh.stack.supervisor import Stack
from recallmesh.v1 import keys_pb2, keys_pb2_grpc, memory_pb2, memory_pb2_grpc

pytestmark = pytest.mark.integration

# What a request's content may get (docs/api.md, Errors): served, refused, or not there.
DOCUMENTED = {
    grpc.StatusCode.OK,
    grpc.StatusCode.INVALID_ARGUMENT,
    grpc.StatusCode.NOT_FOUND,
    grpc.StatusCode.ALREADY_EXISTS,
    grpc.StatusCode.FAILED_PRECONDITION,
    grpc.StatusCode.PERMISSION_DENIED,  # KeyService: a grant or scope the caller cannot hand on
    grpc.StatusCode.RESOURCE_EXHAUSTED,  # a request past gRPC's size limit
}

SMALLEST_SINGLE = 1.401298464324817e-45
DOUBLES = [1e-50, 7e-46, 5e-324, -1e-50, SMALLEST_SINGLE, 1.0000000001, 1.0001, 3.5e38, 1e308,
           -1e308, math.inf, -math.inf, math.nan, -0.0]
INT32 = [-1, 0, 101, 1001, 10_001, 60_001, 2**31 - 1, -(2**31)]
INT64 = INT32 + [2**63 - 1, -(2**63)]
STRINGS = ["", " ", "\x00", "a\x00b", "\u202e\u200b", "x" * 129, "y" * 5000, "😀" * 3,
           "'; DROP TABLE memories;--"]
TIMESTAMPS = [(-62_135_596_801, 0), (-62_135_596_800, 0), (253_402_300_799, 999_999_999),
              (253_402_300_800, 0), (0, 1_000_000_000), (0, -1), (2**62, 0)]
METADATA = [{" ": "v"}, {"": "v"}, {"\x00": "v"}, {"k": "\x00"}, {"k" * 129: "v"}]


def _id_like(name: str) -> bool:
    return name in ("id", "source_id", "target_id") or name.endswith("_id")


def edge_values(field: FieldDescriptor, ctx: dict[str, Any]) -> list[Any]:
    """The edge values of a field's type (a map field: whole dicts; a Timestamp: pairs)."""
    if field.message_type is not None:
        if field.message_type.GetOptions().map_entry:
            value = field.message_type.fields_by_name["value"]
            if value.type == FieldDescriptor.TYPE_STRING:
                return METADATA
            return [{"lexical": v} for v in edge_values(value, ctx)] + [{"": 0.5}, {" ": 0.5}]
        assert field.message_type.full_name == "google.protobuf.Timestamp"
        return TIMESTAMPS
    t = field.type
    if t in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        return [v for v in DOUBLES if t == FieldDescriptor.TYPE_DOUBLE or abs(v) < 3.4e38
                or not math.isfinite(v)]
    if t in (FieldDescriptor.TYPE_INT32, FieldDescriptor.TYPE_SINT32):
        return INT32
    if t in (FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_SINT64):
        return INT64
    if t == FieldDescriptor.TYPE_BOOL:
        return [True, False]
    if t == FieldDescriptor.TYPE_ENUM:
        return [max(v.number for v in field.enum_type.values) + 1, -1]
    if t == FieldDescriptor.TYPE_STRING:
        if _id_like(field.name):
            known = ctx["ids"][0]
            return ["", "not-an-id", known.upper(), "{" + known + "}", "\x00"]
        return STRINGS
    raise AssertionError(f"no edge values for {field.full_name}")


Path_ = tuple[str, ...]


def leaf_paths(descriptor: Descriptor, depth: int = 0) -> Iterator[tuple[Path_, FieldDescriptor]]:
    """Every field a value can be set on: scalars, repeated scalars, maps, Timestamps; nested
    messages (the first element of a repeated one) down to four levels."""
    for field in descriptor.fields:
        message = field.message_type
        if message is None or message.GetOptions().map_entry or \
                message.full_name == "google.protobuf.Timestamp":
            yield (field.name,), field
        elif depth < 3:
            for path, leaf in leaf_paths(message, depth + 1):
                yield (field.name, *path), leaf


def set_value(msg: Any, path: Path_, field: FieldDescriptor, value: Any) -> None:
    for name in path[:-1]:
        child = getattr(msg, name)
        f = msg.DESCRIPTOR.fields_by_name[name]
        if f.is_repeated:
            msg = child[0] if len(child) else child.add()
        else:
            child.SetInParent()
            msg = child
    name = path[-1]
    target = getattr(msg, name)
    if field.message_type is not None and field.message_type.GetOptions().map_entry:
        target.clear()
        target.update(value)
    elif field.message_type is not None:  # a Timestamp, or a repeated one
        stamp = (target.add() if field.is_repeated else target)
        stamp.seconds, stamp.nanos = value
    elif field.is_repeated:
        del target[:]
        target.append(value)
    else:
        setattr(msg, name, value)


def base_requests(ctx: dict[str, Any]) -> dict[str, Any]:
    """A valid request of every public RPC, naming the test's namespace and memories (the
    destructive ones another namespace). Its memories are sensitive, so that the hundreds of
    edge writes leave the indexer no backlog of embeddings for the tests after them (the
    sensitive edge, False, embeds a few)."""
    ns, ids, spare = ctx["ns"], ctx["ids"], ctx["ns"] + "-spare"
    tag = uuid.uuid4().hex[:8]  # each request's texts its own
    mask = ["content", "category", "tags", "importance", "sensitive", "metadata", "valid_from",
            "valid_to", "expires_at", "thread", "pinned"]
    record = memory_pb2.MemoryRecord(memory=memory_pb2.Memory(id=str(uuid.uuid4()),
                                                              content=f"imported edge note {tag}",
                                                              sensitive=True))
    record.memory.created_at.seconds = 1_767_225_600
    record.memory.updated_at.seconds = 1_767_229_200
    version = record.versions.add(version=1, replaced_by="edge", changed=["content"])
    version.memory.content = f"the first state {tag}"
    version.memory.sensitive = True
    version.memory.updated_at.seconds, version.replaced_at.seconds = 1_767_225_600, 1_767_229_200
    record.relations.add(type=memory_pb2.RELATION_TYPE_REFERENCES, target_id=ids[1])
    filters = memory_pb2.RecallFilters(tags=["build"])
    return {
        "Store": memory_pb2.StoreRequest(namespace=ns, memory=memory_pb2.Memory(
            content=f"an edge note about the build {tag}", sensitive=True)),
        "StoreBatch": memory_pb2.StoreBatchRequest(namespace=ns, memories=[memory_pb2.Memory(
            content=f"a batched edge note {tag}", sensitive=True)]),
        "Update": memory_pb2.UpdateRequest(
            namespace=ns, id=ids[0],
            memory=memory_pb2.Memory(content=f"an updated edge note {tag}", sensitive=True),
            update_mask={"paths": mask}),
        "Get": memory_pb2.GetRequest(namespace=ns, id=ids[0]),
        "Delete": memory_pb2.DeleteRequest(namespace=spare, id=ids[2]),
        "Recall": memory_pb2.RecallRequest(namespace=ns, query="the build", k=5,
                                           filters=filters),
        "Context": memory_pb2.ContextRequest(namespace=ns, query="the build", filters=filters),
        "List": memory_pb2.ListRequest(namespace=ns, filters=filters),
        "Count": memory_pb2.CountRequest(namespace=ns, filters=filters),
        "ListNamespaces": memory_pb2.ListNamespacesRequest(prefix=ns[:8], page_size=10),
        "History": memory_pb2.HistoryRequest(namespace=ns, id=ids[0]),
        "Export": memory_pb2.ExportRequest(namespace=ns, filters=filters),
        "Import": memory_pb2.ImportRequest(namespace=ns, records=[record]),
        "DeleteMatching": memory_pb2.DeleteMatchingRequest(
            namespace=spare, filters=memory_pb2.RecallFilters(tags=["nothing"])),
        "DeleteNamespace": memory_pb2.DeleteNamespaceRequest(namespace=ns + "-doomed"),
        "CreateApiKey": keys_pb2.CreateApiKeyRequest(name="edge", namespaces=[ns],
                                                     scopes=["read"]),
        "ListApiKeys": keys_pb2.ListApiKeysRequest(),
        "RevokeApiKey": keys_pb2.RevokeApiKeyRequest(id="0123456789abcdef"),
    }


# service -> (its descriptor, its stub class)
SERVICES: dict[str, tuple[Any, Callable[[grpc.Channel], object]]] = {
    "MemoryService": (memory_pb2.DESCRIPTOR.services_by_name["MemoryService"],
                      memory_pb2_grpc.MemoryServiceStub),
    "KeyService": (keys_pb2.DESCRIPTOR.services_by_name["KeyService"],
                   keys_pb2_grpc.KeyServiceStub),
}
RPCS = {method.name: service for service, (descriptor, _) in SERVICES.items()
        for method in descriptor.methods}


def _sensitive_texts_unique(msg: Any) -> None:
    """A memory marked sensitive gets a text no other memory has: the session's recording
    embedder (tests/recording_embedder.py) fails any text that some sensitive memory holds,
    which a non-sensitive edge write of the same text would trip."""
    for field, value in msg.ListFields():
        if field.message_type is None or field.message_type.GetOptions().map_entry:
            continue
        for child in (value if field.is_repeated else [value]):
            _sensitive_texts_unique(child)
    if msg.DESCRIPTOR.full_name == "recallmesh.v1.Memory" and msg.sensitive:
        msg.content += f" {uuid.uuid4().hex}"


# Past the longest wait a request can ask the server for (IndexWait, 60 s): the server answers
# within the call's deadline itself, so the client's is never the one that ends a call.
CALL_TIMEOUT_S = 90


def call(stack: Any, method: str, request: Any) -> tuple[grpc.StatusCode, str]:
    stub_class = SERVICES[RPCS[method]][1]
    _sensitive_texts_unique(request)
    with stack.dial() as channel:
        try:
            getattr(stub_class(channel), method)(request, timeout=CALL_TIMEOUT_S)
        except grpc.RpcError as exc:
            return exc.code(), exc.details() or ""
    return grpc.StatusCode.OK, ""


def check(method: str, request: Any, code: grpc.StatusCode, details: str, what: str) -> None:
    # a budget of the caller's own that no leg can meet is DEADLINE_EXCEEDED (docs/api.md)
    own_budget = getattr(request, "budget_ms", 0) > 0
    allowed = DOCUMENTED | ({grpc.StatusCode.DEADLINE_EXCEEDED} if own_budget else set())
    assert code in allowed, f"{method} {what}: {code.name}: {details}"
    assert "Traceback" not in details and "internal error" not in details


def _logs(stack: Any) -> dict[Path, int]:
    return {p: p.stat().st_size for p in (stack.data_dir / "logs").glob("*.log")}


@pytest.fixture(scope="module")
def edge_ctx(stack: Stack, gateway: memory_pb2_grpc.MemoryServiceStub
             ) -> Iterator[dict[str, Any]]:
    """The namespace the requests name, its memories, and the size of every service log
    before the first edge request."""
    ns = f"edges-{uuid.uuid4().hex[:8]}"
    ids = [gateway.Store(memory_pb2.StoreRequest(namespace=ns, memory=memory_pb2.Memory(
        content=f"a note about the build, number {i}", importance=i / 4, tags=["build"],
        sensitive=True)),
        timeout=10).memory.id for i in range(3)]
    yield {"ns": ns, "ids": ids, "logs": _logs(stack)}
    for name in (ns, ns + "-spare", ns + "-doomed"):  # and whatever the edges left to index
        gateway.DeleteNamespace(memory_pb2.DeleteNamespaceRequest(namespace=name), timeout=60)


def test_every_public_rpc_has_a_valid_base_request(stack: Stack, edge_ctx: dict[str, Any]) -> None:
    bases = base_requests(edge_ctx)
    assert set(bases) == set(RPCS)  # a new RPC needs its base request here
    for method, request in bases.items():
        code, details = call(stack, method, request)
        assert code in (grpc.StatusCode.OK, grpc.StatusCode.NOT_FOUND), (method, details)


@pytest.mark.parametrize("method", sorted(RPCS))
def test_every_field_at_every_edge(stack: Stack, edge_ctx: dict[str, Any], method: str) -> None:
    base = base_requests(edge_ctx)[method]
    failures = []
    for path, field in leaf_paths(base.DESCRIPTOR):
        for value in edge_values(field, edge_ctx):
            request = base_requests(edge_ctx)[method]  # fresh texts for each call
            set_value(request, path, field, value)
            code, details = call(stack, method, request)
            try:
                check(method, request, code, details, f"{'.'.join(path)}={value!r:.40}")
            except AssertionError as exc:
                failures.append(str(exc).splitlines()[0])
    assert failures == [], "\n".join(failures[:20])


@st.composite
def edged(draw: st.DrawFn, method: str, ctx: dict[str, Any]) -> Any:
    """The base request of `method` with one to four fields at drawn edge values."""
    base = base_requests(ctx)[method]
    paths = list(leaf_paths(base.DESCRIPTOR))
    request = type(base)()
    request.CopyFrom(base)
    for path, field in draw(st.lists(st.sampled_from(paths), min_size=1, max_size=4)):
        set_value(request, path, field, draw(st.sampled_from(edge_values(field, ctx))))
    return request


@pytest.mark.parametrize("method", sorted(RPCS))
@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_several_fields_at_their_edges(stack: Stack, edge_ctx: dict[str, Any], method: str,
                                       data: st.DataObject) -> None:
    request = data.draw(edged(method, edge_ctx))
    code, details = call(stack, method, request)
    check(method, request, code, details, str(request)[:200])


def test_no_service_logged_a_traceback_for_an_edge_value(stack: Stack,
                                                         edge_ctx: dict[str, Any]) -> None:
    """Runs after the RPCs above (file order): what every service wrote since."""
    bad = []
    for path in _logs(stack):
        with open(path, encoding="utf-8", errors="replace") as log:
            log.seek(edge_ctx["logs"].get(path, 0))
            for line in log:
                if "Traceback" in line or "unhandled error" in line:
                    bad.append(f"{path.name}: {line[:300]}")
    assert bad == [], "\n".join(bad[:10])
