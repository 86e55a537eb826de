"""Levers that change a leg's candidates, replayed as pool variants (issue 42).

A dumped pool (benchmarks/replay/pool.py) holds each query's leg lists as the stack served them.
A lever that scores memories by more than one vector cannot be replayed on those lists, so each
lever here writes a *variant* of the pool whose vector lists are computed again, exactly (brute
force over the query's namespace, its top POOL_K), from the vectors in the on-disk vector store
(recallmesh/services/embedding/vector_store.py; the served model's, filled by
`python -m benchmarks embed-store`). Texts the store lacks (a lever's extra texts) are embedded
on this machine with the served model and written to the store, once.

- `whole`: every memory by its own vector: the base every lever is compared with (the same
  exact search, so a difference is the lever's, not HNSW's).
- `windows`: a memory longer than the model's window (the vector leg embeds its first
  max_length tokens) is also embedded in further windows of the model's tokens (WINDOW_OVERLAP
  tokens shared with the previous one), and scores by the best of its vectors (max-sim).
- `sentences`: a memory of two or more sentences (split by `sentence_split`) is also embedded
  sentence by sentence and scores by the best of its vectors: a personal fact said in passing
  ("By the way, I just ...") in a long turn about something else. Embedding every sentence of a
  split costs hours on this CPU (LongMemEval's 98,773 turns), so this lever is replayed on a fixed
  sample of each split's queries (SENTENCE_SAMPLE, seeded), in their namespaces only; SciFact's
  one namespace of 5,183 abstracts is left out (about 50,000 sentences).

The variants are compared with `whole` at the shipped setting (nothing is tuned on them: a
lever's parameters are fixed above, so the paired comparison is out of fold by construction);
benchmarks/replay/cross_validation.py reports them next to the grid's levers.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer

from benchmarks.harness.data import Dataset
from benchmarks.harness.script import VECTOR_STORE
from recallmesh.embedding_models.manifest import ModelManifest
from recallmesh.services.embedding.core import OnnxEmbedder
from recallmesh.services.embedding.vector_store import VectorStore

POOL_K = 100
WINDOW_OVERLAP = 64
SENTENCE_SAMPLE = 80
MIN_SENTENCE_CHARS = 12
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])")


def sentence_split(text: str) -> list[str]:
    """`text`'s sentences (an end mark, space, then a capital or a quote), the very short ones
    dropped; [] for a text of one sentence."""
    parts = [p.strip() for p in _SENTENCE_END.split(text)]
    parts = [p for p in parts if len(p) >= MIN_SENTENCE_CHARS]
    return parts if len(parts) >= 2 else []


def further_windows(text: str, tokenizer: Tokenizer, width: int,
                    overlap: int = WINDOW_OVERLAP) -> list[str]:
    """The windows of `text` after the first `width` tokens, each `width` tokens long (the
    last shorter) and sharing `overlap` tokens with the one before; [] for a text that fits."""
    offsets = tokenizer.encode(text, add_special_tokens=False).offsets
    out = []
    start = width - overlap
    while len(offsets) > width and start < len(offsets):
        end = min(start + width, len(offsets))
        out.append(text[offsets[start][0]:offsets[end - 1][1]])
        if end == len(offsets):
            break
        start = end - overlap
    return out


class StoredVectors:
    """The served model's vectors of a split's texts, from the vector store; what it lacks is
    embedded here (lazily: the model loads only when a text is missing) and stored."""

    def __init__(self, store_dir: Path = VECTOR_STORE) -> None:
        self.manifest = ModelManifest.load()
        self.store = VectorStore(store_dir, self.manifest, producer="")
        self._embedder: OnnxEmbedder | None = None
        tokenizer = Tokenizer.from_file(str(self.manifest.tokenizer))
        tokenizer.no_truncation()
        tokenizer.no_padding()
        self.tokenizer = tokenizer
        prefix = len(tokenizer.encode(self.manifest.document_prefix or "",
                                      add_special_tokens=False).ids)
        self.window = self.manifest.max_length - 2 - prefix  # what the model sees of a memory

    def holds(self, ds: Dataset) -> bool:
        """Whether the store holds the split's memories' vectors (from `embed-store`): a lever
        embeds only its extra texts, never a whole split on this CPU."""
        contents = [m.content for ms in ds.scopes.values() for m in ms]
        return all(f is not None for f in self.store.get("document", contents))

    def get(self, kind: str, texts: list[str]) -> np.ndarray:
        found = self.store.get(kind, texts)
        missing = sorted({t for t, f in zip(texts, found, strict=True) if f is None})
        if missing:
            if self._embedder is None:
                self._embedder = OnnxEmbedder(self.manifest, max_batch=64, max_batch_tokens=8192)
                self.store.note_producer(self._embedder.producer)
            embedded = self._embedder.embed(missing, kind)
            self.store.put(kind, missing, embedded)
            row = {t: v for t, v in zip(missing, embedded.vectors, strict=True)}
            found = [f if f is not None else (row[t], False)
                     for t, f in zip(texts, found, strict=True)]
        return np.stack([f[0] for f in found]) if found else np.zeros((0, 0), np.float32)


def extra_texts(lever: str, vectors: StoredVectors) -> Callable[[str], list[str]]:
    if lever == "windows":
        return lambda text: further_windows(text, vectors.tokenizer, vectors.window)
    if lever == "sentences":
        return sentence_split
    return lambda text: []


def sample_of(pool: dict, lever: str) -> set[str] | None:
    """The query ids a lever is replayed on: every query, or the sentence lever's sample."""
    if lever != "sentences":
        return None
    ids = [q["query_id"] for q in pool["queries"]]  # the pool's own (dumped) order
    return set(random.Random(42).sample(ids, min(SENTENCE_SAMPLE, len(ids))))


