"""Vectors already computed, kept on disk by model and text: a benchmark split, a re-import or
a rebuilt stack embeds each text once per model, not once per load.

Off unless RECALLMESH_EMBEDDING_VECTOR_STORE names a folder. Each model gets a SQLite file
of its own, `<folder>/<model_id>-<identity[:16]>.sqlite`, where the identity is the sha256
of everything that decides a vector: the model file's and tokenizer's sha256 and the
manifest's max_length, pooling, normalisation, output and prefixes (`model_identity`). A
changed model, tokenizer or setting is a new file, never a stale hit. A row is keyed by
sha256(kind, NUL, text) (`text_key`) and holds the vector as the model produced it (float32
bytes) and whether the text was cut to max_length: a hit returns exactly what a model run
returns, so a memory indexed from the store has the very row the model would have written
(tests/integration/test_vector_store.py loads the same memories with the store cold and
warm and compares the stored rows).

The vectors usually come from the service itself (every miss is written after its model
run), or in bulk from `python -m benchmarks embed-store`, which embeds a whole split
in-process with large batches, or imports vectors computed elsewhere (a GPU machine: its
`producer` is recorded in the file's meta table and printed by the command, since another
runtime's floats are not bit-identical to onnxruntime's on this CPU).

SQLite in WAL mode, so several processes (the service, an import) can share a file; the
service reads and writes it from its event loop, a few milliseconds a call.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import numpy as np
from prometheus_client import Counter

from recallmesh.embedding_models.manifest import ModelManifest, sha256_file
from recallmesh.services.embedding.core import KINDS, Embedded

LOOKUPS = Counter(
    "recallmesh_embedding_vector_store_total",
    "Texts looked up in the on-disk vector store (RECALLMESH_EMBEDDING_VECTOR_STORE), by kind "
    "and result (hit, miss).",
    ["kind", "result"],
)

SQLITE_MAX_PARAMS = 900  # keys per SELECT, under SQLite's default limit of 999


def model_identity(manifest: ModelManifest) -> str:
    """sha256 of what decides a model's vectors: its files and the manifest's settings."""
    files = {
        "onnx": manifest.sha256.get(manifest.onnx.name) or sha256_file(manifest.onnx),
        "tokenizer": manifest.sha256.get(manifest.tokenizer.name)
        or sha256_file(manifest.tokenizer),
    }
    settings = {
        "dimension": manifest.dimension, "max_length": manifest.max_length,
        "pooling": manifest.pooling, "normalize": manifest.normalize, "output": manifest.output,
        "query_prefix": manifest.query_prefix, "document_prefix": manifest.document_prefix,
    }
    blob = json.dumps({"files": files, "settings": settings}, sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()


def text_key(kind: str, text: str) -> bytes:
    return hashlib.sha256(kind.encode() + b"\0" + text.encode("utf-8", "surrogatepass")).digest()


class VectorStore:
    """One model's vectors on disk: (kind, text) -> (vector, truncated)."""

    def __init__(self, folder: Path, manifest: ModelManifest, producer: str = "") -> None:
        self.identity = model_identity(manifest)
        self.dimension = manifest.dimension
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / f"{manifest.model_id}-{self.identity[:16]}.sqlite"
        self._db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS vectors ("
                         "key BLOB PRIMARY KEY, truncated INTEGER NOT NULL, vector BLOB NOT NULL"
                         ") WITHOUT ROWID")
        self._db.execute("CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT)")
        self._db.execute("INSERT OR IGNORE INTO meta VALUES ('identity', ?), ('model_id', ?)",
                         (self.identity, manifest.model_id))
        if producer:
            self.note_producer(producer)

    def close(self) -> None:
        self._db.close()

    def note_producer(self, producer: str) -> None:
        """Record who computed vectors in this file (kept once per distinct producer)."""
        self._db.execute("INSERT OR IGNORE INTO meta VALUES (?, ?)",
                         (f"producer:{producer}", producer))

    def producers(self) -> list[str]:
        rows = self._db.execute("SELECT value FROM meta WHERE name LIKE 'producer:%' "
                                "ORDER BY name").fetchall()
        return [str(r[0]) for r in rows]

    def __len__(self) -> int:
        return int(self._db.execute("SELECT count(*) FROM vectors").fetchone()[0])

    def get(self, kind: str, texts: Sequence[str]) -> list[tuple[np.ndarray, bool] | None]:
        """Each text's stored (vector, truncated), or None where none is stored."""
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}")
        keys = [text_key(kind, t) for t in texts]
        found: dict[bytes, tuple[np.ndarray, bool]] = {}
        unique = list(dict.fromkeys(keys))
        for start in range(0, len(unique), SQLITE_MAX_PARAMS):
            part = unique[start:start + SQLITE_MAX_PARAMS]
            marks = ",".join("?" * len(part))
            for key, truncated, blob in self._db.execute(
                    f"SELECT key, truncated, vector FROM vectors WHERE key IN ({marks})", part):
                vector = np.frombuffer(blob, dtype="<f4")
                if vector.shape[0] == self.dimension:
                    found[bytes(key)] = (vector, bool(truncated))
        result = [found.get(k) for k in keys]
        hits = sum(r is not None for r in result)
        LOOKUPS.labels(kind, "hit").inc(hits)
        LOOKUPS.labels(kind, "miss").inc(len(result) - hits)
        return result

    def put(self, kind: str, texts: Sequence[str], embedded: Embedded) -> None:
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}")
        if embedded.vectors.shape != (len(texts), self.dimension):
            raise ValueError(f"expected {len(texts)} vectors of {self.dimension} dimensions, "
                             f"got {embedded.vectors.shape}")
        rows = [(text_key(kind, t), int(cut), np.asarray(v, dtype="<f4").tobytes())
                for t, v, cut in zip(texts, embedded.vectors, embedded.truncated, strict=True)]
        with self._db:
            self._db.execute("BEGIN")
            self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)", rows)

    async def embed(self, texts: list[str], kind: str,
                    compute: Callable[[list[str]], Awaitable[Embedded]]) -> Embedded:
        """The texts' vectors: stored ones from disk, the others (each distinct text once)
        from `compute`, then stored."""
        found = self.get(kind, texts)
        missing = list(dict.fromkeys(t for t, f in zip(texts, found, strict=True) if f is None))
        if missing:
            computed = await compute(missing)
            self.put(kind, missing, computed)
            fresh = {t: (computed.vectors[i], computed.truncated[i])
                     for i, t in enumerate(missing)}
            found = [f if f is not None else fresh[t] for t, f in zip(texts, found, strict=True)]
        vectors = np.stack([f[0] for f in found if f is not None]).astype(np.float32, copy=False)
        return Embedded(vectors, [bool(f[1]) for f in found if f is not None])
