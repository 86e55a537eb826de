"""The torch-free nomic-bert exporter (recallmesh/embedding_models/build/nomic_onnx.py) on a
tiny random GGUF
file written here: the ONNX graph against a plain numpy forward pass (rotary NeoX style,
SwiGLU, post-LN), padding that does not change real tokens, byte-identical builds, the
tokenizer restored to BERT spelling, and clear errors on files it cannot read."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
from tokenizers import Tokenizer

from recallmesh.embedding_models.build.nomic_onnx import GGUFError, build, build_tokenizer
from tests.tiny_nomic import (
    BASE,
    EPS,
    HEADS,
    HIDDEN,
    LAYERS,
    tiny_model,
    write_gguf,
)


def norm(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    normed: np.ndarray = (x - x.mean(-1, keepdims=True)) / np.sqrt(
        x.var(-1, keepdims=True) + EPS) * w + b
    return normed


def reference(w: dict[str, np.ndarray], ids: np.ndarray) -> np.ndarray:
    """last_hidden_state of one unpadded sequence, in numpy (float64), token type 0."""
    seq, d = len(ids), HIDDEN // HEADS
    x = norm(w["token_embd.weight"][ids] + w["token_types.weight"][0],
             w["token_embd_norm.weight"], w["token_embd_norm.bias"])
    inv = 1.0 / BASE ** (np.arange(0, d, 2) / d)
    angle = np.outer(np.arange(seq), np.concatenate([inv, inv]))  # [s, d]

    def rope(t: np.ndarray) -> np.ndarray:  # t [heads, s, d]
        turned = np.concatenate([-t[..., d // 2:], t[..., :d // 2]], -1)
        rotated: np.ndarray = t * np.cos(angle) + turned * np.sin(angle)
        return rotated

    for i in range(LAYERS):
        p = f"blk.{i}"
        q, k, v = np.split(x @ w[f"{p}.attn_qkv.weight"].T, 3, axis=-1)
        q, k, v = (t.reshape(seq, HEADS, d).transpose(1, 0, 2) for t in (q, k, v))
        scores = rope(q) @ rope(k).transpose(0, 2, 1) / np.sqrt(d)
        probs = np.exp(scores - scores.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        context = (probs @ v).transpose(1, 0, 2).reshape(seq, HIDDEN)
        x = norm(x + context @ w[f"{p}.attn_output.weight"].T,
                 w[f"{p}.attn_output_norm.weight"], w[f"{p}.attn_output_norm.bias"])
        gate = x @ w[f"{p}.ffn_gate.weight"].T
        mlp = (x @ w[f"{p}.ffn_up.weight"].T) * gate / (1 + np.exp(-gate))
        x = norm(x + mlp @ w[f"{p}.ffn_down.weight"].T,
                 w[f"{p}.layer_output_norm.weight"], w[f"{p}.layer_output_norm.bias"])
    return x


# The exported graph's folder, the GGUF it came from, its weights (float64) and a session.
Exported = tuple[Path, Path, dict[str, np.ndarray], ort.InferenceSession]


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Exported:
    folder = tmp_path_factory.mktemp("nomic")
    gguf, weights = tiny_model(folder)
    build(gguf, folder / "model.onnx")
    return folder, gguf, weights, ort.InferenceSession(str(folder / "model.onnx"))


def test_graph_matches_a_numpy_forward_pass_with_padding(exported: Exported) -> None:
    _, _, weights, session = exported
    assert [i.name for i in session.get_inputs()] == [
        "input_ids", "attention_mask", "token_type_ids"]
    rows = [np.array([2, 5, 6, 7, 8, 9, 3]), np.array([2, 6, 12, 3])]  # different lengths
    width = max(map(len, rows))
    ids = np.zeros((len(rows), width), np.int64)
    mask = np.zeros_like(ids)
    for n, row in enumerate(rows):
        ids[n, :len(row)], mask[n, :len(row)] = row, 1
    out = session.run(None, {"input_ids": ids, "attention_mask": mask,
                             "token_type_ids": np.zeros_like(ids)})[0]
    for n, row in enumerate(rows):
        want = reference(weights, row)
        assert np.abs(out[n, :len(row)] - want).max() < 1e-4
    # a long sequence: the rotary tables are computed for any length
    long = np.array([[2] + [5, 6, 7] * 30 + [3]])
    out = session.run(None, {"input_ids": long, "attention_mask": np.ones_like(long),
                             "token_type_ids": np.zeros_like(long)})[0]
    assert np.abs(out[0] - reference(weights, long[0])).max() < 1e-4


def test_build_is_byte_identical(exported: Exported, tmp_path: Path) -> None:
    folder, gguf, _, _ = exported
    build(gguf, tmp_path / "again.onnx")
    assert (tmp_path / "again.onnx").read_bytes() == (folder / "model.onnx").read_bytes()


def test_tokenizer_restores_bert_wordpiece_spelling(exported: Exported, tmp_path: Path) -> None:
    _, gguf, _, _ = exported
    build_tokenizer(gguf, tmp_path / "tokenizer.json")
    tokenizer = Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    encoded = tokenizer.encode("The CATS sat on the mat sating, dog")
    assert encoded.tokens == ["[CLS]", "the", "cat", "##s", "sat", "on", "the", "mat", "sat",
                              "##ing", "[UNK]", "[UNK]", "[SEP]"]
    assert encoded.ids[:4] == [2, 5, 6, 12]  # [CLS] the cat ##s
    built = (tmp_path / "tokenizer.json").read_bytes()
    build_tokenizer(gguf, tmp_path / "again.json")
    assert (tmp_path / "again.json").read_bytes() == built


def test_files_it_cannot_read_are_clear_errors(tmp_path: Path) -> None:
    not_gguf = tmp_path / "x.gguf"
    not_gguf.write_bytes(b"PK\x03\x04 not a gguf")
    with pytest.raises(GGUFError, match="not a GGUF file"):
        build(not_gguf, tmp_path / "x.onnx")
    other = tmp_path / "llama.gguf"
    write_gguf(other, {"general.architecture": "llama"}, {})
    with pytest.raises(GGUFError, match="expected 'nomic-bert'"):
        build(other, tmp_path / "x.onnx")
    assert not (tmp_path / "x.onnx").exists()
