"""The vector column and its HNSW index, sized from the embedding model manifest.

SQL migrations cannot know the model's dimension, so after they run,
`prepare_database()` makes sure `memories.embedding halfvec(<dimension>)` and
its HNSW index (halfvec_cosine_ops) exist. A column of another dimension means
the configured model is not the one the stored vectors came from: that is an
error with instructions (`recallmesh reembed`), never a silent rebuild.
"""

from __future__ import annotations

from collections.abc import Iterable

import psycopg

from shared.config import HnswSettings
from shared.migrations import apply_migrations
from shared.model_manifest import ModelManifest

INDEX_NAME = "memories_embedding_hnsw_idx"
_LOCK_KEY = 0x7265_6376  # "recv": serialises column/index changes


class VectorSchemaError(RuntimeError):
    pass


def vector_literal(vector: Iterable[float]) -> str:
    """pgvector's text form '[x,y,...]', cast with ::halfvec in SQL (no driver registration)."""
    return "[" + ",".join(format(float(x), ".7g") for x in vector) + "]"


# Dimension (type modifier) of a halfvec column of memories; no row if it does not exist.
COLUMN_DIMENSION_SQL = (
    "SELECT atttypmod FROM pg_attribute "
    "WHERE attrelid = 'memories'::regclass AND attname = %s AND NOT attisdropped"
)


def column_dimension(conn: psycopg.Connection, column: str = "embedding") -> int | None:
    """Dimension of memories.<column> (a halfvec), None when the column does not exist."""
    row = conn.execute(COLUMN_DIMENSION_SQL, (column,)).fetchone()
    return None if row is None else int(row[0])


def create_hnsw_index(
    conn: psycopg.Connection, column: str, index: str, hnsw: HnswSettings
) -> None:
    conn.execute(
        f"CREATE INDEX IF NOT EXISTS {index} ON memories "
        f"USING hnsw ({column} halfvec_cosine_ops) "
        f"WITH (m = {int(hnsw.m)}, ef_construction = {int(hnsw.ef_construction)})"
    )


def ensure_embedding_column(dsn: str, dimension: int, hnsw: HnswSettings | None = None) -> None:
    hnsw = hnsw or HnswSettings.from_env()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT pg_advisory_lock(%s)", (_LOCK_KEY,))
        try:
            have = column_dimension(conn)
            if have is None:
                with conn.transaction():
                    conn.execute(
                        f"ALTER TABLE memories ADD COLUMN embedding halfvec({int(dimension)})"
                    )
                    create_hnsw_index(conn, "embedding", INDEX_NAME, hnsw)
            elif have != dimension:
                raise VectorSchemaError(
                    f"memories.embedding holds {have}-dimensional vectors but the configured "
                    f"model has {dimension}: point RECALLMESH_EMBEDDING_MANIFEST back at the "
                    "model the vectors came from, or switch models with `recallmesh reembed`"
                )
            else:
                create_hnsw_index(conn, "embedding", INDEX_NAME, hnsw)
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (_LOCK_KEY,))


def prepare_database(dsn: str, manifest: ModelManifest | None = None) -> None:
    """Everything a fresh or older database needs before the services start."""
    apply_migrations(dsn)
    manifest = manifest or ModelManifest.load()
    ensure_embedding_column(dsn, manifest.dimension)
