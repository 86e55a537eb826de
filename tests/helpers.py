"""Small helpers for talking to the gateway, for the product's tests and the lab alike."""

from __future__ import annotations

import time
import uuid
from dataclasses import replace
from typing import Any, TypeVar

import grpc
import psycopg
import pytest

from recallmesh.client import BatchResult, Client, NewMemory
from recallmesh.v1 import memory_pb2
from recallmesh.wire.validation import MAX_INDEX_WAIT_MS

Row = TypeVar("Row")


def store(gateway: Any, ns: str, content: str, **fields: Any) -> str:
    memory = memory_pb2.Memory(content=content, **fields)
    stored: memory_pb2.StoreResponse = gateway.Store(
        memory_pb2.StoreRequest(namespace=ns, memory=memory), timeout=10)
    return stored.memory.id


def recall(gateway: Any, ns: str, query: str, **fields: Any) -> memory_pb2.RecallResponse:
    response: memory_pb2.RecallResponse = gateway.Recall(
        memory_pb2.RecallRequest(namespace=ns, query=query, **fields), timeout=10)
    return response


def recalled_contents(gateway: Any, ns: str, query: str, **fields: Any) -> list[str]:
    return [h.memory.content for h in recall(gateway, ns, query, **fields).hits]


def expect_status(code: grpc.StatusCode, call: Any, *args: Any, **kwargs: Any) -> str:
    with pytest.raises(grpc.RpcError) as info:
        call(*args, timeout=10, **kwargs)
    assert info.value.code() == code, info.value.details()
    details: str = info.value.details()
    return details


def one_row(cursor: psycopg.Cursor[Row]) -> Row:
    """The row a query returned (a query in a test that returns none fails it)."""
    row = cursor.fetchone()
    assert row is not None
    return row


def row_count(db: psycopg.Connection) -> int:
    count: int = one_row(db.execute("SELECT count(*) FROM memories"))[0]
    return count


# The internal credential of services a test starts one by one (`recallmesh serve`).
INTERNAL_TOKEN = "tests-internal-token-0123456789abcdefghijklmnop"


def api_key(dsn: str, grants: tuple[str, ...] = ("*",),
            scopes: tuple[str, ...] = ("read", "write", "admin"), name: str = "test",
            expires_at: Any = None) -> str:
    """A new API key written straight into the database (as `keys create --database`)."""
    from recallmesh.auth.keys import insert_key
    from recallmesh.auth.principal import parse_scopes

    with psycopg.connect(dsn, autocommit=True) as conn:
        token, _ = insert_key(conn, name, grants, parse_scopes(scopes), "tests", expires_at)
    return token


def image_healthcheck() -> Any:
    """docker/healthcheck.py (the image's HEALTHCHECK, the TLS pods' exec probe), imported."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "docker" / "healthcheck.py"
    spec = importlib.util.spec_from_file_location("recallmesh_image_healthcheck", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def store_batch_indexed(client: Client, namespace: str, memories: list[NewMemory],
                        timeout_s: float = 600.0) -> BatchResult:
    """StoreBatch `memories` and return once every one is indexed, within timeout_s: a write's
    own wait ends after MAX_INDEX_WAIT_MS, so the memories get client-supplied ids and the
    same batch is sent again (a retry: it stores nothing and waits again) until `indexed`.
    SystemExit when they are not indexed in time. Returns the last answer (its ids in the
    order of `memories`)."""
    batch = [m if m.id else replace(m, id=str(uuid.uuid4())) for m in memories]
    deadline = time.monotonic() + timeout_s
    while True:
        result = client.store_batch(batch, namespace=namespace,
                                    wait_indexed=MAX_INDEX_WAIT_MS / 1000,
                                    timeout=MAX_INDEX_WAIT_MS / 1000 + 60)
        if result.indexed:
            return result
        if time.monotonic() >= deadline:
            raise SystemExit(f"{len(memories)} memories were stored but not indexed within "
                             f"{timeout_s:.0f} s: a slower model (or a busy machine) needs "
                             "smaller batches")
