"""Fill the on-disk vector store for dev splits, so a load through the stack costs minutes.

    python -m benchmarks embed-store --sets locomo,longmemeval,scifact [--model NAME]
        [--store DIR] [--batch 64] [--batch-tokens 16384] [--threads 0]
    python -m benchmarks embed-store import --texts FILE.json.gz --vectors A.npy,B.npy
        --kind document --producer "torch 2.11 CUDA H100" [--model NAME] [--store DIR]

The first form embeds every memory's content (kind document) and every question (kind
query) of each split that the store does not hold yet, in this process with large batches
(the service's own OnnxEmbedder, so the same tokenisation, prefixes, pooling and floats as a
model run behind the Embed RPC), and writes them to the store the embedding service reads
when RECALLMESH_EMBEDDING_VECTOR_STORE names the same folder (default
benchmarks/results/vectors; recallmesh/services/embedding/vector_store.py says how it is
keyed). A load through the stack then runs the normal write path with every vector a hit.

`import` stores vectors computed elsewhere (benchmarks/performance/cuda_embedding.py on a GPU
machine): a gzipped JSON list of texts and the row-aligned vectors, recorded with their
producer. Such vectors are another runtime's floats (cosine to this CPU's about 0.99999):
the command prints every producer the file holds.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import time
from pathlib import Path

import numpy as np

from benchmarks.harness.data import load
from recallmesh.embedding_models.manifest import ModelManifest, model_cache_dir
from recallmesh.services.embedding.core import Embedded, OnnxEmbedder
from recallmesh.services.embedding.servicer import MAX_TEXT_CHARS
from recallmesh.services.embedding.vector_store import VectorStore

DEFAULT_STORE = Path("benchmarks/results/vectors")
CHUNK = 1024  # texts embedded between two writes (progress, and a crash loses little)


def store_dir(raw: str | None) -> Path:
    return Path(raw or os.environ.get("RECALLMESH_EMBEDDING_VECTOR_STORE") or DEFAULT_STORE)


def manifest_of(model: str | None) -> ModelManifest:
    return ModelManifest.load(model_cache_dir() / model / "manifest.json" if model else None)


def split_texts(path: Path) -> dict[str, list[str]]:
    """What a served run of the split sends to the Embed RPC: contents and questions."""
    data = load(path, unanswerable=True)
    documents = {m.content[:MAX_TEXT_CHARS] for ms in data.scopes.values() for m in ms}
    queries = {q.text[:MAX_TEXT_CHARS] for q in [*data.queries, *data.unanswerable]}
    return {"document": sorted(documents), "query": sorted(queries)}


def fill(store: VectorStore, embedder: OnnxEmbedder, kind: str, texts: list[str]) -> None:
    found = store.get(kind, texts)
    missing = [t for t, f in zip(texts, found, strict=True) if f is None]
    print(f"  {kind}: {len(texts)} texts, {len(texts) - len(missing)} stored, "
          f"{len(missing)} to embed", flush=True)
    started = time.perf_counter()
    for start in range(0, len(missing), CHUNK):
        part = missing[start:start + CHUNK]
        store.put(kind, part, embedder.embed(part, kind))
        done = start + len(part)
        rate = done / (time.perf_counter() - started)
        print(f"    {done}/{len(missing)} ({rate:.1f} texts/s)", flush=True)


def prefill(args: argparse.Namespace) -> None:
    manifest = manifest_of(args.model)
    manifest.verify()
    embedder = OnnxEmbedder(manifest, provider="cpu", intra_op_threads=args.threads,
                            max_batch=args.batch, max_batch_tokens=args.batch_tokens)
    store = VectorStore(store_dir(args.store), manifest, producer=embedder.producer)
    datasets = Path(os.environ.get("BENCH_DATASETS", "../shared/datasets"))
    for name in args.sets:
        print(f"{name} -> {store.path}", flush=True)
        for kind, texts in split_texts(datasets / name).items():
            fill(store, embedder, kind, texts)
    print(f"{len(store)} vectors; producers: {'; '.join(store.producers())}")


def import_vectors(args: argparse.Namespace) -> None:
    manifest = manifest_of(args.model)
    texts = json.loads(gzip.decompress(Path(args.texts).read_bytes()))
    vectors = np.concatenate([np.load(p) for p in args.vectors]).astype(np.float32)
    if vectors.shape[0] != len(texts):
        raise SystemExit(f"{len(texts)} texts but {vectors.shape[0]} vectors")
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors = vectors / np.clip(norms, 1e-12, None) if manifest.normalize else vectors
    # Whether a text was cut to max_length tokens comes from this side's tokenizer.
    embedder = OnnxEmbedder(manifest, provider="cpu")
    truncated = [bool(e.overflowing) for e in embedder.encode(texts, args.kind)]
    store = VectorStore(store_dir(args.store), manifest, producer=args.producer)
    store.put(args.kind, texts, Embedded(vectors, truncated))
    print(f"imported {len(texts)} {args.kind} vectors into {store.path} ({len(store)} in all); "
          f"producers: {'; '.join(store.producers())}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks embed-store",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", help="catalogue model (default: the served manifest)")
    parser.add_argument("--store", help=f"folder (default $RECALLMESH_EMBEDDING_VECTOR_STORE "
                        f"or {DEFAULT_STORE})")
    sub = parser.add_subparsers(dest="command")
    imp = sub.add_parser("import", help="store vectors computed elsewhere")
    imp.add_argument("--texts", required=True)
    imp.add_argument("--vectors", type=lambda s: s.split(","), required=True)
    imp.add_argument("--kind", choices=("document", "query"), default="document")
    imp.add_argument("--producer", required=True)
    parser.add_argument("--sets", type=lambda s: s.split(","),
                        default=["locomo", "longmemeval", "scifact"])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--batch-tokens", type=int, default=16384)
    parser.add_argument("--threads", type=int, default=0)
    args = parser.parse_args(argv)
    (import_vectors if args.command == "import" else prefill)(args)


if __name__ == "__main__":
    main()
