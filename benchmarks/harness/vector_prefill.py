"""Fill the on-disk vector store for dev splits, so a load through the stack costs minutes.

    python -m benchmarks embed-store --sets locomo,longmemeval,scifact [--model NAME]
        [--store DIR] [--batch 64] [--batch-tokens 16384] [--threads 0]
    python -m benchmarks embed-store [--model NAME] [--store DIR] import --texts DIR
        --vectors DIR[,DIR] --producer "torch 2.11 CUDA H100 (onnx2torch), fp16 transfer"

The first form embeds, for each split, what the store does not hold yet: every memory's
content (kind document), every question (kind query) and the concept names the indexer's
extractor finds in the contents (kind document: the indexer embeds them to merge surface
forms). It runs in this process with large batches, through the service's own OnnxEmbedder
(the same tokenisation, prefixes, pooling and floats as a model run behind the Embed RPC),
and writes to the store the embedding service reads when RECALLMESH_EMBEDDING_VECTOR_STORE
names the same folder (default benchmarks/results/vectors; how it is keyed:
recallmesh/services/embedding/vector_store.py). A load through the stack then runs the
normal write path with every vector a hit.

`import` stores vectors computed elsewhere (benchmarks/performance/cuda_embedding.py on a GPU
machine): each split's packed texts and the row-aligned vector files, recorded with their
producer. Such vectors are another runtime's floats (on the H100, cosine 0.9999999999 to
this CPU's); the command prints every producer the file holds.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import time
from pathlib import Path

import numpy as np

from benchmarks.harness.data import dataset_path, load
from benchmarks.harness.script import VECTOR_STORE
from recallmesh.embedding_models.manifest import ModelManifest, model_cache_dir
from recallmesh.services.embedding.core import Embedded, OnnxEmbedder
from recallmesh.services.embedding.settings import MAX_TEXT_CHARS
from recallmesh.services.embedding.vector_store import VectorStore
from recallmesh.services.graph.extraction import make_extractor

CHUNK = 1024  # texts embedded between two writes (progress, and a crash loses little)


def store_dir(raw: str | None) -> Path:
    return Path(raw or os.environ.get("RECALLMESH_EMBEDDING_VECTOR_STORE") or VECTOR_STORE)


def manifest_of(model: str | None) -> ModelManifest:
    return ModelManifest.load(model_cache_dir() / model / "manifest.json" if model else None)


def split_texts(path: Path, limit: int | None = None,
                corpus_sample: int | None = None) -> dict[str, list[str]]:
    """What a served run of the split sends to the Embed RPC: contents and questions (of its
    first `limit` scored queries and a `corpus_sample`, as the harness's options cut it; the
    unanswerable questions only for the whole split, whose haystacks a cut would not hold)."""
    data = load(path, limit, unanswerable=not limit, corpus_sample=corpus_sample)
    documents = {m.content[:MAX_TEXT_CHARS] for ms in data.scopes.values() for m in ms}
    queries = {q.text[:MAX_TEXT_CHARS] for q in [*data.queries, *data.unanswerable]}
    return {"document": sorted(documents), "query": sorted(queries)}


def concept_names(documents: list[str], extractor_name: str) -> list[str]:
    """The concept names the indexer embeds (kind document) to merge surface forms: the
    served extractor's aliases of the contents (benchmark memories carry no tags)."""
    extractor = make_extractor(extractor_name)
    names: set[str] = set()
    for start in range(0, len(documents), CHUNK):
        part = documents[start:start + CHUNK]
        for x in extractor.extract(part, [()] * len(part)):
            names.update(x.aliases)
    return sorted(names)


