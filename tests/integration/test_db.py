"""Where a process finds its database: RECALLMESH_DSN, or a running embedded Postgres."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
import pytest

from recallmesh.shared.db import redact, resolve_dsn
from recallmesh.shared.embedded import NoDatabase, running_embedded_dsn
from recallmesh.stack.supervisor import free_port
from tests.helpers import INTERNAL_TOKEN, one_row

pytestmark = pytest.mark.integration


def test_configured_dsn_wins(monkeypatch: pytest.MonkeyPatch, dsn: str) -> None:
    monkeypatch.setenv("RECALLMESH_DSN", dsn)
    assert resolve_dsn() == dsn


def test_attaches_to_a_running_embedded_postgres(monkeypatch: pytest.MonkeyPatch, pg_dir: Path,
                                                 dsn: str) -> None:
    monkeypatch.delenv("RECALLMESH_DSN", raising=False)
    monkeypatch.setenv("RECALLMESH_DATA_DIR", str(pg_dir))  # the session server runs on pg_dir/pg
    attached = resolve_dsn()
    assert attached == running_embedded_dsn(pg_dir / "pg")
    with psycopg.connect(attached) as conn:
        assert one_row(conn.execute("SELECT to_regclass('memories')"))[0] == "memories"


def test_never_starts_a_server_it_would_leak(monkeypatch: pytest.MonkeyPatch,
                                             tmp_path: Path) -> None:
    monkeypatch.delenv("RECALLMESH_DSN", raising=False)
    monkeypatch.setenv("RECALLMESH_DATA_DIR", str(tmp_path))
    with pytest.raises(NoDatabase, match="recallmesh up"):
        resolve_dsn()
    assert not (tmp_path / "pg").exists()


def test_service_without_database_exits_with_a_clear_message(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "RECALLMESH_DSN"}
    env.update(RECALLMESH_DATA_DIR=str(tmp_path), RECALLMESH_INTERNAL_TOKEN=INTERNAL_TOKEN,
               RECALLMESH_LEXICAL_PORT=str(free_port()),
               RECALLMESH_LEXICAL_METRICS_PORT="0")
    result = subprocess.run([sys.executable, "-m", "recallmesh.services.lexical"], env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert "no database" in result.stderr and "Traceback" not in result.stderr


def test_redact_hides_passwords() -> None:
    assert "s3cret" not in redact("postgresql://app:s3cret@db.example:5432/recall")
    assert "db.example" in redact("postgresql://app:s3cret@db.example:5432/recall")


def test_a_pooled_connection_is_checked_by_round_trip_only_when_something_may_have_changed(
        monkeypatch: pytest.MonkeyPatch, dsn: str) -> None:
    """Pool.usable: one round-trip check when a connection is first handed out, none while it
    is in use, one again after it idled RECHECK_IDLE_S; a connection the server ended (its
    socket says so) is never handed out."""
    import asyncio

    from recallmesh.shared import db
    from recallmesh.shared.settings import PoolSettings

    checks: list[int] = []
    real = db.check_primary

    async def counted(conn: psycopg.AsyncConnection) -> None:
        checks.append(1)
        await real(conn)

    monkeypatch.setattr(db, "check_primary", counted)

    async def pid(pool: Any) -> int:
        async with pool.connection() as conn:
            row = await (await conn.execute("SELECT pg_backend_pid()")).fetchone()
            assert row is not None
            return int(row[0])

    async def scenario() -> None:
        pool = await db.open_pool(dsn, PoolSettings(1, 1, timeout_s=5), name="check-test")
        try:
            first = await pid(pool)
            for _ in range(5):
                assert await pid(pool) == first
            assert len(checks) == 1  # in use: no round trip
            monkeypatch.setattr(db, "RECHECK_IDLE_S", 0.0)
            assert await pid(pool) == first
            assert len(checks) == 2  # idle past RECHECK_IDLE_S: checked again
            monkeypatch.setattr(db, "RECHECK_IDLE_S", 60.0)
            with psycopg.connect(dsn, autocommit=True) as admin:
                admin.execute("SELECT pg_terminate_backend(%s)", (first,))
            await asyncio.sleep(0.2)
            assert await pid(pool) != first  # the ended connection was dropped, not handed out
        finally:
            await pool.close()

    asyncio.run(scenario())
