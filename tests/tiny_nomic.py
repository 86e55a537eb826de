"""A tiny random nomic-bert GGUF file, written for tests: the exporter's
(tests/unit/test_nomic_onnx.py), the int8 builder's and the lab's precision benchmark's
(benchmarks/tests/unit/test_embedding_precision.py) alike."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

HIDDEN, HEADS, FFN, LAYERS, TYPES, BASE, EPS = 8, 2, 12, 2, 2, 1000.0, 1e-12
WORDS = ["the", "cat", "sat", "on", "mat", "s", "ing"]
TOKENS = (["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
          + [f"\u2581{w}" for w in WORDS] + ["s", "ing"])  # continuations carry no marker


def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack("<Q", len(data)) + data


GgufValue = str | bool | int | float | list[str]


def _value(value: GgufValue) -> bytes:
    """A GGUF key/value payload: type id, then the value."""
    if isinstance(value, str):
        return struct.pack("<I", 8) + _string(value)
    if isinstance(value, bool):
        return struct.pack("<I?", 7, value)
    if isinstance(value, int):
        return struct.pack("<II", 4, value)
    if isinstance(value, float):
        return struct.pack("<If", 6, value)
    assert isinstance(value, list) and all(isinstance(v, str) for v in value)
    return struct.pack("<IIQ", 9, 8, len(value)) + b"".join(_string(v) for v in value)


def write_gguf(path: Path, meta: dict[str, GgufValue], tensors: dict[str, np.ndarray]) -> None:
    """GGUF v3: header, key/values, tensor infos (dims fastest first), aligned data."""
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(meta))
    head += b"".join(_string(k) + _value(v) for k, v in meta.items())
    blobs, offset = [], 0
    for name, array in tensors.items():
        kind = 1 if array.dtype == np.float16 else 0
        dims = list(reversed(array.shape))
        head += (_string(name) + struct.pack("<I", len(dims))
                 + b"".join(struct.pack("<Q", d) for d in dims) + struct.pack("<IQ", kind, offset))
        data = array.tobytes()
        padded = data + b"\0" * (-len(data) % 32)
        blobs.append(padded)
        offset += len(padded)
    path.write_bytes(head + b"\0" * (-len(head) % 32) + b"".join(blobs))


def tiny_model(folder: Path) -> tuple[Path, dict[str, np.ndarray]]:
    rng = np.random.default_rng(11)
    shapes = {"token_embd.weight": (len(TOKENS), HIDDEN), "token_types.weight": (TYPES, HIDDEN),
              "token_embd_norm.weight": (HIDDEN,), "token_embd_norm.bias": (HIDDEN,)}
    for i in range(LAYERS):
        p = f"blk.{i}"
        shapes |= {f"{p}.attn_qkv.weight": (3 * HIDDEN, HIDDEN),
                   f"{p}.attn_output.weight": (HIDDEN, HIDDEN),
                   f"{p}.attn_output_norm.weight": (HIDDEN,),
                   f"{p}.attn_output_norm.bias": (HIDDEN,),
                   f"{p}.ffn_up.weight": (FFN, HIDDEN), f"{p}.ffn_gate.weight": (FFN, HIDDEN),
                   f"{p}.ffn_down.weight": (HIDDEN, FFN),
                   f"{p}.layer_output_norm.weight": (HIDDEN,),
                   f"{p}.layer_output_norm.bias": (HIDDEN,)}
    # matrices in f16 as the real file ships them, norms in f32
    weights = {k: rng.normal(0, 0.5, s).astype(np.float16 if len(s) == 2 else np.float32)
               for k, s in shapes.items()}
    meta: dict[str, GgufValue] = {"general.architecture": "nomic-bert", "general.alignment": 32,
            "nomic-bert.block_count": LAYERS, "nomic-bert.embedding_length": HIDDEN,
            "nomic-bert.feed_forward_length": FFN, "nomic-bert.attention.head_count": HEADS,
            "nomic-bert.attention.layer_norm_epsilon": EPS, "nomic-bert.rope.freq_base": BASE,
            "nomic-bert.attention.causal": False, "tokenizer.ggml.model": "bert",
            "tokenizer.ggml.tokens": TOKENS, "tokenizer.ggml.token_type_count": TYPES}
    path = folder / "tiny.gguf"
    write_gguf(path, meta, weights)
    return path, {k: v.astype(np.float64) for k, v in weights.items()}
