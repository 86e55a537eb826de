"""Small helpers for talking to the gateway in tests."""

from __future__ import annotations

from typing import Any

import grpc
import psycopg
import pytest

from recallmesh.v1 import memory_pb2


def store(gateway: Any, ns: str, content: str, **fields: Any) -> str:
    memory = memory_pb2.Memory(content=content, **fields)
    return gateway.Store(memory_pb2.StoreRequest(namespace=ns, memory=memory), timeout=10).memory.id


def recall(gateway: Any, ns: str, query: str, **fields: Any) -> Any:
    return gateway.Recall(memory_pb2.RecallRequest(namespace=ns, query=query, **fields), timeout=10)


def recalled_contents(gateway: Any, ns: str, query: str, **fields: Any) -> list[str]:
    return [h.memory.content for h in recall(gateway, ns, query, **fields).hits]


def expect_status(code: grpc.StatusCode, call: Any, *args: Any, **kwargs: Any) -> str:
    with pytest.raises(grpc.RpcError) as info:
        call(*args, timeout=10, **kwargs)
    assert info.value.code() == code, info.value.details()
    return info.value.details()


def row_count(db: psycopg.Connection) -> int:
    return db.execute("SELECT count(*) FROM memories").fetchone()[0]
