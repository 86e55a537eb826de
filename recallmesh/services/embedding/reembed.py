"""Switching embedding models: re-embed in the background, then switch in one transaction.

Vectors of two models are not comparable, and their dimensions may differ, so
a model change is an operation, not a setting:

  1. `recallmesh reembed --manifest NEW/manifest.json`
     adds `embedding_next halfvec(<new dimension>)` + `embedding_next_model`,
     embeds every live, non-sensitive memory with the new model (in this
     process, in batches, resumable: rows already done are skipped) and builds
     the HNSW index on the new column (CONCURRENTLY: writes keep flowing).
     Recall keeps using the old vectors.
  2. `recallmesh reembed --manifest NEW/manifest.json --switch`
     in one transaction: rows written or edited since step 1 started (or
     missed) get a fresh embedding job; the old column and index are dropped
     and the new ones take their names.
  3. Restart the embedding service with RECALLMESH_EMBEDDING_MANIFEST=NEW,
     then the vector leg (it reads the dimension at start).
Between steps 2 and 3 the indexer refuses to write vectors of the old model
(`embedding_space` names the new one) and retries with backoff; the vector
leg finds no vectors of the query's model (same dimension: an empty list) or
rejects the query vector's dimension (recall marks the leg ERROR, degraded);
either way recall still answers lexically.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import psycopg

from recallmesh.embedding_models.manifest import ModelManifest
from recallmesh.migrations.vector_schema import (
    INDEX_NAME,
    HnswSettings,
    column_dimension,
    create_hnsw_index,
    index_exists,
    index_is_valid,
    vector_literal,
)
from recallmesh.services.embedding.core import OnnxEmbedder
from recallmesh.shared.db import LOCK_FOR_WRITE, write_lock_params
from recallmesh.wire.filters import not_deleted

log = logging.getLogger(__name__)

NEXT_INDEX = "memories_embedding_next_hnsw_idx"


class SwitchError(RuntimeError):
    """The switch cannot happen (no finished re-embed run for this model)."""


def prepare_next_column(conn: psycopg.Connection, dimension: int) -> None:
    have = column_dimension(conn, "embedding_next")
    if have is not None and have != dimension:
        conn.execute(f"DROP INDEX IF EXISTS {NEXT_INDEX}")
        conn.execute("ALTER TABLE memories DROP COLUMN embedding_next, "
                     "DROP COLUMN embedding_next_model")
        have = None
    if have is None:
        conn.execute(f"ALTER TABLE memories ADD COLUMN embedding_next halfvec({int(dimension)}), "
                     "ADD COLUMN embedding_next_model text")
    conn.execute(
        "CREATE TABLE IF NOT EXISTS reembed_runs (model_id text PRIMARY KEY, "
        "started_at timestamptz NOT NULL DEFAULT clock_timestamp())"
    )


def reembed(
    dsn: str,
    manifest: ModelManifest,
    batch_size: int = 64,
    embedder: OnnxEmbedder | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """Step 1: fill embedding_next with the new model. Returns rows embedded now."""
    manifest.verify()
    embedder = embedder or OnnxEmbedder(manifest, provider="auto", max_batch=32)
    done = 0
    with psycopg.connect(dsn, autocommit=True) as conn:
        prepare_next_column(conn, manifest.dimension)
        conn.execute("INSERT INTO reembed_runs (model_id) VALUES (%s) ON CONFLICT DO NOTHING",
                     (manifest.model_id,))
        counted = conn.execute(
            f"SELECT count(*) FROM memories WHERE {not_deleted()} AND NOT is_sensitive "
            "AND embedding_next_model IS DISTINCT FROM %s", (manifest.model_id,)).fetchone()
        assert counted is not None  # an aggregate / function call: always one row
        total = counted[0]
        last_id = "00000000-0000-0000-0000-000000000000"
        while True:
            rows = conn.execute(
                f"SELECT id::text, content FROM memories WHERE id > %s AND {not_deleted()} "
                "AND NOT is_sensitive AND embedding_next_model IS DISTINCT FROM %s "
                "ORDER BY id LIMIT %s", (last_id, manifest.model_id, batch_size)).fetchall()
            if not rows:
                break
            vectors = embedder.embed([r[1] for r in rows], "document").vectors
            with conn.transaction():
                # every namespace's rows: the writers' order's first lock only (lock_for_write)
                conn.execute(LOCK_FOR_WRITE, write_lock_params([]))
                conn.execute(
                    "UPDATE memories m SET embedding_next = v.e::halfvec, "
                    "embedding_next_model = %s "
                    "FROM unnest(%s::uuid[], %s::text[], %s::text[]) AS v(id, e, content) "
                    "WHERE m.id = v.id AND m.content = v.content AND NOT m.is_sensitive",
                    (manifest.model_id, [r[0] for r in rows],
                     [vector_literal(v) for v in vectors], [r[1] for r in rows]))
            done += len(rows)
            last_id = rows[-1][0]
            if progress:
                progress(done, total)
        if index_exists(conn, NEXT_INDEX) and not index_is_valid(conn, NEXT_INDEX):
            conn.execute(f"DROP INDEX CONCURRENTLY {NEXT_INDEX}")  # an interrupted build
        create_hnsw_index(conn, "embedding_next", NEXT_INDEX, HnswSettings.from_env(),
                          concurrently=True)
    return done


def switch(dsn: str, manifest: ModelManifest) -> int:
    """Step 2: make embedding_next the live column. Returns rows re-enqueued."""
    with psycopg.connect(dsn) as conn, conn.transaction():
        if column_dimension(conn, "embedding_next") != manifest.dimension:
            raise SwitchError("no re-embedded column for this model: run reembed without "
                              "--switch first")
        row = conn.execute("SELECT started_at FROM reembed_runs WHERE model_id = %s",
                           (manifest.model_id,)).fetchone()
        if row is None:
            raise SwitchError(f"no re-embed run of {manifest.model_id} was recorded: run "
                              "reembed without --switch first")
        # The indexer takes the writers' first lock (lock_for_write), then embedding_space,
        # then memories rows: take them in the same order so the two can never deadlock.
        # ACCESS EXCLUSIVE because the column swap below needs it anyway; holding it from
        # here keeps one order.
        conn.execute(LOCK_FOR_WRITE, write_lock_params([]))
        conn.execute("SELECT model_id FROM embedding_space FOR UPDATE")
        conn.execute("LOCK TABLE memories IN ACCESS EXCLUSIVE MODE")
        if not index_is_valid(conn, NEXT_INDEX):
            raise SwitchError(f"the re-embed index {NEXT_INDEX} is missing or invalid (the "
                              "re-embed run was interrupted?): run reembed without --switch again")
        stale = conn.execute(
            "UPDATE memories SET embedding_next = NULL, embedding_next_model = NULL "
            f"WHERE {not_deleted()} AND NOT is_sensitive "
            "AND (embedding_next_model IS DISTINCT FROM %s OR updated_at >= %s) RETURNING id",
            (manifest.model_id, row[0])).fetchall()
        conn.execute("SELECT recallmesh_enqueue_embedding_jobs(%s::uuid[])",
                     ([r[0] for r in stale],))
        conn.execute(f"DROP INDEX IF EXISTS {INDEX_NAME}")
        conn.execute("ALTER TABLE memories DROP COLUMN embedding")
        conn.execute("ALTER TABLE memories DROP COLUMN embedding_model")
        conn.execute("ALTER TABLE memories RENAME COLUMN embedding_next TO embedding")
        conn.execute("ALTER TABLE memories RENAME COLUMN embedding_next_model TO embedding_model")
        conn.execute(f"ALTER INDEX {NEXT_INDEX} RENAME TO {INDEX_NAME}")
        conn.execute("UPDATE embedding_space SET model_id = %s, dimension = %s, "
                     "updated_at = now()", (manifest.model_id, manifest.dimension))
        conn.execute("DELETE FROM reembed_runs WHERE model_id = %s", (manifest.model_id,))
    return len(stale)
