"""Shared fixtures: a throwaway embedded Postgres and the real services on free ports.

A pytest plugin (the repository's conftest.py loads it) rather than tests/conftest.py, so that the
product's tests (tests/) and the lab's (benchmarks/tests/) share one Postgres and one stack per
session."""

from __future__ import annotations

import contextlib
import os
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import grpc
import psycopg
import pytest

from recallmesh.embedding_models.manifest import DEFAULT_MODEL, ModelManifest
from recallmesh.migrations.vector_schema import prepare_database
from recallmesh.shared.embedded import embedded_dsn, start_embedded
from recallmesh.stack.supervisor import Stack, free_port_env
from recallmesh.v1 import memory_pb2_grpc
from tests.models import suite_manifest
from tests.recording_embedder import RecordingEmbedder, start_recording_embedder


def stack_env(data_dir: Path, dsn: str, **extra: str) -> dict[str, str]:
    """Environment for a Stack on free ports against `dsn`."""
    env = {
        "RECALLMESH_DSN": dsn,
        "RECALLMESH_DATA_DIR": str(data_dir),
        "RECALLMESH_DB_POOL_MAX": "4",
        # Retry quickly when a test stops the embedding service.
        "RECALLMESH_INDEXER_MAX_BACKOFF_S": "1",
        "RECALLMESH_INDEXER_POLL_S": "0.5",
        **free_port_env(),
    }
    env.update(extra)
    return env


@pytest.fixture(scope="session")
def pg_dir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="recallmesh-test-") as tmp:
        yield Path(tmp)


@pytest.fixture(scope="session")
def servers(pg_dir: Path) -> Iterator[dict[str, str]]:
    """Two throwaway embedded Postgres servers, each with a migrated database, started before
    any test runs gRPC threads (a server started later forks as another user from a threaded
    process): "plain" without pg_textsearch, which the session's stack and most tests use (its
    lexical leg on the SQL BM25), and "bm25" with it, for the tests of the BM25 index. The index
    is not loaded where the whole suite runs: pg_textsearch 1.0 leaves a backend that stops
    accepting ProcSignalBarriers, and the suite drops many scratch databases
    (docs/decisions/0018-bm25-index.md, "Known issue")."""
    plain = start_embedded(pg_dir / "pg", cleanup_mode="delete", textsearch=False)
    bm25 = start_embedded(pg_dir / "pg-bm25", cleanup_mode="delete", textsearch=True)
    urls = {"plain": embedded_dsn(plain), "bm25": embedded_dsn(bm25)}
    for url in urls.values():
        prepare_database(url)
    yield urls
    plain.cleanup()
    bm25.cleanup()


@pytest.fixture(scope="session")
def dsn(servers: dict[str, str]) -> str:
    """A migrated database on a throwaway embedded Postgres (without pg_textsearch)."""
    return servers["plain"]


@pytest.fixture(scope="session")
def bm25_dsn(servers: dict[str, str]) -> str:
    """A migrated database on a throwaway embedded Postgres with pg_textsearch and the BM25
    index."""
    return servers["bm25"]


@pytest.fixture(scope="session")
def bm25_admin_dsn(bm25_dsn: str) -> str:
    return psycopg.conninfo.make_conninfo(bm25_dsn, dbname="postgres")


@pytest.fixture(scope="session")
def admin_dsn(dsn: str) -> str:
    """DSN of the server's `postgres` database (for creating scratch databases)."""
    return psycopg.conninfo.make_conninfo(dsn, dbname="postgres")


@pytest.fixture(scope="session")
def stack_and_recorder(dsn: str, pg_dir: Path) -> Iterator[tuple[Stack, RecordingEmbedder]]:
    """Every service as its own process; the indexer embeds through a recording proxy. Its
    expiry sweeper is off: test_expiry checks what the reads do before a sweep (a sweep at a
    random moment purged the memory first, seen in CI) and runs the sweeper itself. Its
    indexer extracts concepts although its gateway does not ask the graph leg (the extractor's
    default, auto, would not): the graph tests ask it through a gateway of their own."""
    env = stack_env(pg_dir / "stack", dsn, RECALLMESH_EXPIRY_SWEEP_S="0",
                    RECALLMESH_CONCEPT_EXTRACTOR="spacy")
    recorder, server, address = start_recording_embedder(
        f"localhost:{env['RECALLMESH_EMBEDDING_PORT']}", dsn
    )
    env["RECALLMESH_INDEXER_EMBEDDING_TARGET"] = address
    s = Stack(env=env)
    s.start(timeout_s=60)
    yield s, recorder
    s.stop()
    server.stop(0)


