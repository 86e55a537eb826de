"""Torch-free exporter: a nomic-embed-text GGUF file (llama.cpp "nomic-bert") -> ONNX + tokenizer.

What it does
    Reads a GGUF file (the format llama.cpp and GPT4All ship models in: a header,
    key/values, tensor infos, then aligned F16/F32 data) and writes
    * ``model.onnx`` (opset 17, IR 8; fp32, the F16 weights widened):
          inputs   input_ids, attention_mask, token_type_ids   int64   [batch, seq]
          output   last_hidden_state                           float32 [batch, seq, hidden]
      pooling (mean over the mask) and L2 normalisation are left to the embedding service;
    * ``tokenizer.json``: the Hugging Face fast-tokenizer file of the BERT uncased
      WordPiece vocabulary stored in the GGUF file (llama.cpp's converter writes a
      word-initial piece as "\u2581piece" and a continuation as "piece"; the BERT
      spelling, "piece" / "##piece", is restored).
    Both outputs are byte-deterministic, so a catalogue entry can pin their sha256.

Architecture (nomic-bert, as llama.cpp's LLM_ARCH_NOMIC_BERT and Nomic's NomicBertModel
with rotary_emb_interleaved=False):
    * x = token embedding + token-type embedding, LayerNorm (no absolute positions);
    * per layer, post-LN, no biases: qkv = x @ Wqkv^T with rows [q | k | v]; rotary on q
      and k, NeoX (rotate_half) style over the whole head, base from the GGUF file, angles
      computed in the graph so any length works; softmax(q k^T / sqrt(d) + mask) v;
      x = LN(x + attn Wo^T); x = LN(x + (up(x) * silu(gate(x))) Wdown^T).

Checked against a float64 numpy forward pass (max abs diff ~5e-6 on short inputs,
cosine 1.0 of pooled vectors up to 2,048 tokens) and against fastembed's published test
vector for nomic-embed-text-v1.5 ("hello world": max diff 7e-4, the f16 weights' rounding;
the interleaved rotary convention misses it by 0.58). tests/unit/test_nomic_onnx.py checks the
graph against a numpy forward pass on a tiny GGUF file written in the test.

Usage
    python -m recallmesh.embedding_models.build.nomic_onnx --gguf FILE --out-dir DIR
"""

from __future__ import annotations

import argparse
import json
import math
import struct
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto

from recallmesh.embedding_models.build.onnx_graph import (
    Graph,
    additive_mask,
    encoder_model,
    layer_norm,
    weight,
    write_model,
)
from recallmesh.embedding_models.manifest import sha256_file

PRODUCER = "services.embedding.nomic_onnx"
ARCHITECTURE = "nomic-bert"
WORD_START = "\u2581"  # how llama.cpp's converter marks a word-initial WordPiece token

# GGUF value types (scalars by struct format; 8 = string, 9 = array) and tensor types.
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?",
            10: "<Q", 11: "<q", 12: "<d"}
_TENSOR_TYPES = {0: np.float32, 1: np.float16}


class GGUFError(ValueError):
    pass


class _Reader:
    def __init__(self, buf: memoryview) -> None:
        self.buf, self.pos = buf, 0

    def unpack(self, fmt: str) -> Any:
        (value,) = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += struct.calcsize(fmt)
        return value

    def string(self) -> str:
        n = self.unpack("<Q")
        text = bytes(self.buf[self.pos:self.pos + n]).decode("utf-8")
        self.pos += n
        return text

    def value(self, kind: int) -> Any:
        if kind in _SCALARS:
            return self.unpack(_SCALARS[kind])
        if kind == 8:
            return self.string()
        if kind == 9:
            inner, n = self.unpack("<I"), self.unpack("<Q")
            return [self.value(inner) for _ in range(n)]
        raise GGUFError(f"unknown GGUF value type {kind}")


