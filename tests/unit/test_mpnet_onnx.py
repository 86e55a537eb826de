"""The torch-free MPNet exporter (recallmesh/embedding_models/build/mpnet_onnx.py) on a tiny random
checkpoint:
the ONNX graph against a plain numpy forward pass of the same weights (written from the
Hugging Face MPNet definition), padding that does not change real tokens, and byte-identical
builds."""

from __future__ import annotations

import json
from math import erf, log
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from recallmesh.embedding_models.build.mpnet_onnx import build

HIDDEN, HEADS, INTER, LAYERS, VOCAB, POSITIONS, BUCKETS, PAD = 8, 2, 16, 2, 50, 40, 32, 1


def tiny_checkpoint(folder: Path) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    shapes = {"embeddings.word_embeddings.weight": (VOCAB, HIDDEN),
              "embeddings.position_embeddings.weight": (POSITIONS, HIDDEN),
              "embeddings.LayerNorm.weight": (HIDDEN,), "embeddings.LayerNorm.bias": (HIDDEN,),
              "encoder.relative_attention_bias.weight": (BUCKETS, HEADS)}
    for i in range(LAYERS):
        p = f"encoder.layer.{i}"
        for name in "qkvo":
            shapes[f"{p}.attention.attn.{name}.weight"] = (HIDDEN, HIDDEN)
            shapes[f"{p}.attention.attn.{name}.bias"] = (HIDDEN,)
        shapes |= {f"{p}.attention.LayerNorm.weight": (HIDDEN,),
                   f"{p}.attention.LayerNorm.bias": (HIDDEN,),
                   f"{p}.intermediate.dense.weight": (INTER, HIDDEN),
                   f"{p}.intermediate.dense.bias": (INTER,),
                   f"{p}.output.dense.weight": (HIDDEN, INTER),
                   f"{p}.output.dense.bias": (HIDDEN,),
                   f"{p}.output.LayerNorm.weight": (HIDDEN,),
                   f"{p}.output.LayerNorm.bias": (HIDDEN,)}
    weights = {k: rng.normal(0, 0.5, s).astype(np.float32) for k, s in shapes.items()}
    header, blobs, offset = {}, [], 0
    for key in sorted(weights):
        data = weights[key].tobytes()
        header[key] = {"dtype": "F32", "shape": list(weights[key].shape),
                       "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    head = json.dumps(header).encode()
    (folder / "model.safetensors").write_bytes(len(head).to_bytes(8, "little") + head
                                               + b"".join(blobs))
    (folder / "config.json").write_text(json.dumps({
        "hidden_size": HIDDEN, "num_attention_heads": HEADS, "intermediate_size": INTER,
        "num_hidden_layers": LAYERS, "vocab_size": VOCAB, "max_position_embeddings": POSITIONS,
        "relative_attention_num_buckets": BUCKETS, "layer_norm_eps": 1e-5,
        "pad_token_id": PAD, "hidden_act": "gelu", "model_type": "mpnet"}))
    return weights


def bucket(relative: int, buckets: int = BUCKETS, max_distance: int = 128) -> int:
    """MPNetEncoder.relative_position_bucket for one relative position (key - query)."""
    n, half = -relative, buckets // 2
    out = half if n < 0 else 0
    n = abs(n)
    exact = half // 2
    if n < exact:
        return out + n
    large = exact + int(log(n / exact) / log(max_distance / exact) * (half - exact))
    return out + min(large, half - 1)


def norm(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    normed: np.ndarray = (x - mean) / np.sqrt(var + 1e-5) * w + b
    return normed


def reference(weights: dict[str, np.ndarray], ids: np.ndarray) -> np.ndarray:
    """last_hidden_state of one unpadded sequence, in numpy (float64)."""
    w = {k: v.astype(np.float64) for k, v in weights.items()}
    seq = len(ids)
    positions = np.arange(seq) + PAD + 1
    h = norm(w["embeddings.word_embeddings.weight"][ids]
             + w["embeddings.position_embeddings.weight"][positions],
             w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
    table = w["encoder.relative_attention_bias.weight"]
    bias = np.array([[table[bucket(k - q)] for k in range(seq)] for q in range(seq)])
    bias = bias.transpose(2, 0, 1)  # heads, q, k
    d = HIDDEN // HEADS
    gelu = np.vectorize(lambda x: 0.5 * x * (1 + erf(x / np.sqrt(2))))
    for i in range(LAYERS):
        p = f"encoder.layer.{i}"

        def lin(x: np.ndarray, name: str, p: str = p) -> np.ndarray:
            out: np.ndarray = x @ w[f"{p}.{name}.weight"].T + w[f"{p}.{name}.bias"]
            return out

        q, k, v = (lin(h, f"attention.attn.{n}").reshape(seq, HEADS, d).transpose(1, 0, 2)
                   for n in "qkv")
        scores = q @ k.transpose(0, 2, 1) / np.sqrt(d) + bias
        probs = np.exp(scores - scores.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        context = (probs @ v).transpose(1, 0, 2).reshape(seq, HIDDEN)
        h = norm(lin(context, "attention.attn.o") + h, w[f"{p}.attention.LayerNorm.weight"],
                 w[f"{p}.attention.LayerNorm.bias"])
        out = lin(gelu(lin(h, "intermediate.dense")), "output.dense")
        h = norm(out + h, w[f"{p}.output.LayerNorm.weight"], w[f"{p}.output.LayerNorm.bias"])
    return h


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, np.ndarray], Path, Path]:
    folder = tmp_path_factory.mktemp("tiny-mpnet")
    weights = tiny_checkpoint(folder)
    out = folder / "model.onnx"
    build(folder / "model.safetensors", folder / "config.json", out)
    return weights, folder, out


def test_graph_matches_a_numpy_forward_pass_with_padding(
        tiny: tuple[dict[str, np.ndarray], Path, Path]) -> None:
    weights, _, onnx_path = tiny
    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    texts = [[0, 5, 9, 17, 2], [0, 33, 2], [0] + list(range(3, 30)) + [2]]  # up to 29 tokens
    width = max(map(len, texts))
    ids = np.full((len(texts), width), PAD, np.int64)
    mask = np.zeros_like(ids)
    for row, t in enumerate(texts):
        ids[row, :len(t)], mask[row, :len(t)] = t, 1
    states = session.run(["last_hidden_state"], {"input_ids": ids, "attention_mask": mask})[0]
    assert states.shape == (3, width, HIDDEN) and states.dtype == np.float32
    for row, t in enumerate(texts):
        want = reference(weights, np.array(t))
        assert np.abs(states[row, :len(t)] - want).max() < 1e-4
        alone = session.run(["last_hidden_state"], {"input_ids": np.array([t], np.int64),
                                                    "attention_mask": np.ones((1, len(t)),
                                                                              np.int64)})[0]
        assert np.abs(alone[0] - states[row, :len(t)]).max() < 1e-5


def test_builds_are_byte_identical(tiny: tuple[dict[str, np.ndarray], Path, Path]) -> None:
    _, folder, first = tiny
    again = folder / "again.onnx"
    build(folder / "model.safetensors", folder / "config.json", again)
    assert again.read_bytes() == first.read_bytes()