def fill(store: VectorStore, embedder: OnnxEmbedder, kind: str, texts: list[str]) -> None:
    found = store.get(kind, texts)
    missing = [t for t, f in zip(texts, found, strict=True) if f is None]
    print(f"  {kind}: {len(texts)} texts, {len(texts) - len(missing)} stored, "
          f"{len(missing)} to embed", flush=True)
    if missing:
        store.note_producer(embedder.producer)
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
    store = VectorStore(store_dir(args.store), manifest)
    for name in args.sets:
        print(f"{name} -> {store.path}", flush=True)
        texts = split_texts(dataset_path(name), args.limit.get(name),
                            args.corpus_sample.get(name))
        for kind in ("document", "query"):
            fill(store, embedder, kind, texts[kind])
        if args.concepts != "none":
            print(f"  concept names ({args.concepts} extractor):", flush=True)
            fill(store, embedder, "document", concept_names(texts["document"], args.concepts))
    print(f"{len(store)} vectors; producers: {'; '.join(store.producers())}")


def import_vectors(args: argparse.Namespace) -> None:
    """Each split's texts (<texts>/<split>.json.gz: documents and queries, as
    benchmarks/performance/cuda_embedding.py packs them) with its row-aligned vectors
    (<split>-doc-NNN.npy and <split>-query-NNN.npy in the --vectors folders)."""
    manifest = manifest_of(args.model)
    embedder = OnnxEmbedder(manifest, provider="cpu")  # its tokenizer says what was cut
    store = VectorStore(store_dir(args.store), manifest, producer=args.producer)
    for texts_file in sorted(Path(args.texts).glob("*.json.gz")):
        packed = json.loads(gzip.decompress(texts_file.read_bytes()))
        split = packed["split"]
        for kind, field, tag in (("document", "documents", "doc"), ("query", "queries", "query")):
            texts = packed[field]
            files = sorted((f for folder in args.vectors
                            for f in Path(folder).glob(f"{split}-{tag}-*.npy")),
                           key=lambda f: f.name)
            vectors = np.concatenate([np.load(f) for f in files]).astype(np.float32)
            if vectors.shape != (len(texts), manifest.dimension):
                raise SystemExit(f"{split} {kind}: {len(texts)} texts but vectors of shape "
                                 f"{vectors.shape} in {[f.name for f in files]}")
            if manifest.normalize:  # fp16 on the way: normalise again as the model does
                vectors /= np.clip(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12, None)
            truncated = [bool(e.overflowing) for e in embedder.encode(texts, kind)]
            store.put(kind, texts, Embedded(vectors, truncated))
            print(f"{split} {kind}: {len(texts)} vectors from {len(files)} file(s)", flush=True)
    print(f"{len(store)} vectors in {store.path}; producers: {'; '.join(store.producers())}")


def per_set(raw: str) -> dict[str, int]:
    """"longmemeval=40,scifact=400" -> {"longmemeval": 40, "scifact": 400}."""
    pairs = [part.split("=", 1) for part in raw.split(",") if part]
    return {name: int(n) for name, n in pairs}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks embed-store",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", help="catalogue model (default: the served manifest)")
    parser.add_argument("--store", help=f"folder (default $RECALLMESH_EMBEDDING_VECTOR_STORE "
                        f"or {VECTOR_STORE})")
    sub = parser.add_subparsers(dest="command")
    imp = sub.add_parser("import", help="store vectors computed elsewhere")
    imp.add_argument("--texts", required=True, help="folder of <split>.json.gz")
    imp.add_argument("--vectors", type=lambda s: s.split(","), required=True,
                     help="folders holding <split>-doc-NNN.npy / <split>-query-NNN.npy")
    imp.add_argument("--producer", required=True)
    parser.add_argument("--sets", type=lambda s: s.split(","),
                        default=["locomo", "longmemeval", "scifact"])
    parser.add_argument("--limit", type=per_set, default={},
                        help="name=N,...: only the first N scored queries of a set (and what "
                        "they are ranked among), as the harness's --limit")
    parser.add_argument("--corpus-sample", type=per_set, default={},
                        help="name=N,...: a one-namespace set's corpus cut to N documents, as "
                        "the harness's --corpus-sample")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--batch-tokens", type=int, default=16384)
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--concepts", default=os.environ.get("RECALLMESH_CONCEPT_EXTRACTOR",
                                                             "spacy"),
                        help="the indexer's concept extractor, whose names are embedded too "
                        "(none: skip)")
    args = parser.parse_args(argv)
    (import_vectors if args.command == "import" else prefill)(args)


if __name__ == "__main__":
    main()
