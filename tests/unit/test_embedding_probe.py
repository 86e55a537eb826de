"""The model self-check at start: a manifest's probe (fixed texts and the reference build's
vectors of them) against the vectors the model computes here."""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path

import numpy as np
import pytest

from recallmesh.embedding_models.fetch import catalogue_entry
from recallmesh.embedding_models.manifest import (
    PROBE_MIN_COSINE,
    ModelManifest,
    ModelProbe,
    decode_vector,
    encode_vector,
)
from recallmesh.services.embedding.core import (
    Embedded,
    OnnxEmbedder,
    check_probe,
    make_probe,
    probe_cosine,
)
from recallmesh.shared.settings import ConfigError
from tests.models import suite_manifest

DIM = 8
TEXTS = ["one", "two", "three"]


def reference(texts: list[str], kind: str) -> Embedded:
    """A fake model: one fixed unit vector per text."""
    rows = np.stack([np.roll(np.linspace(1, 2, DIM), TEXTS.index(t)) for t in texts])
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return Embedded(rows.astype(np.float32), [False] * len(texts))


def noise(texts: list[str], kind: str) -> Embedded:
    """A model that runs but computes the wrong vectors (as int8 without VNNI does)."""
    rows = np.random.default_rng(0).standard_normal((len(texts), DIM)).astype(np.float32)
    return Embedded(rows, [False] * len(texts))


def manifest_with(tmp_path: Path, probe: object | None) -> ModelManifest:
    raw = {"model_id": "m", "onnx": "model.onnx", "tokenizer": "tokenizer.json",
           "dimension": DIM, "max_length": 16, "precision": "int8"}
    if probe is not None:
        raw["probe"] = probe
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(raw))
    return ModelManifest.load(path)


def test_a_probe_round_trips_through_the_manifest(tmp_path: Path) -> None:
    probe = make_probe(reference, TEXTS)
    manifest = manifest_with(tmp_path, probe)
    assert manifest.probe is not None
    assert manifest.probe.texts == tuple(TEXTS) and manifest.probe.kind == "document"
    assert manifest.probe.min_cosine == PROBE_MIN_COSINE
    want = reference(TEXTS, "document").vectors
    assert np.allclose(np.asarray(manifest.probe.vectors), want, atol=1e-3)  # float16
    assert decode_vector(encode_vector([0.5, -1.0]), 2) == (0.5, -1.0)
    assert manifest_with(tmp_path, None).probe is None


@pytest.mark.parametrize("change, message", [
    ({"vectors": ["AAAA"]}, "3 texts but 1 vectors"),
    ({"vectors": ["AAAAAA=="] * 3}, "holds 2 values, not 8"),
    ({"vectors": ["not base64!"] * 3}, "not base64"),
    ({"kind": "passage"}, "probe kind must be"),
    ({"min_cosine": 2}, "min_cosine must be"),
    ({"extra": 1}, "unknown probe keys"),
    ({"texts": []}, "needs lists"),
])
def test_a_bad_probe_is_a_config_error(tmp_path: Path, change: dict[str, object],
                                       message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        manifest_with(tmp_path, make_probe(reference, TEXTS) | change)


def test_a_model_that_computes_its_reference_passes(tmp_path: Path) -> None:
    manifest = manifest_with(tmp_path, make_probe(reference, TEXTS))
    assert check_probe(manifest, reference) == pytest.approx(1.0, abs=1e-5)


def test_a_model_that_computes_wrong_vectors_is_refused(tmp_path: Path) -> None:
    manifest = manifest_with(tmp_path, make_probe(reference, TEXTS))
    assert probe_cosine(manifest, noise) < PROBE_MIN_COSINE
    with pytest.raises(ConfigError) as err:
        check_probe(manifest, noise)
    message = str(err.value)
    assert "model m" in message and "computes wrong vectors on this machine" in message
    assert f"below {PROBE_MIN_COSINE}" in message and "precision int8" in message
    assert "reduce_range" in message and "VNNI" in message
    assert "fp32 model" in message and "RECALLMESH_EMBEDDING_MANIFEST" in message


def test_a_lower_min_cosine_of_the_probe_lets_it_pass(tmp_path: Path) -> None:
    manifest = manifest_with(tmp_path, make_probe(reference, TEXTS) | {"min_cosine": -1})
    assert check_probe(manifest, noise) is not None


def test_a_manifest_without_a_probe_is_not_checked(tmp_path: Path,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="recallmesh.services.embedding.core"):
        assert check_probe(manifest_with(tmp_path, None), noise) is None
    assert [r.getMessage() for r in caplog.records if "no probe" in r.getMessage()]


def test_the_catalogue_probes() -> None:
    """Every probe parses; the int8 entry's references are the fp32 model's vectors."""
    fp32, int8 = catalogue_entry("nomic-embed-text-v1.5"), catalogue_entry(
        "nomic-embed-text-v1.5-int8")
    assert int8["probe"] == fp32["probe"]
    for name in ("nomic-embed-text-v1.5", "all-MiniLM-L6-v2"):
        entry = catalogue_entry(name)
        probe = ModelProbe.from_dict(entry["probe"], entry["manifest"]["dimension"])
        assert len(probe.texts) == 3
        for vector in probe.vectors:
            assert float(np.linalg.norm(vector)) == pytest.approx(1.0, abs=1e-3)


def test_the_served_model_passes_its_catalogue_probe(manifest: ModelManifest) -> None:
    """The real default model (fp32) against its catalogue probe, whether or not the cached
    manifest.json has been rewritten with it yet."""
    probe = ModelProbe.from_dict(catalogue_entry("nomic-embed-text-v1.5")["probe"], 768)
    manifest = dataclasses.replace(manifest, probe=probe)
    embedder = OnnxEmbedder(manifest, provider="cpu", max_batch=4)
    assert check_probe(manifest, embedder.embed) == pytest.approx(1.0, abs=1e-3)


def test_minilm_passes_its_catalogue_probe() -> None:
    manifest = ModelManifest.load(suite_manifest("all-MiniLM-L6-v2"))
    probe = ModelProbe.from_dict(catalogue_entry("all-MiniLM-L6-v2")["probe"], 384)
    manifest = dataclasses.replace(manifest, probe=probe)
    embedder = OnnxEmbedder(manifest, provider="cpu", max_batch=4)
    assert check_probe(manifest, embedder.embed) == pytest.approx(1.0, abs=1e-3)