def applies(pool: dict, lever: str) -> bool:
    return not (lever == "sentences" and pool["dataset"] == "scifact")


def variant(pool: dict, ds: Dataset, lever: str, vectors: StoredVectors,
            only: set[str] | None = None) -> dict:
    """`pool` with every query's vector list computed again under `lever` (`whole`, `windows`,
    `sentences`), for the queries in `only` (all when None; the others are left out)."""
    by_query = {q.query_id: q for q in ds.queries}
    queries = [q for q in pool["queries"] if only is None or q["query_id"] in only]
    scopes = sorted({by_query[q["query_id"]].scope for q in queries})
    extra = extra_texts(lever, vectors)
    base: dict[str, tuple[list[str], np.ndarray]] = {}
    parts: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for scope in scopes:
        memories = ds.scopes[scope]
        ids = [m.corpus_id for m in memories]
        base[scope] = ids, vectors.get("document", [m.content for m in memories])
        owners, texts = [], []
        for n, m in enumerate(memories):
            for text in extra(m.content):
                owners.append(n)
                texts.append(text)
        parts[scope] = (np.array(owners, dtype=int), vectors.get("document", texts)
                        if texts else np.zeros((0, base[scope][1].shape[1]), np.float32))
    query_vectors = vectors.get("query", [by_query[q["query_id"]].text for q in queries])
    out = []
    for q, v in zip(queries, query_vectors, strict=True):
        scope = by_query[q["query_id"]].scope
        ids, memory_vectors = base[scope]
        score = memory_vectors @ v
        owners, extra_vectors = parts[scope]
        if len(owners):
            np.maximum.at(score, owners, extra_vectors @ v)
        top = np.argsort(-score, kind="stable")[:POOL_K]
        legs = dict(q["legs"])
        legs["vector"] = [[ids[i], rank, float(score[i])] for rank, i in enumerate(top, start=1)]
        out.append(q | {"legs": legs})
    return pool | {"queries": out, "lever": lever}