def read_gguf(path: Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """(metadata, tensors): tensors are views of the one read of the file, in numpy order
    (ggml lists dimensions fastest first, so ggml [768, 2304] is numpy [2304, 768])."""
    raw = memoryview(Path(path).read_bytes())
    if bytes(raw[:4]) != b"GGUF":
        raise GGUFError(f"{path}: not a GGUF file")
    r = _Reader(raw)
    r.pos = 4
    version = r.unpack("<I")
    if version not in (2, 3):
        raise GGUFError(f"{path}: GGUF version {version} is not supported (2 or 3)")
    n_tensors, n_values = r.unpack("<Q"), r.unpack("<Q")
    meta = {}
    for _ in range(n_values):
        key = r.string()
        meta[key] = r.value(r.unpack("<I"))
    infos = []
    for _ in range(n_tensors):
        name = r.string()
        dims = [r.unpack("<Q") for _ in range(r.unpack("<I"))]
        infos.append((name, dims, r.unpack("<I"), r.unpack("<Q")))
    align = int(meta.get("general.alignment", 32))
    data_start = (r.pos + align - 1) // align * align
    tensors = {}
    for name, dims, kind, offset in infos:
        if kind not in _TENSOR_TYPES:
            raise GGUFError(f"tensor {name}: ggml type {kind} is not supported (F32 or F16)")
        dtype = np.dtype(_TENSOR_TYPES[kind])
        shape = tuple(reversed(dims))
        start = data_start + offset
        end = start + int(np.prod(shape)) * dtype.itemsize
        if end > len(raw):
            raise GGUFError(f"tensor {name} runs past the end of {path}")
        tensors[name] = np.frombuffer(raw[start:end], dtype).reshape(shape)
    return meta, tensors


def _config(meta: dict[str, Any]) -> dict[str, Any]:
    arch = meta.get("general.architecture")
    if arch != ARCHITECTURE:
        raise GGUFError(f"general.architecture is {arch!r}, expected {ARCHITECTURE!r}")
    a = f"{arch}."
    if meta.get(a + "attention.causal", False):
        raise GGUFError("causal attention is not supported")
    cfg = {
        "layers": int(meta[a + "block_count"]),
        "hidden": int(meta[a + "embedding_length"]),
        "ffn": int(meta[a + "feed_forward_length"]),
        "heads": int(meta[a + "attention.head_count"]),
        "eps": float(np.float32(meta[a + "attention.layer_norm_epsilon"])),
        "rope_base": float(meta[a + "rope.freq_base"]),
        "types": int(meta.get("tokenizer.ggml.token_type_count", 2)),
        "vocab": len(meta["tokenizer.ggml.tokens"]),
    }
    if cfg["hidden"] % cfg["heads"] or (cfg["hidden"] // cfg["heads"]) % 2:
        raise GGUFError("the hidden size must split into heads of even size")
    return cfg


def _weight(t: dict[str, np.ndarray], name: str, shape: tuple[int, ...]) -> np.ndarray:
    return weight(t, name, shape, GGUFError)


def _layer_norm(g: Graph, x: str, t: dict[str, Any], prefix: str, hidden: int, eps: float,
                out: str | None = None) -> str:
    return layer_norm(g, x, t, prefix, hidden, eps, out=out, error=GGUFError)


def _build_model(t: dict[str, np.ndarray], cfg: dict[str, Any],
                 source_sha256: str) -> onnx.ModelProto:
    f32, i64 = np.float32, np.int64
    hidden, heads, ffn, eps = cfg["hidden"], cfg["heads"], cfg["ffn"], cfg["eps"]
    d = hidden // heads
    g = Graph()

    word = g.init("token_embd.weight", _weight(t, "token_embd.weight", (cfg["vocab"], hidden)))
    types = g.init("token_types.weight",
                   _weight(t, "token_types.weight", (cfg["types"], hidden)))
    emb = g.op("Add", [g.op("Gather", [word, "input_ids"], "emb/word"),
                       g.op("Gather", [types, "token_type_ids"], "emb/type")], "emb/sum")
    h = _layer_norm(g, emb, t, "token_embd_norm", hidden, eps)
    mask = additive_mask(g)

    # rotary tables [s, 1, d], broadcast over [b, s, heads, d]; angle = position x inv_freq
    # With Python floats (libm's correctly rounded pow), rounded once to float32: numpy's
    # vectorised `power` differs by an ulp between CPUs (AVX-512 SVML against the AVX2 path:
    # 10 to 14 of 32 frequencies), which made the built file's sha256 depend on the machine.
    base = float(cfg["rope_base"])
    inv_freq = np.array([1.0 / math.pow(base, i / d) for i in range(0, d, 2)])
    inv_freq = np.concatenate([inv_freq, inv_freq]).astype(f32).reshape(1, 1, d)
    seq = g.op("Squeeze", [g.op("Shape", ["input_ids"], "rope/seq", start=1, end=2),
                           g.const("axis0", [0], i64)], "rope/seq_scalar")
    positions = g.op("Range", [g.const("zero_f", 0.0, f32),
                               g.op("Cast", [seq], "rope/seq_f", to=TensorProto.FLOAT),
                               g.const("one_f", 1.0, f32)], "rope/positions")
    positions = g.op("Unsqueeze", [positions, g.const("axes12", [1, 2], i64)], "rope/pos3")
    angle = g.op("Mul", [positions, g.const("inv_freq", inv_freq, f32)], "rope/angle")
    cos, sin = g.op("Cos", [angle], "rope/cos"), g.op("Sin", [angle], "rope/sin")
    halves = g.const("halves", [d // 2, d // 2], i64)

    def rotary(x: str, hint: str) -> str:
        """x cos + rotate_half(x) sin, rotate_half(x) = cat(-x[..., d/2:], x[..., :d/2])."""
        x1, x2 = g.split(x, halves, f"{hint}/half", 2)
        turned = g.op("Concat", [g.op("Neg", [x2], f"{hint}/neg"), x1], f"{hint}/rot", axis=-1)
        return g.op("Add", [g.op("Mul", [x, cos], f"{hint}/xcos"),
                            g.op("Mul", [turned, sin], f"{hint}/rsin")], f"{hint}/rope")

    split_heads = g.const("split_heads", [0, 0, heads, d], i64)
    merge_heads = g.const("merge_heads", [0, 0, hidden], i64)
    thirds = g.const("qkv_sizes", [hidden] * 3, i64)
    ffn_halves = g.const("ffn_sizes", [ffn, ffn], i64)
    q_scale = g.const("inv_sqrt_head_dim", 1.0 / math.sqrt(d), f32)
    for i in range(cfg["layers"]):
        p = f"blk.{i}"
        wqkv = _weight(t, f"{p}.attn_qkv.weight", (3 * hidden, hidden))
        qkv = g.op("MatMul", [h, g.init(f"{p}.attn_qkv.weight_t", wqkv.T)], f"{p}/qkv")
        q, k, v = g.split(qkv, thirds, f"{p}/qkv_split", 3)
        q = rotary(g.op("Reshape", [q, split_heads], f"{p}/q_bshd"), f"{p}/q")
        k = rotary(g.op("Reshape", [k, split_heads], f"{p}/k_bshd"), f"{p}/k")
        v = g.op("Reshape", [v, split_heads], f"{p}/v_bshd")
        q = g.op("Transpose", [g.op("Mul", [q, q_scale], f"{p}/q_scaled")], f"{p}/q_heads",
                 perm=[0, 2, 1, 3])                                      # [b, h, s, d]
        k = g.op("Transpose", [k], f"{p}/k_heads", perm=[0, 2, 3, 1])    # [b, h, d, s]
        v = g.op("Transpose", [v], f"{p}/v_heads", perm=[0, 2, 1, 3])    # [b, h, s, d]
        scores = g.op("Add", [g.op("MatMul", [q, k], f"{p}/qk"), mask], f"{p}/masked")
        probs = g.op("Softmax", [scores], f"{p}/softmax", axis=-1)
        context = g.op("Transpose", [g.op("MatMul", [probs, v], f"{p}/context")],
                       f"{p}/context_t", perm=[0, 2, 1, 3])
        context = g.op("Reshape", [context, merge_heads], f"{p}/context_merged")
        wo = _weight(t, f"{p}.attn_output.weight", (hidden, hidden))
        attn = g.op("MatMul", [context, g.init(f"{p}.attn_output.weight_t", wo.T)],
                    f"{p}/attn_out")
        h = _layer_norm(g, g.op("Add", [attn, h], f"{p}/attn_residual"), t,
                        f"{p}.attn_output_norm", hidden, eps)

        up_gate = np.concatenate([_weight(t, f"{p}.ffn_up.weight", (ffn, hidden)),
                                  _weight(t, f"{p}.ffn_gate.weight", (ffn, hidden))]).T
        both = g.op("MatMul", [h, g.init(f"{p}.ffn_up_gate.weight_t", up_gate)], f"{p}/up_gate")
        up, gate = g.split(both, ffn_halves, f"{p}/up_gate_split", 2)
        silu = g.op("Mul", [gate, g.op("Sigmoid", [gate], f"{p}/sigmoid")], f"{p}/silu")
        wd = _weight(t, f"{p}.ffn_down.weight", (hidden, ffn))
        down = g.op("MatMul", [g.op("Mul", [up, silu], f"{p}/swiglu"),
                               g.init(f"{p}.ffn_down.weight_t", wd.T)], f"{p}/ffn_down")
        last = i == cfg["layers"] - 1
        h = _layer_norm(g, g.op("Add", [down, h], f"{p}/ffn_residual"), t,
                        f"{p}.layer_output_norm", hidden, eps,
                        out="last_hidden_state" if last else None)

    return encoder_model(
        g, "nomic_bert", ("input_ids", "attention_mask", "token_type_ids"), hidden, PRODUCER,
        "nomic-bert last_hidden_state, exported from GGUF without torch (fp32)",
        {"source_gguf_sha256": source_sha256},
    )


def wordpiece_vocab(meta: dict[str, Any]) -> list[str]:
    """The GGUF file's tokens in BERT spelling ("\u2581word" -> "word", "piece" -> "##piece";
    bracketed specials such as [CLS] unchanged)."""
    tokens = meta.get("tokenizer.ggml.tokens")
    if meta.get("tokenizer.ggml.model") != "bert" or not tokens:
        raise GGUFError("the GGUF file has no BERT WordPiece vocabulary")
    return [tok[1:] if tok.startswith(WORD_START)
            else tok if tok.startswith("[") and tok.endswith("]") else f"##{tok}"
            for tok in tokens]


def tokenizer_json(vocab: list[str]) -> str:
    """A BERT uncased fast-tokenizer file (lowercase, accents stripped, WordPiece with ##,
    [CLS] ... [SEP]); truncation and padding are left to the embedding service."""
    ids = {tok: i for i, tok in enumerate(vocab)}
    for special in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"):
        if special not in ids:
            raise GGUFError(f"the vocabulary has no {special}")
    spec = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [{"id": ids[s], "content": s, "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": False, "special": True}
                         for s in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")],
        "normalizer": {"type": "BertNormalizer", "clean_text": True,
                       "handle_chinese_chars": True, "strip_accents": None, "lowercase": True},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {"type": "BertProcessing", "sep": ["[SEP]", ids["[SEP]"]],
                           "cls": ["[CLS]", ids["[CLS]"]]},
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "vocab": ids},
    }
    return json.dumps(spec, ensure_ascii=False, indent=2) + "\n"


def build(gguf_path: Path, out_path: Path) -> None:
    """Write the ONNX graph of the nomic-bert GGUF file at ``gguf_path`` to ``out_path``."""
    meta, tensors = read_gguf(Path(gguf_path))
    model = _build_model(tensors, _config(meta), sha256_file(Path(gguf_path)))
    del tensors
    write_model(model, out_path)


def build_tokenizer(gguf_path: Path, out_path: Path) -> None:
    """Write the GGUF file's vocabulary as a tokenizer.json to ``out_path``."""
    meta, _ = read_gguf(Path(gguf_path))
    Path(out_path).write_text(tokenizer_json(wordpiece_vocab(meta)), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m recallmesh.embedding_models.build.nomic_onnx",
        description="Export a nomic-bert GGUF file to ONNX + tokenizer.json without torch.")
    parser.add_argument("--gguf", type=Path, required=True)
    parser.add_argument("--out-dir", type=Path, required=True)
    args = parser.parse_args(argv)
    if not args.gguf.is_file():
        parser.error(f"{args.gguf} not found")
    args.out_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    build(args.gguf, args.out_dir / "model.onnx")
    build_tokenizer(args.gguf, args.out_dir / "tokenizer.json")
    for name in ("model.onnx", "tokenizer.json"):
        path = args.out_dir / name
        print(f"wrote {path} ({path.stat().st_size / 1e6:.1f} MB, sha256 {sha256_file(path)})",
              file=sys.stderr)
    print(f"in {time.monotonic() - t0:.1f}s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
