"""A minimal, tested migration runner.

Migrations are the files `NNNN_name.sql` of this package (package data, read through
importlib.resources, so an installed wheel migrates without a checkout), applied in version
order, each in its own transaction, under an advisory lock so concurrent starters do not
race. Applied versions are recorded in `schema_migrations` with a checksum; a
changed file whose version was already applied is an error (write a new
migration instead of editing an old one).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable

import psycopg

MIGRATIONS_DIR: Traversable = resources.files(__name__)
_FILE_RE = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
_LOCK_KEY = 0x7265_6361  # "reca": the advisory lock id of the runner


class MigrationError(RuntimeError):
    pass


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode()).hexdigest()


def discover(directory: Traversable = MIGRATIONS_DIR) -> list[Migration]:
    found: dict[int, Migration] = {}
    for path in sorted((p for p in directory.iterdir() if p.name.endswith(".sql")),
                       key=lambda p: p.name):
        match = _FILE_RE.match(path.name)
        if not match:
            raise MigrationError(f"migration file name must look like 0001_name.sql: {path.name}")
        version = int(match.group(1))
        if version in found:
            raise MigrationError(f"two migrations share version {version}")
        found[version] = Migration(version, match.group(2), path.read_text(encoding="utf-8"))
    return [found[v] for v in sorted(found)]


def apply_migrations(dsn: str, directory: Traversable = MIGRATIONS_DIR) -> list[int]:
    """Apply pending migrations; return the versions applied by this call."""
    migrations = discover(directory)
    applied_now: list[int] = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT pg_advisory_lock(%s)", (_LOCK_KEY,))
        try:
            conn.execute(
                """CREATE TABLE IF NOT EXISTS schema_migrations (
                       version integer PRIMARY KEY,
                       name text NOT NULL,
                       checksum text NOT NULL,
                       applied_at timestamptz NOT NULL DEFAULT now())"""
            )
            done = {
                row[0]: row[1]
                for row in conn.execute("SELECT version, checksum FROM schema_migrations")
            }
            for migration in migrations:
                if migration.version in done:
                    if done[migration.version] != migration.checksum:
                        raise MigrationError(
                            f"migration {migration.version:04d}_{migration.name} was changed "
                            "after it was applied; add a new migration instead"
                        )
                    continue
                with conn.transaction():
                    conn.execute(migration.sql)
                    conn.execute(
                        "INSERT INTO schema_migrations (version, name, checksum) "
                        "VALUES (%s, %s, %s)",
                        (migration.version, migration.name, migration.checksum),
                    )
                applied_now.append(migration.version)
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (_LOCK_KEY,))
    return applied_now


def current_version(dsn: str) -> int:
    """Highest applied version, 0 when none (or no table yet)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        found = conn.execute("SELECT to_regclass('schema_migrations')").fetchone()
        assert found is not None  # an aggregate / function call: always one row
        if found[0] is None:
            return 0
        row = conn.execute("SELECT coalesce(max(version), 0) FROM schema_migrations").fetchone()
        assert row is not None  # an aggregate / function call: always one row
        return int(row[0])


def latest_version(directory: Traversable = MIGRATIONS_DIR) -> int:
    migrations = discover(directory)
    return migrations[-1].version if migrations else 0