@pytest.fixture(scope="session")
def stack(stack_and_recorder: tuple[Stack, RecordingEmbedder]) -> Stack:
    return stack_and_recorder[0]


@pytest.fixture(scope="session")
def recorder(stack_and_recorder: tuple[Stack, RecordingEmbedder]) -> RecordingEmbedder:
    return stack_and_recorder[1]


@contextlib.contextmanager
def extra_gateway(folder: Path, stack: Stack,
                  **env: str) -> Iterator[memory_pb2_grpc.MemoryServiceStub]:
    """Another gateway process over the session's services (sharing their internal
    credential), configured by `env`."""
    s = Stack(env=stack_env(folder, stack.dsn, RECALLMESH_INTERNAL_TOKEN=stack.internal_token,
                            **env), services=("gateway",))
    s.start(timeout_s=60)
    try:
        with s.dial() as ch:
            yield memory_pb2_grpc.MemoryServiceStub(ch)
    finally:
        s.stop()


@pytest.fixture(scope="session")
def lexical_gateway(stack: Stack, pg_dir: Path) -> Iterator[memory_pb2_grpc.MemoryServiceStub]:
    """A second gateway over the session's lexical leg only: the lexical baseline end to end."""
    with extra_gateway(pg_dir / "lexical-gateway", stack, RECALLMESH_LEGS="lexical",
                       RECALLMESH_LEXICAL_TARGET=stack.endpoints["lexical"],
                       RECALLMESH_FUSION_TARGET=stack.endpoints["fusion"]) as stub:
        yield stub


@pytest.fixture(scope="session")
def graph_gateway(stack: Stack, pg_dir: Path) -> Iterator[memory_pb2_grpc.MemoryServiceStub]:
    """A second gateway over the session's services with the graph leg as a third leg."""
    with extra_gateway(
        pg_dir / "graph-gateway", stack, RECALLMESH_LEGS="lexical,vector,graph",
        RECALLMESH_GRAPH_SECOND_STAGE_SEEDS="1",  # its tests can tell the one seed apart
        # The graph leg's scores have no fixed point yet (measured from its list's median),
        # so a relevance floor would cut by list position: its tests read every candidate.
        RECALLMESH_MIN_SCORE="0",
        **{f"RECALLMESH_{n.upper()}_TARGET": stack.endpoints[n]
           for n in ("lexical", "vector", "graph", "embedding", "fusion")},
    ) as stub:
        yield stub


@pytest.fixture(scope="session")
def channel(stack: Stack) -> Iterator[grpc.Channel]:
    with stack.dial() as ch:
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


@contextlib.contextmanager
def scratch_database(admin_dsn: str) -> Iterator[str]:
    """An empty database of its own on the session server, dropped afterwards."""
    name = f"scratch_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield psycopg.conninfo.make_conninfo(admin_dsn, dbname=name)
    finally:
        with psycopg.connect(admin_dsn, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


@pytest.fixture
def scratch_dsn(admin_dsn: str) -> Iterator[str]:
    with scratch_database(admin_dsn) as url:
        yield url


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Everything under tests/integration and benchmarks/tests/integration talks to a real
    Postgres and real gRPC servers: marked so, whether or not the file says it
    (`pytest -m "not integration"` runs the rest)."""
    for item in items:
        if "integration" in Path(str(item.path)).relative_to(config.rootpath).parts[:-1]:
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def manifest() -> ModelManifest:
    """The served model's manifest: RECALLMESH_EMBEDDING_MANIFEST, else the default model in
    the model cache (`make test-models` fetches it)."""
    if os.environ.get("RECALLMESH_EMBEDDING_MANIFEST", "").strip():
        return ModelManifest.load()
    return ModelManifest.load(suite_manifest(DEFAULT_MODEL))
