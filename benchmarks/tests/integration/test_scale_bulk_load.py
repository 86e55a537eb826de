"""The million-memory benchmark's bulk path (benchmarks/performance/scale.py) against a real
Postgres: what COPY with the triggers off plus the set-based BM25 build leaves behind must be what
storing the same memories one by one (the write triggers) leaves behind, and every index it
drops comes back as it was."""

from __future__ import annotations

from collections import Counter

import numpy as np
import psycopg
import pytest
from pgvector.psycopg import register_vector

from benchmarks.performance import scale
from recallmesh.embedding_models.manifest import ModelManifest
from recallmesh.migrations.vector_schema import prepare_database

pytestmark = pytest.mark.integration

TEXTS = ["The cat sat on the mat.", "Running runners ran a long run, running again.",
         "Bank PIN kept in the drawer", "I moved to Lisbon in May; Lisbon is sunny.",
         "Dark mode, please."]


def test_pairs_are_distinct_seeded_and_never_a_text_with_itself():
    chosen = scale.pairs(5, 20)
    assert len({tuple(p) for p in chosen.tolist()}) == 20
    assert all(a != b for a, b in chosen.tolist())
    assert np.array_equal(chosen, scale.pairs(5, 20))
    with pytest.raises(SystemExit):
        scale.pairs(5, 21)  # only 5 x 4 ordered pairs exist


def test_with_duplicates_makes_groups_of_identical_rows():
    chosen = scale.pairs(6, 10)
    out = scale.with_duplicates(chosen, [3, 2])
    counts = Counter(tuple(p) for p in out.tolist())
    assert sorted(counts.values(), reverse=True) == [3, 2, 1, 1, 1, 1, 1]
    assert set(counts) <= {tuple(p) for p in chosen.tolist()}


def test_memory_vectors_are_unit_token_weighted_means():
    vectors = np.eye(3, dtype=np.float32)
    tokens = np.array([1, 3, 1], np.float32)
    mixed = scale.memory_vectors(vectors, tokens, np.array([[0, 1]]))
    assert np.allclose(mixed, np.array([[1, 3, 0]]) / np.sqrt(10))


def postings(conn: psycopg.Connection, ns: str) -> list[tuple]:
    return conn.execute(
        "SELECT m.content, l.lexeme, l.tf, l.dl FROM memory_lexemes l JOIN memories m "
        "ON m.id = l.memory_id WHERE l.namespace = %s ORDER BY 1, 2", (ns,)).fetchall()


def test_bulk_load_leaves_what_the_write_triggers_leave(scratch_dsn):
    prepare_database(scratch_dsn)
    manifest = ModelManifest.load()
    chosen = scale.pairs(len(TEXTS), 12)
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(len(TEXTS), manifest.dimension)).astype(np.float32)
    tokens = np.ones(len(TEXTS), np.float32)
    with psycopg.connect(scratch_dsn, autocommit=True) as conn:
        register_vector(conn)
        indexes_before = sorted(conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename IN "
            "('memories', 'memory_lexemes')").fetchall())
        for a, b in chosen.tolist():  # one by one, the triggers on
            conn.execute("INSERT INTO memories (namespace, content) VALUES ('by-trigger', %s)",
                         (f"{TEXTS[a]}\n{TEXTS[b]}",))
        recreate = scale.drop_indexes(conn)
        scale.copy_memories(conn, TEXTS, vectors, tokens, chosen, manifest.model_id)
        scale.bm25_tables(conn)
        for _, statement in recreate:
            conn.execute(statement)

        assert sorted(conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename IN "
            "('memories', 'memory_lexemes')").fetchall()) == indexes_before
        assert postings(conn, scale.NAMESPACE) == postings(conn, "by-trigger")
        df = "SELECT lexeme, df FROM lexeme_stats WHERE namespace = %s ORDER BY lexeme"
        assert conn.execute(df, (scale.NAMESPACE,)).fetchall() == \
            conn.execute(df, ("by-trigger",)).fetchall()
        stats = "SELECT docs, total_len FROM namespace_stats WHERE namespace = %s"
        bulk, one_by_one = (conn.execute(stats, (n,)).fetchone()
                            for n in (scale.NAMESPACE, "by-trigger"))
        assert bulk == one_by_one and bulk[0] == 12
        loaded = conn.execute(
            "SELECT count(*), count(embedding), count(*) FILTER (WHERE embedding_model = %s), "
            "(SELECT count(*) FROM embedding_jobs j JOIN memories m ON m.id = j.memory_id "
            " WHERE m.namespace = %s) FROM memories WHERE namespace = %s",
            (manifest.model_id, scale.NAMESPACE, scale.NAMESPACE)).fetchone()
        assert loaded == (12, 12, 12, 0)  # every vector stored, no embedding job
        first = conn.execute(
            "SELECT content, embedding FROM memories WHERE namespace = %s "
            "ORDER BY created_at LIMIT 1", (scale.NAMESPACE,)).fetchone()
        a, b = chosen[0]
        assert first[0] == f"{TEXTS[a]}\n{TEXTS[b]}"
        expected = scale.memory_vectors(vectors, tokens, chosen[:1])[0]
        assert np.allclose(first[1].to_numpy(), expected, atol=1e-3)  # halfvec precision
