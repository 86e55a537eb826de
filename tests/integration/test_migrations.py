"""The migration runner: applies in order, records versions, refuses edited history."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from recallmesh.migrations import (
    MIGRATIONS_DIR,
    MigrationError,
    apply_migrations,
    current_version,
    discover,
    latest_version,
)
from recallmesh.migrations.vector_schema import (
    VectorSchemaError,
    ensure_embedding_column,
    prepare_database,
)
from tests.helpers import one_row

pytestmark = pytest.mark.integration


def write(directory: Path, name: str, sql: str) -> None:
    (directory / name).write_text(sql)


def test_applies_in_version_order_once(scratch_dsn: str, tmp_path: Path) -> None:
    write(tmp_path, "0002_second.sql", "INSERT INTO t VALUES (2);")
    write(tmp_path, "0001_first.sql", "CREATE TABLE t (v int); INSERT INTO t VALUES (1);")
    assert apply_migrations(scratch_dsn, tmp_path) == [1, 2]
    assert apply_migrations(scratch_dsn, tmp_path) == []  # idempotent
    assert current_version(scratch_dsn) == 2
    with psycopg.connect(scratch_dsn) as conn:
        assert [r[0] for r in conn.execute("SELECT v FROM t ORDER BY v")] == [1, 2]
        names = [r[0] for r in conn.execute("SELECT name FROM schema_migrations ORDER BY version")]
    assert names == ["first", "second"]


def test_failed_migration_rolls_back_and_is_not_recorded(scratch_dsn: str, tmp_path: Path) -> None:
    write(tmp_path, "0001_ok.sql", "CREATE TABLE ok (v int);")
    write(tmp_path, "0002_broken.sql", "CREATE TABLE half (v int); SELECT no_such_function();")
    with pytest.raises(psycopg.Error):
        apply_migrations(scratch_dsn, tmp_path)
    assert current_version(scratch_dsn) == 1
    with psycopg.connect(scratch_dsn) as conn:
        assert one_row(conn.execute("SELECT to_regclass('half')"))[0] is None


def test_edited_applied_migration_is_refused(scratch_dsn: str, tmp_path: Path) -> None:
    write(tmp_path, "0001_first.sql", "CREATE TABLE t (v int);")
    apply_migrations(scratch_dsn, tmp_path)
    write(tmp_path, "0001_first.sql", "CREATE TABLE t (v bigint);")
    with pytest.raises(MigrationError, match="changed after it was applied"):
        apply_migrations(scratch_dsn, tmp_path)


def test_bad_file_names_and_duplicate_versions(tmp_path: Path) -> None:
    write(tmp_path, "1_short.sql", "")
    with pytest.raises(MigrationError, match="0001_name.sql"):
        discover(tmp_path)
    (tmp_path / "1_short.sql").unlink()
    write(tmp_path, "0001_a.sql", "")
    write(tmp_path, "0001_b.sql", "")
    with pytest.raises(MigrationError, match="share version 1"):
        discover(tmp_path)


def test_project_migrations_build_the_schema(scratch_dsn: str) -> None:
    assert current_version(scratch_dsn) == 0
    prepare_database(scratch_dsn)
    assert current_version(scratch_dsn) == latest_version() >= 1
    with psycopg.connect(scratch_dsn) as conn:
        assert conn.execute("SELECT extname FROM pg_extension WHERE extname = 'vector'").fetchone()
        conn.execute(
            "INSERT INTO memories (namespace, content, category, tags) "
            "VALUES ('n', 'Running shoes', 'gear', ARRAY['sport'])"
        )
        vector = one_row(conn.execute("SELECT search_vector::text FROM memories"))[0]
    # content at weight A, tags at C, category at D
    assert "'run':1A" in vector and "'sport':3C" in vector and "'gear':4" in vector


def test_vector_column_is_sized_from_the_manifest_and_guarded(scratch_dsn: str) -> None:
    prepare_database(scratch_dsn)
    with psycopg.connect(scratch_dsn) as conn:
        kind = one_row(conn.execute(
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
            "WHERE attrelid = 'memories'::regclass AND attname = 'embedding'"))[0]
        index = one_row(conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE indexname = 'memories_embedding_hnsw_idx'"
        ))[0]
    assert kind == "halfvec(768)"  # the default model, nomic-embed-text-v1.5
    assert "hnsw" in index and "halfvec_cosine_ops" in index and "m='16'" in index
    assert "ef_construction='64'" in index
    prepare_database(scratch_dsn)  # idempotent
    with pytest.raises(VectorSchemaError, match="768-dimensional.*1024"):
        ensure_embedding_column(scratch_dsn, 1024, "bigger-model")
    # Same dimension, another model: its vectors would not be comparable.
    with pytest.raises(VectorSchemaError, match="come from model 'nomic-embed.*'other-model'"):
        ensure_embedding_column(scratch_dsn, 768, "other-model")


def test_memories_stored_before_semantic_recall_get_embedding_jobs(scratch_dsn: str,
                                                                   tmp_path: Path) -> None:
    first = MIGRATIONS_DIR / "0001_memories.sql"
    (tmp_path / first.name).write_text(first.read_text())
    apply_migrations(scratch_dsn, tmp_path)  # a v1 database...
    with psycopg.connect(scratch_dsn, autocommit=True) as conn:
        conn.execute("INSERT INTO memories (namespace, content) VALUES ('n', 'old fact')")
        conn.execute("INSERT INTO memories (namespace, content, is_sensitive) "
                     "VALUES ('n', 'old secret', true)")
        prepare_database(scratch_dsn)  # ...upgraded
        jobs = conn.execute("SELECT m.content FROM embedding_jobs j "
                            "JOIN memories m ON m.id = j.memory_id").fetchall()
    assert jobs == [("old fact",)]
