"""The vector column and its HNSW index, sized from the embedding model manifest.

SQL migrations cannot know the model's dimension, so after they run,
`prepare_database()` makes sure `memories.embedding halfvec(<dimension>)` and
its HNSW index (halfvec_cosine_ops) exist, and records the model in
`embedding_space`. A configured model other than the recorded one (another
id or dimension) is an error with instructions (`recallmesh reembed`), never
a silent rebuild or a silent mix of incomparable vectors.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

import psycopg

from recallmesh.embedding_models.manifest import ModelManifest
from recallmesh.migrations import apply_migrations
from recallmesh.migrations.bm25_index import ensure_bm25_index
from recallmesh.migrations.word_frequencies import ensure_language_lexemes
from recallmesh.shared.settings import ConfigError, env_int

log = logging.getLogger(__name__)

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


def index_exists(conn: psycopg.Connection, index: str) -> bool:
    row = conn.execute("SELECT to_regclass(%s)", (index,)).fetchone()
    assert row is not None  # an aggregate / function call: always one row
    return row[0] is not None


def index_is_valid(conn: psycopg.Connection, index: str) -> bool:
    """False when missing, or left invalid by an interrupted CREATE INDEX CONCURRENTLY."""
    row = conn.execute(
        "SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass(%s)", (index,)
    ).fetchone()
    return bool(row and row[0])


def create_hnsw_index(
    conn: psycopg.Connection, column: str, index: str, hnsw: HnswSettings,
    concurrently: bool = False,
) -> None:
    """CONCURRENTLY (outside a transaction) keeps writes flowing while a big index builds."""
    conn.execute(
        f"CREATE INDEX {'CONCURRENTLY ' if concurrently else ''}IF NOT EXISTS {index} ON memories "
        f"USING hnsw ({column} halfvec_cosine_ops) "
        f"WITH (m = {int(hnsw.m)}, ef_construction = {int(hnsw.ef_construction)})"
    )


MIN_PGVECTOR = (0, 8, 0)  # halfvec needs 0.7; hnsw.iterative_scan needs 0.8


def check_pgvector(conn: psycopg.Connection) -> None:
    row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
    version = tuple(int(p) for p in row[0].split(".")[:3]) if row else ()
    if version < MIN_PGVECTOR:
        found = row[0] if row else "not installed"
        raise VectorSchemaError(
            f"pgvector {'.'.join(map(str, MIN_PGVECTOR))} or newer is required, found {found}"
        )


def ensure_embedding_column(
    dsn: str, dimension: int, model_id: str, hnsw: HnswSettings | None = None
) -> None:
    """Create memories.embedding + its index for this model, or check they match it."""
    hnsw = hnsw or HnswSettings.from_env()
    with psycopg.connect(dsn, autocommit=True) as conn:
        check_pgvector(conn)
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
                if index_exists(conn, INDEX_NAME) and not index_is_valid(conn, INDEX_NAME):
                    conn.execute(f"DROP INDEX {INDEX_NAME}")  # unusable: searches would scan
                create_hnsw_index(conn, "embedding", INDEX_NAME, hnsw)
            conn.execute(
                "INSERT INTO embedding_space (model_id, dimension) VALUES (%s, %s) "
                "ON CONFLICT (singleton) DO NOTHING",
                (model_id, dimension),
            )
            row = conn.execute("SELECT model_id FROM embedding_space").fetchone()
            assert row is not None  # the singleton row was inserted just above
            live = row[0]
            if live != model_id:
                raise VectorSchemaError(
                    f"the stored vectors come from model {live!r} but the configured model is "
                    f"{model_id!r}: point RECALLMESH_EMBEDDING_MANIFEST back at {live!r}, or "
                    "switch models with `recallmesh reembed`"
                )
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (_LOCK_KEY,))


def prepare_database(dsn: str, manifest: ModelManifest | None = None) -> str:
    """Everything a fresh or older database needs before the services start. Returns where the
    lexical leg's BM25 comes from (ensure_bm25_index)."""
    apply_migrations(dsn)
    manifest = manifest or ModelManifest.load()
    ensure_embedding_column(dsn, manifest.dimension, manifest.model_id)
    with psycopg.connect(dsn, autocommit=True) as conn:
        engine = ensure_bm25_index(conn)
        ensure_language_lexemes(conn)
    log.info("lexical BM25", extra={"engine": engine})
    return engine


@dataclass(frozen=True)
class HnswSettings:
    """Build parameters of the HNSW index (read when the index is created)."""

    m: int = 16
    ef_construction: int = 64

    @classmethod
    def from_env(cls) -> HnswSettings:
        m = env_int("RECALLMESH_HNSW_M", 16, minimum=2)
        ef = env_int("RECALLMESH_HNSW_EF_CONSTRUCTION", 64, minimum=4)
        if ef < 2 * m:
            raise ConfigError(
                "RECALLMESH_HNSW_EF_CONSTRUCTION must be at least 2 * RECALLMESH_HNSW_M"
            )
        return cls(m=m, ef_construction=ef)
