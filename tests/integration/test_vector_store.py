"""Vectors from the on-disk store are the rows the model writes (issue 41's proof that a load
served from stored vectors equals the normal write path's).

The same memories are written through the real write path (gateway, outbox, indexer,
embedding service) three times: by the session's stack (no store), then by a stack with
RECALLMESH_EMBEDDING_VECTOR_STORE set, once with the store empty (every vector from the
model, then kept) and once more (every vector from the store). The stored rows must be equal,
column for column."""

from __future__ import annotations

import urllib.request
from pathlib import Path
from typing import Any

import psycopg
import pytest

from recallmesh.migrations.vector_schema import prepare_database
from recallmesh.stack.supervisor import Stack
from recallmesh.v1 import memory_pb2, memory_pb2_grpc
from tests.fixtures import scratch_database, stack_env

pytestmark = pytest.mark.integration

WAIT = memory_pb2.IndexWait(wait=True, timeout_ms=60000)
CONTENTS = [
    "Prefers window seats on long flights",
    "The staging database moved to eu-west-2 in March",
    "Allergic to penicillin",
    "Daughter's recital is on the 12th at 6pm",
    "Uses Neovim with the lazy.nvim plugin manager",
    "Wants invoices as PDF, never as spreadsheets",
    "東京の本社は品川にある",
    "Kubernetes upgrade to 1.31 is blocked on the ingress controller " * 60,  # past 512 tokens
]
COLUMNS = ("content, embedding::text, embedding_model, search_vector::text, content_key")


def write(stub: memory_pb2_grpc.MemoryServiceStub, ns: str) -> None:
    response = stub.StoreBatch(memory_pb2.StoreBatchRequest(
        namespace=ns, memories=[memory_pb2.Memory(content=c) for c in CONTENTS],
        index_wait=WAIT), timeout=120)
    assert response.indexed


def rows(dsn: str, ns: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(dsn) as db:
        found = db.execute(f"SELECT {COLUMNS} FROM memories WHERE namespace = %s "
                           "ORDER BY content", (ns,)).fetchall()
    assert len(found) == len(CONTENTS) and all(r[1] for r in found)
    return found


def store_hits(stack: Stack) -> float:
    text = urllib.request.urlopen(f"http://localhost:{stack.metrics['embedding']}/metrics",
                                  timeout=5).read().decode()
    prefix = 'recallmesh_embedding_vector_store_total{kind="document",result="hit"}'
    return sum(float(line.split()[-1]) for line in text.splitlines() if line.startswith(prefix))


def test_rows_written_from_stored_vectors_equal_the_model_s(
        admin_dsn: str, gateway: memory_pb2_grpc.MemoryServiceStub, stack: Stack, ns: str,
        tmp_path: Path) -> None:
    write(gateway, ns)
    reference = rows(stack.dsn, ns)
    with scratch_database(admin_dsn) as dsn:
        prepare_database(dsn)
        env = stack_env(tmp_path / "stack", dsn,
                        RECALLMESH_EMBEDDING_VECTOR_STORE=str(tmp_path / "vectors"))
        other = Stack(env=env)
        other.start(timeout_s=90)
        try:
            with other.dial() as channel:
                stub = memory_pb2_grpc.MemoryServiceStub(channel)
                write(stub, "cold")
                cold_hits = store_hits(other)
                write(stub, "warm")
                # every content a hit (and the concept names the graph writer embeds)
                assert store_hits(other) - cold_hits >= len(CONTENTS)
            cold, warm = rows(dsn, "cold"), rows(dsn, "warm")
        finally:
            other.stop()
    assert cold == reference
    assert warm == reference
    assert len(list((tmp_path / "vectors").glob("*.sqlite"))) == 1
