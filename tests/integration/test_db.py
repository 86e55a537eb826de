"""Where a process finds its database: RECALLMESH_DSN, or a running embedded Postgres."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from recallmesh.shared.db import NoDatabase, redact, resolve_dsn, running_embedded_dsn
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
