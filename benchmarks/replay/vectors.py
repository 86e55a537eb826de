"""Exact vectors for the replays: every memory of a dev split (and, where long, its windows)
and every query, embedded once with a catalogue model and cached beside the pool, so a vector
list can be computed by brute force over a query's namespace without a stack."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from benchmarks.harness.data import load
from recallmesh.embedding_models.manifest import ModelManifest, sha256_file
from recallmesh.services.embedding.core import OnnxEmbedder
from recallmesh.wire.fusion import LegCandidate, LegList

CHUNK_WORDS, CHUNK_STRIDE = 120, 80


def chunks(content: str, words: int = CHUNK_WORDS, stride: int = CHUNK_STRIDE) -> list[str]:
    """Windows of `words` words every `stride` words; a first line (a title) heads each."""
    head, _, body = content.partition("\n") if "\n" in content else ("", "", content)
    tokens = body.split()
    starts = range(0, max(1, len(tokens) - words + stride), stride)
    return [f"{head}\n{' '.join(tokens[s:s + words])}" if head else " ".join(tokens[s:s + words])
            for s in starts]


class Vectors:
    """Every memory (and, where long, its windows) and every query, embedded once."""

    def __init__(self, dataset_dir: Path, manifest_path: Path | None, cache_dir: Path,
                 with_chunks: bool = True) -> None:
        manifest = ModelManifest.load(manifest_path)  # None: the served model
        self.manifest = manifest
        self._embedder: OnnxEmbedder | None = None
        self.ds = load(dataset_dir)
        self.contents = {m.corpus_id: m.content for ms in self.ds.scopes.values() for m in ms}
        self.ids = sorted(self.contents)
        self.row = {i: n for n, i in enumerate(self.ids)}
        self.scope_ids = {s: [m.corpus_id for m in ms] for s, ms in self.ds.scopes.items()}
        self.query = {q.query_id: q for q in self.ds.queries}
        tag = sha256_file(manifest.onnx)[:12]
        cache = cache_dir / f"lever_vectors_{tag}.npz"
        if cache.is_file():
            saved = np.load(cache, allow_pickle=False)
            self.memories, self.queries = saved["memories"], saved["queries"]
        else:
            self.memories = self.embedder.embed(
                [self.contents[i] for i in self.ids], kind="document").vectors
            self.queries = self.embedder.embed([q.text for q in self.ds.queries]).vectors
            cache.parent.mkdir(parents=True, exist_ok=True)
            np.savez(cache, memories=self.memories, queries=self.queries)
        cache = cache_dir / f"lever_chunks_{tag}_{CHUNK_WORDS}_{CHUNK_STRIDE}.npz"
        if not with_chunks:  # no windows: as if no memory were longer than one
            self.chunk_vectors = np.zeros((0, self.memories.shape[1]), np.float32)
            self.chunk_owner = np.zeros(0, dtype=np.int64)
        elif cache.is_file():
            saved = np.load(cache, allow_pickle=False)
            self.chunk_vectors, self.chunk_owner = saved["chunks"], saved["chunk_owner"]
        else:
            owners, texts = [], []
            for n, memory_id in enumerate(self.ids):
                windows = chunks(self.contents[memory_id])
                if len(windows) > 1:  # longer than one window: its windows too
                    owners += [n] * len(windows)
                    texts += windows
            self.chunk_owner = np.array(owners, dtype=np.int64)
            self.chunk_vectors = (self.embedder.embed(texts, kind="document").vectors if texts
                                  else np.zeros((0, self.memories.shape[1]), np.float32))
            np.savez(cache, chunks=self.chunk_vectors, chunk_owner=self.chunk_owner)
        self.qrow = {q.query_id: n for n, q in enumerate(self.ds.queries)}
        self.created = {s: {m.corpus_id: m.created_at for m in ms if m.created_at is not None}
                        for s, ms in self.ds.scopes.items()}
        self.speakers: dict[str, str] = {}
        corpus = dataset_dir / "corpus.jsonl"
        with corpus.open(encoding="utf-8") as lines:  # not splitlines(): U+2028 inside texts
            records = [json.loads(line) for line in lines if line.strip()]
        for record in records:
            if record.get("speaker"):
                self.speakers[str(record["id"])] = str(record["speaker"])

    @property
    def embedder(self) -> OnnxEmbedder:
        """Loaded only when something is not in the cache yet."""
        if self._embedder is None:
            self._embedder = OnnxEmbedder(self.manifest, provider="cpu", max_batch=32)
        return self._embedder

    def scope(self, query_id: str) -> tuple[list[str], np.ndarray]:
        ids = self.scope_ids[self.query[query_id].scope]
        return ids, np.array([self.row[i] for i in ids])

    def vector_list(self, query_id: str, qv: np.ndarray, depth: int, weight: float = 1.0,
                    leg: str = "vector", chunked: bool = False) -> LegList:
        ids, rows = self.scope(query_id)
        sims = self.memories[rows] @ qv
        if chunked and len(self.chunk_owner):
            best = np.full(len(self.ids), -np.inf)
            np.maximum.at(best, self.chunk_owner, self.chunk_vectors @ qv)
            sims = np.maximum(sims, best[rows])
        order = np.argsort(-sims, kind="stable")[:depth]
        return LegList(leg, weight, [LegCandidate(ids[j], float(sims[j])) for j in order])
