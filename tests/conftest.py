"""Shared fixtures: a throwaway embedded Postgres and the real services on free ports."""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import grpc
import psycopg
import pytest

from recallmesh.v1 import memory_pb2_grpc
from shared.db import embedded_dsn, start_embedded
from shared.migrations import apply_migrations
from shared.supervisor import Stack, free_port_env


def stack_env(data_dir: Path, dsn: str, **extra: str) -> dict[str, str]:
    """Environment for a Stack on free ports against `dsn`."""
    env = {
        "RECALLMESH_DSN": dsn,
        "RECALLMESH_DATA_DIR": str(data_dir),
        "RECALLMESH_DB_POOL_MAX": "4",
        **free_port_env(),
    }
    env.update(extra)
    return env


@pytest.fixture(scope="session")
def pg_dir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="recallmesh-test-") as tmp:
        yield Path(tmp)


@pytest.fixture(scope="session")
def dsn(pg_dir: Path) -> Iterator[str]:
    """A migrated database on a throwaway embedded Postgres."""
    server = start_embedded(pg_dir / "pg", cleanup_mode="delete")
    url = embedded_dsn(server)
    apply_migrations(url)
    yield url
    server.cleanup()


@pytest.fixture(scope="session")
def admin_dsn(dsn: str) -> str:
    """DSN of the server's `postgres` database (for creating scratch databases)."""
    info = psycopg.conninfo.conninfo_to_dict(dsn)
    info["dbname"] = "postgres"
    return psycopg.conninfo.make_conninfo(**info)


@pytest.fixture(scope="session")
def stack(dsn: str, pg_dir: Path) -> Iterator[Stack]:
    """The real lexical leg and gateway as separate processes."""
    s = Stack(env=stack_env(pg_dir / "stack", dsn))
    s.start(timeout_s=60)
    yield s
    s.stop()


@pytest.fixture(scope="session")
def channel(stack: Stack) -> Iterator[grpc.Channel]:
    with grpc.insecure_channel(stack.endpoints["gateway"]) as ch:
        yield ch


@pytest.fixture(scope="session")
def gateway(channel: grpc.Channel) -> memory_pb2_grpc.MemoryServiceStub:
    return memory_pb2_grpc.MemoryServiceStub(channel)


@pytest.fixture
def ns() -> str:
    """A fresh namespace per test: tests never see each other's memories."""
    return f"test-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def db(dsn: str) -> Iterator[psycopg.Connection]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        yield conn
