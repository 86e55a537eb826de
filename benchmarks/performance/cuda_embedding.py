"""nomic-embed-text-v1.5 (fp32) in torch on a CUDA machine that has no internet: document
vectors for the benchmark splits, throughput by batch size, one-query latency.

The device only gets what a call carries (the working tree plus a few ignored folders, at
most 64 MiB a call), so the model travels in parts and is rebuilt there:

  python -m benchmarks.performance.cuda_embedding pack --out .gpu           # here
      .gpu/part-1/ .. part-K/   the fp32 model.onnx as a weight-less graph (skeleton.onnx,
                                index.json, in part-1 with tokenizer.json and manifest.json)
                                plus its initializers, each stored as fp16 where the fp16
                                round trip is exact (most: the weights were widened from an
                                f16 GGUF), else as its original bytes; one weights-K.bin of
                                at most 55 MiB (all of part-1 included) per folder
      .gpu/texts/SPLIT.json.gz  per split (locomo, longmemeval, scifact): "documents", every
                                stored memory's content (benchmarks.harness.data.load with
                                unanswerable=True, all scopes), unique and sorted, and
                                "queries", the query texts (scored and unanswerable), unique
                                and sorted
  python -m benchmarks.performance.cuda_embedding unpack --parts DIR --to MODELDIR
      rebuilds MODELDIR/model.onnx (+ tokenizer.json, manifest.json) and checks the sha256
      of every file the manifest pins; DIR holds the part-K folders
  python -m benchmarks.performance.cuda_embedding embed --model MODELDIR --texts DIR/texts \\
          --keep /root/keep --out $OUT [--first-files 7] [--device cuda] [--limit N]
      converts the graph to torch (onnx2torch; torchvision, which it imports for two ops
      this graph lacks, is stubbed), fp32 with TF32 off, and embeds every split's documents
      ("search_document: ") and queries ("search_query: ") in batches sorted by token
      length, each padded to its longest text; tokeniser, truncation, padding id, prefixes
      and pooling are the embedding service's own (OnnxEmbedder, core.pool). Writes
      KEEP/SPLIT-{doc,query}-NNN.npy (fp16, (n, 768), rows in the texts file's order, at
      most 16 MiB a file) and KEEP/report.json, then copies the report and the first files
      into OUT (at most --first-files of them and 63 MiB in all). The report: device,
      torch version, texts/s at batch sizes 1, 8, 32, 128, 512 on LoCoMo documents, one-query
      latency p50/p95/p99 over 200 LoCoMo questions after 20 warm-up ones, seconds per split,
      and the cosine of GPU vectors to onnxruntime CPU vectors (OnnxEmbedder, provider cpu)
      for 200 texts (100 LoCoMo documents, 50 SciFact documents, 50 LoCoMo questions).
  python -m benchmarks.performance.cuda_embedding fetch --keep /root/keep --out $OUT --skip K
      copies the next vector files (from the K-th on, same limits) into OUT.

--device cpu and --limit N (documents and queries per split) run the same path on a CPU for a
check. Files in KEEP are listed in report.json ("files": name, rows, bytes, sha256) in the
order embed and fetch hand them out.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import shutil
import statistics
import sys
import time
import types
from pathlib import Path
from typing import Any

import numpy as np

from recallmesh.embedding_models.manifest import DEFAULT_MODEL, ModelManifest, model_cache_dir

SPLITS = ("locomo", "longmemeval", "scifact")
DATASETS = Path("/work/shared/datasets")
PINNED_SHA256 = "8896af064714b80dc3f56ffdbaecad7aa06ba8ea52e212d6fbb5231ecfba8817"
MIB = 1 << 20
PART_BYTES = 55 * MIB  # one part folder, everything in it
FILE_BYTES = 16 * MIB  # one vector file, header included
RETURN_FILES = 8  # what one device call can bring back
RETURN_BYTES = 63 * MIB
BATCH_SIZES = (1, 8, 32, 128, 512)
MAX_BATCH = 512
MAX_BATCH_TOKENS = 65536


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# ---------------------------------------------------------------- pack / unpack


def _f16_exact(a: np.ndarray) -> bool:
    if a.dtype != np.float32:
        return False
    with np.errstate(over="ignore"):
        back = a.astype(np.float16).astype(np.float32)
    return bool(np.array_equal(back.view(np.uint32), a.view(np.uint32)))


def pack(model_dir: Path, out: Path, with_texts: bool = True) -> None:
    import onnx
    from onnx import numpy_helper

    from benchmarks.harness.data import load

    manifest = ModelManifest.load(model_dir / "manifest.json")
    manifest.verify()
    model = onnx.load(str(manifest.onnx))
    index: list[dict[str, Any]] = []
    payload = bytearray()
    for t in model.graph.initializer:
        if t.data_location != onnx.TensorProto.DEFAULT or not t.raw_data:
            raise SystemExit(f"initializer {t.name} is not stored as raw_data; pack cannot keep it")
        a = numpy_helper.to_array(t)
        if _f16_exact(a):
            data, kind = a.astype(np.float16).tobytes(), "f16"
        else:
            data, kind = bytes(t.raw_data), "raw"
        index.append({"name": t.name, "kind": kind, "nbytes": len(data)})
        payload += data
        t.raw_data = b""
    skeleton = model.SerializeToString()
    meta = {
        "model_sha256": sha256_file(manifest.onnx),
        "payload_sha256": sha256_bytes(bytes(payload)),
        "initializers": index,
    }
    if out.exists():
        for old in out.glob("part-*"):
            shutil.rmtree(old)
    first = out / "part-1"
    first.mkdir(parents=True)
    (first / "skeleton.onnx").write_bytes(skeleton)
    for src in (manifest.path, manifest.tokenizer):
        shutil.copyfile(src, first / src.name)
    meta_text = json.dumps(meta)
    room = PART_BYTES - len(skeleton) - len(meta_text) - 4096 - sum(
        p.stat().st_size for p in first.iterdir())
    k, start = 1, 0
    while start < len(payload):
        folder = out / f"part-{k}"
        folder.mkdir(exist_ok=True)
        end = min(len(payload), start + room)
        (folder / f"weights-{k}.bin").write_bytes(payload[start:end])
        start, k, room = end, k + 1, PART_BYTES
    meta["parts"] = k - 1
    (first / "index.json").write_text(json.dumps(meta))
    for folder in sorted(out.glob("part-*")):
        size = sum(p.stat().st_size for p in folder.iterdir())
        assert size <= PART_BYTES, folder
        log(f"{folder}: {size / MIB:.2f} MiB")
    if not with_texts:
        return

    texts = out / "texts"
    texts.mkdir(parents=True, exist_ok=True)
    for split in SPLITS:
        data = load(DATASETS / split, unanswerable=True)
        docs = sorted({m.content for ms in data.scopes.values() for m in ms})
        queries = sorted({q.text for q in data.queries + data.unanswerable})
        record = {"split": split, "files_sha256": data.files_sha256,
                  "documents": docs, "queries": queries}
        path = texts / f"{split}.json.gz"
        with gzip.open(path, "wt", encoding="utf-8", compresslevel=9) as f:
            json.dump(record, f, ensure_ascii=False)
        log(f"{path}: {len(docs)} documents, {len(queries)} queries, "
            f"{path.stat().st_size / MIB:.2f} MiB")


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(MIB), b""):
            digest.update(block)
    return digest.hexdigest()


def unpack(parts: Path, to: Path, accept_reserialized: bool = False) -> Path:
    import onnx

    first = parts / "part-1"
    meta = json.loads((first / "index.json").read_text())
    chunks = []
    for k in range(1, meta["parts"] + 1):
        path = parts / f"part-{k}" / f"weights-{k}.bin"
        if not path.is_file():
            raise SystemExit(f"missing {path}")
        chunks.append(path.read_bytes())
    payload = b"".join(chunks)
    if sha256_bytes(payload) != meta["payload_sha256"]:
        raise SystemExit("weights payload sha256 mismatch: a part is damaged or stale")
    model = onnx.ModelProto()
    model.ParseFromString((first / "skeleton.onnx").read_bytes())
    offset = 0
    for t, entry in zip(model.graph.initializer, meta["initializers"], strict=True):
        assert t.name == entry["name"]
        data = payload[offset: offset + entry["nbytes"]]
        offset += entry["nbytes"]
        if entry["kind"] == "f16":
            data = np.frombuffer(data, np.float16).astype(np.float32).tobytes()
        t.raw_data = data
    to.mkdir(parents=True, exist_ok=True)
    blob = model.SerializeToString()
    (to / "model.onnx").write_bytes(blob)
    for name in ("manifest.json", "tokenizer.json"):
        shutil.copyfile(first / name, to / name)
    got = sha256_bytes(blob)
    log(f"{to / 'model.onnx'}: sha256 {got}")
    if got != meta["model_sha256"]:
        if not accept_reserialized:
            raise SystemExit(f"model.onnx sha256 {got} != {meta['model_sha256']}")
        # Every tensor is bit-identical (the payload sha256 matched) and the graph is the
        # packed one; only this protobuf's serialisation differs. Say so and pin the new hash.
        raw = json.loads((to / "manifest.json").read_text())
        raw["sha256"]["model.onnx"] = got
        (to / "manifest.json").write_text(json.dumps(raw, indent=2))
        (to / "REBUILT.txt").write_text(f"sha256 {got}, packed from {meta['model_sha256']}\n")
        log("model.onnx re-serialised differently; tensors bit-identical; manifest re-pinned")
    ModelManifest.load(to / "manifest.json").verify()
    return to


# ---------------------------------------------------------------- torch model


def _stub_torchvision() -> None:
    """onnx2torch imports torchvision at load time for NonMaxSuppression and RoiAlign only;
    this graph has neither, and the device has no torchvision."""
    try:
        import torchvision  # noqa: F401
        return
    except ImportError:
        pass

    def missing(*_: Any, **__: Any) -> Any:
        raise RuntimeError("torchvision is stubbed out: this op is not supported here")

    tv = types.ModuleType("torchvision")
    ops = types.ModuleType("torchvision.ops")
    ops.nms = ops.roi_align = ops.box_convert = missing  # type: ignore[attr-defined]
    tv.ops = ops  # type: ignore[attr-defined]
    sys.modules["torchvision"] = tv
    sys.modules["torchvision.ops"] = ops


class TorchEmbedder:
    """The ONNX graph in torch, fed and pooled as OnnxEmbedder does (its tokenizer, padding
    id, prefixes; core.pool on the returned token states)."""

    def __init__(self, reference: Any, device: str) -> None:
        import torch

        _stub_torchvision()
        import onnx2torch

        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.set_float32_matmul_precision("highest")
        self.torch = torch
        self.reference = reference  # an OnnxEmbedder (onnxruntime CPU)
        self.manifest = reference.manifest
        self.device = torch.device(device)
        started = time.perf_counter()
        self.module = onnx2torch.convert(str(self.manifest.onnx)).to(self.device).eval()
        # Integer initializers are shapes, split sizes and axes, which onnx2torch reads on the
        # host (torch.Size(shape), split.tolist()); on the GPU every read is a device sync.
        self.host_buffers = []
        for name, buffer in list(self.module.named_buffers()):
            if buffer.dtype == torch.int64:
                owner, _, attr = name.rpartition(".")
                setattr(self.module.get_submodule(owner) if owner else self.module, attr,
                        buffer.cpu())
                self.host_buffers.append(name)
        self.convert_s = time.perf_counter() - started
        names = [i.name for i in reference.session.get_inputs()]
        self.input_names = names

    def encode(self, texts: list[str], kind: str) -> list[Any]:
        return self.reference.tokenizer.encode_batch(self.reference._prefixed(texts, kind))

    def run(self, encodings: list[Any]) -> np.ndarray:
        """One padded batch through the graph: (len(encodings), dimension) float32."""
        from recallmesh.services.embedding.core import pool

        torch = self.torch
        width = max(len(e.ids) for e in encodings)
        ids = np.full((len(encodings), width), self.reference.pad_id, np.int64)
        mask = np.zeros((len(encodings), width), np.int64)
        for row, e in enumerate(encodings):
            ids[row, : len(e.ids)] = e.ids
            mask[row, : len(e.ids)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        args = [torch.from_numpy(feeds[n]).to(self.device) for n in self.input_names]
        with torch.inference_mode():
            out = self.module(*args)
        if isinstance(out, (tuple, list)):
            out = out[0]
        states = out.float().cpu().numpy()
        return pool(states, mask, self.manifest)

    def embed(self, texts: list[str], kind: str) -> np.ndarray:
        encodings = self.encode(texts, kind)
        out = np.empty((len(texts), self.manifest.dimension), np.float32)
        for batch in plan(encodings):
            out[batch] = self.run([encodings[i] for i in batch])
        return out

    def sync(self) -> None:
        if self.device.type == "cuda":
            self.torch.cuda.synchronize()


def plan(encodings: list[Any]) -> list[list[int]]:
    """Indices sorted by token length, cut into batches of at most MAX_BATCH texts and
    MAX_BATCH_TOKENS padded tokens (each batch is padded to its longest text)."""
    lengths = [len(e.ids) for e in encodings]
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    batches: list[list[int]] = []
    batch: list[int] = []
    for i in order:
        if batch and (len(batch) >= MAX_BATCH or (len(batch) + 1) * lengths[i] > MAX_BATCH_TOKENS):
            batches.append(batch)
            batch = []
        batch.append(i)
    if batch:
        batches.append(batch)
    return batches


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def read_texts(texts: Path, split: str, limit: int | None) -> dict[str, Any]:
    with gzip.open(texts / f"{split}.json.gz", "rt", encoding="utf-8") as f:
        record = json.load(f)
    if limit is not None:
        record["documents"] = record["documents"][:limit]
        record["queries"] = record["queries"][:limit]
    return record


def write_vectors(keep: Path, stem: str, vectors: np.ndarray) -> list[dict[str, Any]]:
    rows = (FILE_BYTES - 4096) // (vectors.shape[1] * 2)
    half = vectors.astype(np.float16)
    files = []
    for n, start in enumerate(range(0, max(len(half), 1), rows)):
        path = keep / f"{stem}-{n:03d}.npy"
        np.save(path, half[start: start + rows])
        assert path.stat().st_size <= FILE_BYTES
        files.append({"name": path.name, "rows": int(len(half[start: start + rows])),
                      "first_row": start, "bytes": path.stat().st_size,
                      "sha256": sha256_file(path)})
    return files


def throughput(model: TorchEmbedder, texts: list[str], seconds: float) -> list[dict[str, Any]]:
    """Texts/s at each batch size: LoCoMo documents in a fixed shuffled order, consecutive
    batches of that size, each padded to its longest text; tokenised beforehand; timed from
    the numpy batch to pooled vectors on the host. Runs until `seconds` or one pass."""
    order = np.random.default_rng(7).permutation(len(texts))
    encodings = model.encode([texts[i] for i in order], "document")
    rows = []
    for size in BATCH_SIZES:
        batches = [encodings[i: i + size] for i in range(0, len(encodings), size)]
        model.run(batches[0])  # warm-up of this shape
        model.sync()
        done = tokens = padded = 0
        started = time.perf_counter()
        for batch in batches:
            model.run(batch)
            done += len(batch)
            tokens += sum(len(e.ids) for e in batch)
            padded += len(batch) * max(len(e.ids) for e in batch)
            if time.perf_counter() - started >= seconds:
                break
        model.sync()
        elapsed = time.perf_counter() - started
        rows.append({"batch_size": size, "texts": done, "seconds": round(elapsed, 4),
                     "texts_per_s": round(done / elapsed, 1),
                     "tokens_per_s": round(tokens / elapsed, 1),
                     "padded_tokens_per_s": round(padded / elapsed, 1)})
        log(f"batch {size}: {done / elapsed:.1f} texts/s")
    return rows


def latency(model: TorchEmbedder, queries: list[str], n: int, warmup: int) -> dict[str, Any]:
    """One query per call, end to end in process: prefix, tokenise, run, pool."""
    picked = [queries[i] for i in np.random.default_rng(11).permutation(len(queries))]
    for text in picked[:warmup]:
        model.embed([text], "query")
    model.sync()
    times = []
    for text in picked[warmup: warmup + n]:
        started = time.perf_counter()
        model.embed([text], "query")
        model.sync()
        times.append((time.perf_counter() - started) * 1000)
    if not times:  # a --limit check with too few questions
        return {"queries": 0, "warmup": warmup}
    return {"queries": len(times), "warmup": warmup,
            "p50_ms": round(percentile(times, 50), 3), "p95_ms": round(percentile(times, 95), 3),
            "p99_ms": round(percentile(times, 99), 3), "mean_ms": round(statistics.mean(times), 3)}


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a.astype(np.float64)
    b = b.astype(np.float64)
    return (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def embed(args: argparse.Namespace) -> None:
    import torch

    from recallmesh.services.embedding.core import OnnxEmbedder

    keep: Path = args.keep
    keep.mkdir(parents=True, exist_ok=True)
    for old in keep.glob("*.npy"):
        old.unlink()
    manifest = ModelManifest.load(args.model / "manifest.json")
    manifest.verify()
    reference = OnnxEmbedder(manifest, provider="cpu")
    model = TorchEmbedder(reference, args.device)
    log(f"converted in {model.convert_s:.1f} s on {model.device}")
    report: dict[str, Any] = {
        "model_id": manifest.model_id, "model_sha256": manifest.sha256.get("model.onnx"),
        "torch": torch.__version__, "device": args.device,
        "device_name": (torch.cuda.get_device_name(0) if model.device.type == "cuda"
                        else "cpu"),
        "tf32": {"matmul": torch.backends.cuda.matmul.allow_tf32,
                 "cudnn": torch.backends.cudnn.allow_tf32},
        "convert_seconds": round(model.convert_s, 2),
        "int64_buffers_on_host": len(model.host_buffers),
        "model_rebuilt_note": ((args.model / "REBUILT.txt").read_text().strip()
                               if (args.model / "REBUILT.txt").is_file() else ""),
        "max_batch": MAX_BATCH, "max_batch_tokens": MAX_BATCH_TOKENS,
    }
    splits = {s: read_texts(args.texts, s, args.limit) for s in SPLITS}

    # Cosine to onnxruntime CPU first: a broken conversion should stop before the long part.
    locomo, scifact = splits["locomo"], splits["scifact"]
    rng = np.random.default_rng(3)
    sample = {
        "locomo-doc": ([locomo["documents"][i] for i in
                        rng.choice(len(locomo["documents"]), min(100, len(locomo["documents"])),
                                   replace=False)], "document"),
        "scifact-doc": ([scifact["documents"][i] for i in
                         rng.choice(len(scifact["documents"]), min(50, len(scifact["documents"])),
                                    replace=False)], "document"),
        "locomo-query": ([locomo["queries"][i] for i in
                          rng.choice(len(locomo["queries"]), min(50, len(locomo["queries"])),
                                     replace=False)], "query"),
    }
    check: dict[str, Any] = {}
    worst = 1.0
    for name, (texts, kind) in sample.items():
        gpu = model.embed(texts, kind)
        cpu = reference.embed(texts, kind).vectors
        c32 = cosines(gpu, cpu)
        c16 = cosines(gpu.astype(np.float16), cpu)
        check[name] = {"texts": len(texts), "min": float(c32.min()), "mean": float(c32.mean()),
                       "fp16_min": float(c16.min()), "fp16_mean": float(c16.mean())}
        worst = min(worst, float(c32.min()))
        log(f"cosine {name}: min {c32.min():.6f} mean {c32.mean():.6f}")
    report["cosine_vs_onnxruntime_cpu"] = check
    if worst < args.min_cosine:
        (args.out / "report.json").write_text(json.dumps(report, indent=1))
        raise SystemExit(f"GPU vectors differ from onnxruntime's (min cosine {worst:.6f})")

    report["throughput_locomo_documents"] = throughput(
        model, locomo["documents"], args.throughput_seconds)
    report["query_latency_locomo"] = latency(model, locomo["queries"], 200, 20)
    log(f"latency {report['query_latency_locomo']}")

    files: list[dict[str, Any]] = []
    timings: dict[str, Any] = {}
    vector_files: dict[str, list[dict[str, Any]]] = {}
    for split, record in splits.items():
        for kind, key, stem in (("query", "queries", "query"), ("document", "documents", "doc")):
            texts = record[key]
            model.sync()
            started = time.perf_counter()
            vectors = model.embed(texts, kind)
            model.sync()
            elapsed = time.perf_counter() - started
            name = f"{split}-{stem}"
            timings[name] = {"texts": len(texts), "seconds": round(elapsed, 3),
                             "texts_per_s": round(len(texts) / max(elapsed, 1e-9), 1)}
            vector_files[name] = write_vectors(keep, name, vectors)
            log(f"{name}: {len(texts)} texts in {elapsed:.1f} s")
    # Small files first, so the first call brings back whole splits.
    for name in sorted(vector_files, key=lambda n: (not n.endswith("query"), n)):
        files += vector_files[name]
    report["embed_seconds"] = timings
    report["files"] = files
    if model.device.type == "cuda":
        report["max_memory_allocated_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
    (keep / "report.json").write_text(json.dumps(report, indent=1))
    args.out.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(keep / "report.json", args.out / "report.json")
    room = RETURN_BYTES - (keep / "report.json").stat().st_size
    copy_files(keep, args.out, 0, args.first_files, room)


def copy_files(keep: Path, out: Path, skip: int, count: int, room: int) -> None:
    listed = json.loads((keep / "report.json").read_text())["files"]
    out.mkdir(parents=True, exist_ok=True)
    taken = 0
    for entry in listed[skip:]:
        if taken >= count or entry["bytes"] > room:
            break
        shutil.copyfile(keep / entry["name"], out / entry["name"])
        room -= entry["bytes"]
        taken += 1
    left = len(listed) - skip - taken
    print(f"copied {taken} files ({', '.join(e['name'] for e in listed[skip: skip + taken])}); "
          f"{left} left" + (f": next `fetch --skip {skip + taken}`" if left else ""))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("pack")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--model", type=Path, default=model_cache_dir() / DEFAULT_MODEL)
    p = sub.add_parser("unpack")
    p.add_argument("--parts", type=Path, required=True)
    p.add_argument("--to", type=Path, required=True)
    p.add_argument("--accept-reserialized", action="store_true",
                   help="on a model.onnx sha256 mismatch with bit-identical tensors, go on")
    p = sub.add_parser("embed")
    p.add_argument("--model", type=Path, required=True)
    p.add_argument("--texts", type=Path, required=True)
    p.add_argument("--keep", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--first-files", type=int, default=RETURN_FILES - 1)
    p.add_argument("--device", default="cuda")
    p.add_argument("--limit", type=int, default=None, help="texts per split and kind (a check)")
    p.add_argument("--throughput-seconds", type=float, default=4.0)
    p.add_argument("--min-cosine", type=float, default=0.999)
    p = sub.add_parser("fetch")
    p.add_argument("--keep", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--skip", type=int, required=True)
    p.add_argument("--count", type=int, default=RETURN_FILES)
    args = parser.parse_args(argv)
    if args.command == "pack":
        pack(args.model, args.out)
    elif args.command == "unpack":
        unpack(args.parts, args.to, args.accept_reserialized)
    elif args.command == "embed":
        embed(args)
    else:
        copy_files(args.keep, args.out, args.skip, args.count, RETURN_BYTES)


if __name__ == "__main__":
    main()
