"""Torch-free exporter: MPNet ``model.safetensors`` -> ONNX (``last_hidden_state``).

What it does
    Reads the weights of a Hugging Face ``MPNetModel`` checkpoint (e.g.
    sentence-transformers ``all-mpnet-base-v2``) from ``model.safetensors`` plus
    its ``config.json`` and writes an ONNX graph (opset 17, IR version 8) that
    computes the encoder's ``last_hidden_state``:

        inputs   input_ids, attention_mask   int64   [batch, seq]   (dynamic)
        output   last_hidden_state           float32 [batch, seq, hidden]

    Pooling and normalisation are left to the caller (the embedding service does
    mean pooling over the attention mask); the unused BERT-style pooler weights
    are not exported.

Why
    The usual route (``torch.onnx.export`` on ``transformers.MPNetModel``) needs
    torch + transformers, a multi-GB install, only to trace a graph. The model
    already ships its weights as ``model.safetensors`` and the architecture is
    small and fixed, so the graph is written by hand here with ``onnx.helper``
    from numpy arrays. Run time needs only numpy and ``onnx`` (the safetensors file is
    read directly: an 8-byte header length, a JSON header, then the raw tensors).
    The output is byte-for-byte deterministic (same inputs -> same sha256), so a
    model manifest can pin the hash. On onnxruntime CPU it matches a
    ``torch.onnx.export`` of the same checkpoint (max abs diff ~0 on real
    tokens; ~1.6e-6 vs transformers eager in torch).

Faithfulness to ``transformers.models.mpnet.modeling_mpnet`` (eval mode):
    * position ids: ``mask = input_ids != padding_idx``;
      ``cumsum(mask) * mask + padding_idx`` (padding_idx = 1). Padded tokens get
      position 1, real tokens 2, 3, ...
    * embeddings: word + position, LayerNorm (no token-type embeddings).
    * relative attention bias, computed in the graph for any seq length from
      ``Range`` ops: ``relative = k - q``; bucketed exactly like
      ``MPNetEncoder.relative_position_bucket`` (32 buckets, max distance 128,
      half the buckets per direction, exact below 8, log-spaced above, via
      Log/Div/Mul/Cast/Min/Where with the same float32 constants), then gathered
      from ``encoder.relative_attention_bias`` -> [1, heads, seq, seq] and added
      to every layer's scaled scores. The only deviation: ``|relative|`` is
      clamped to >= 1 before the Log so the (discarded) ``n = 0`` branch never
      casts ``-inf`` to int64; the bucket values are unchanged.
    * attention mask: additive ``finfo(float32).min`` on padded keys, 0 elsewhere.
    * post-LN encoder layers, exact (erf) GELU written as the Div/Erf/Add/Mul/Mul
      pattern onnxruntime fuses into its Gelu kernel.

Usage
    python -m recallmesh.embedding_models.build.mpnet_onnx --weights DIR --out model.onnx
    (DIR holds model.safetensors and config.json)
"""

from __future__ import annotations

import argparse
import json
import math
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

PADDING_IDX = 1  # hard-coded in MPNetEmbeddings, independent of config
MAX_DISTANCE = 128  # hard-coded default of MPNetEncoder.relative_position_bucket
PRODUCER = "shared.mpnet_onnx"


def _load_config(config_path: Path) -> dict[str, Any]:
    cfg = json.loads(Path(config_path).read_text())
    model_type = cfg.get("model_type", "mpnet")
    if model_type != "mpnet":
        raise ValueError(f"{config_path}: model_type {model_type!r}, expected 'mpnet'")
    act = cfg.get("hidden_act", "gelu")
    if act != "gelu":
        raise ValueError(f"{config_path}: hidden_act {act!r} unsupported (only exact 'gelu')")
    out = {
        "hidden": int(cfg["hidden_size"]),
        "layers": int(cfg["num_hidden_layers"]),
        "heads": int(cfg["num_attention_heads"]),
        "intermediate": int(cfg["intermediate_size"]),
        "eps": float(cfg.get("layer_norm_eps", 1e-5)),
        "buckets": int(cfg.get("relative_attention_num_buckets", 32)),
        "vocab": int(cfg["vocab_size"]),
        "max_pos": int(cfg["max_position_embeddings"]),
    }
    if out["hidden"] % out["heads"]:
        raise ValueError("hidden_size is not a multiple of num_attention_heads")
    return out


_SAFETENSORS_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64}


def _load_weights(safetensors_path: Path) -> dict[str, np.ndarray]:
    """The tensors of a .safetensors file: u64 little-endian header size, JSON header
    {name: {dtype, shape, data_offsets}}, then the data (offsets from its start)."""
    raw = Path(safetensors_path).read_bytes()
    size = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8 : 8 + size])
    data = memoryview(raw)[8 + size :]
    weights: dict[str, np.ndarray] = {}
    for key in sorted(k for k in header if k != "__metadata__"):
        spec = header[key]
        if spec["dtype"] not in _SAFETENSORS_DTYPES:
            raise ValueError(f"{key}: unsupported safetensors dtype {spec['dtype']}")
        start, end = spec["data_offsets"]
        array = np.frombuffer(data[start:end], dtype=_SAFETENSORS_DTYPES[spec["dtype"]])
        name = key[len("mpnet.") :] if key.startswith("mpnet.") else key
        weights[name] = array.reshape(spec["shape"])  # a view: the file is read once
    return weights


def _linear(g: Graph, x: str, w: dict[str, Any], prefix: str, n_in: int, n_out: int) -> str:
    """y = x @ W^T + b, with W^T stored as a [n_in, n_out] initializer."""
    wt = g.init(f"{prefix}.weight_t", weight(w, f"{prefix}.weight", (n_out, n_in)).T)
    b = g.init(f"{prefix}.bias", weight(w, f"{prefix}.bias", (n_out,)))
    y = g.op("MatMul", [x, wt], f"{prefix}/matmul")
    return g.op("Add", [y, b], f"{prefix}/add")


def _add_norm(g: Graph, x: str, residual: str, name: str, w: dict[str, Any], prefix: str,
              hidden: int, eps: float, out: str | None = None) -> str:
    """LayerNorm(x + residual): the post-LN step after attention and after the FFN."""
    return layer_norm(g, g.op("Add", [x, residual], name), w, prefix, hidden, eps, out=out)


def _relative_position_bias(g: Graph, input_ids: str, w: dict[str, Any],
                            cfg: dict[str, Any]) -> str:
    """[1, heads, seq, seq] bias, mirroring MPNetEncoder.compute_position_bias."""
    f32, i64 = np.float32, np.int64
    seq_1d = g.op("Shape", [input_ids], "rel/seq", start=1, end=2)
    seq = g.op("Squeeze", [seq_1d, g.const("axis0", [0], i64)], "rel/seq_scalar")
    pos = g.op("Range", [g.const("zero", 0, i64), seq, g.const("one", 1, i64)], "rel/range")
    context = g.op("Unsqueeze", [pos, g.const("axis1", [1], i64)], "rel/context")  # [s, 1]
    memory = g.op("Unsqueeze", [pos, g.const("axis0", [0], i64)], "rel/memory")  # [1, s]
    relative = g.op("Sub", [memory, context], "rel/relative")

    num_buckets = cfg["buckets"] // 2
    max_exact = num_buckets // 2
    n = g.op("Neg", [relative], "rel/n")
    is_neg = g.op("Less", [n, g.const("zero", 0, i64)], "rel/is_neg")
    ret = g.op(
        "Mul",
        [
            g.op("Cast", [is_neg], "rel/is_neg_i64", to=TensorProto.INT64),
            g.const("half_buckets", num_buckets, i64),
        ],
        "rel/ret",
    )
    n = g.op("Abs", [n], "rel/abs")
    is_small = g.op("Less", [n, g.const("max_exact", max_exact, i64)], "rel/is_small")
    n_f = g.op("Cast", [n], "rel/n_float", to=TensorProto.FLOAT)
    n_f = g.op("Max", [n_f, g.const("one_f", 1.0, f32)], "rel/n_clamped")  # avoid log(0)
    scaled = g.op("Div", [n_f, g.const("max_exact_f", float(max_exact), f32)], "rel/div")
    logged = g.op("Log", [scaled], "rel/log")
    log_ratio = np.float32(math.log(MAX_DISTANCE / max_exact))
    logged = g.op("Div", [logged, g.const("log_ratio", log_ratio, f32)], "rel/div_log")
    logged = g.op(
        "Mul", [logged, g.const("exact_span", float(num_buckets - max_exact), f32)], "rel/mul"
    )
    large = g.op("Cast", [logged], "rel/large_i64", to=TensorProto.INT64)  # truncates, as torch
    large = g.op("Add", [large, g.const("max_exact", max_exact, i64)], "rel/large")
    large = g.op("Min", [large, g.const("last_bucket", num_buckets - 1, i64)], "rel/large_min")
    bucket = g.op("Add", [ret, g.op("Where", [is_small, n, large], "rel/where")], "rel/bucket")

    table = g.init(
        "encoder.relative_attention_bias.weight",
        weight(w, "encoder.relative_attention_bias.weight", (cfg["buckets"], cfg["heads"])),
    )
    values = g.op("Gather", [table, bucket], "rel/values")  # [s, s, heads]
    values = g.op("Transpose", [values], "rel/transpose", perm=[2, 0, 1])
    return g.op("Unsqueeze", [values, g.const("axis0", [0], i64)], "rel/position_bias")


def _build_model(weights: dict[str, np.ndarray], cfg: dict[str, Any],
                 source_sha256: str) -> onnx.ModelProto:
    f32, i64 = np.float32, np.int64
    hidden, heads = cfg["hidden"], cfg["heads"]
    head_dim = hidden // heads
    eps = cfg["eps"]
    g = Graph()

    # --- embeddings ------------------------------------------------------------------
    not_pad = g.op(
        "Not",
        [g.op("Equal", ["input_ids", g.const("pad", PADDING_IDX, i64)], "emb/is_pad")],
        "emb/not_pad",
    )
    not_pad = g.op("Cast", [not_pad], "emb/not_pad_i64", to=TensorProto.INT64)
    cum = g.op("CumSum", [not_pad, g.const("axis1_scalar", 1, i64)], "emb/cumsum")
    position_ids = g.op(
        "Add",
        [g.op("Mul", [cum, not_pad], "emb/mul"), g.const("pad", PADDING_IDX, i64)],
        "emb/position_ids",
    )
    word = g.init(
        "embeddings.word_embeddings.weight",
        weight(weights, "embeddings.word_embeddings.weight", (cfg["vocab"], hidden)),
    )
    pos_table = g.init(
        "embeddings.position_embeddings.weight",
        weight(weights, "embeddings.position_embeddings.weight", (cfg["max_pos"], hidden)),
    )
    emb = g.op(
        "Add",
        [
            g.op("Gather", [word, "input_ids"], "emb/word"),
            g.op("Gather", [pos_table, position_ids], "emb/pos"),
        ],
        "emb/sum",
    )
    h = layer_norm(g, emb, weights, "embeddings.LayerNorm", hidden, eps)

    # --- additive attention mask [b, 1, 1, s] -------------------------------------------
    additive = additive_mask(g)

    position_bias = _relative_position_bias(g, "input_ids", weights, cfg)

    # --- encoder layers ----------------------------------------------------------------
    split_heads = g.const("split_heads", [0, 0, heads, head_dim], i64)
    merge_heads = g.const("merge_heads", [0, 0, hidden], i64)
    scale = g.const("sqrt_head_dim", math.sqrt(head_dim), f32)
    sqrt2 = g.const("sqrt2", math.sqrt(2.0), f32)
    one_f = g.const("one_f", 1.0, f32)
    half = g.const("half", 0.5, f32)
    for i in range(cfg["layers"]):
        p = f"encoder.layer.{i}"
        att = f"{p}.attention.attn"

        def heads_of(name: str, perm: list[int], x: str = h, att: str = att) -> str:
            y = _linear(g, x, weights, f"{att}.{name}", hidden, hidden)
            y = g.op("Reshape", [y, split_heads], f"{att}/{name}_split")
            return g.op("Transpose", [y], f"{att}/{name}_heads", perm=perm)

        q = heads_of("q", [0, 2, 1, 3])  # [b, h, s, d]
        k = heads_of("k", [0, 2, 3, 1])  # [b, h, d, s]
        v = heads_of("v", [0, 2, 1, 3])  # [b, h, s, d]
        scores = g.op("Div", [g.op("MatMul", [q, k], f"{att}/qk"), scale], f"{att}/scaled")
        scores = g.op("Add", [scores, position_bias], f"{att}/biased")
        scores = g.op("Add", [scores, additive], f"{att}/masked")
        probs = g.op("Softmax", [scores], f"{att}/softmax", axis=-1)
        ctx = g.op("MatMul", [probs, v], f"{att}/context")
        ctx = g.op("Transpose", [ctx], f"{att}/context_t", perm=[0, 2, 1, 3])
        ctx = g.op("Reshape", [ctx, merge_heads], f"{att}/context_merged")
        o = _linear(g, ctx, weights, f"{att}.o", hidden, hidden)
        h_att = _add_norm(g, o, h, f"{p}/attn_residual", weights, f"{p}.attention.LayerNorm",
                          hidden, eps)

        inter = _linear(g, h_att, weights, f"{p}.intermediate.dense", hidden, cfg["intermediate"])
        erf = g.op("Erf", [g.op("Div", [inter, sqrt2], f"{p}/gelu_div")], f"{p}/gelu_erf")
        gelu = g.op("Add", [erf, one_f], f"{p}/gelu_add")
        gelu = g.op("Mul", [inter, gelu], f"{p}/gelu_mul")
        gelu = g.op("Mul", [gelu, half], f"{p}/gelu")
        out = _linear(g, gelu, weights, f"{p}.output.dense", cfg["intermediate"], hidden)
        last = i == cfg["layers"] - 1
        h = _add_norm(g, out, h_att, f"{p}/out_residual", weights, f"{p}.output.LayerNorm",
                      hidden, eps, out="last_hidden_state" if last else None)

    return encoder_model(
        g, "mpnet", ("input_ids", "attention_mask"), hidden, PRODUCER,
        "MPNetModel last_hidden_state, exported from safetensors without torch",
        {"source_safetensors_sha256": source_sha256},
    )


def build(safetensors_path: Path, config_path: Path, out_path: Path) -> None:
    """Write the ONNX graph of the MPNet checkpoint at ``safetensors_path`` to ``out_path``."""
    cfg = _load_config(Path(config_path))
    weights = _load_weights(Path(safetensors_path))
    model = _build_model(weights, cfg, sha256_file(Path(safetensors_path)))
    del weights
    write_model(model, out_path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m recallmesh.embedding_models.build.mpnet_onnx",
        description="Export an MPNet safetensors checkpoint to ONNX without torch.",
    )
    parser.add_argument(
        "--weights",
        type=Path,
        required=True,
        help="directory holding model.safetensors and config.json",
    )
    parser.add_argument("--out", type=Path, required=True, help="ONNX file to write")
    args = parser.parse_args(argv)
    st, cfg = args.weights / "model.safetensors", args.weights / "config.json"
    for path in (st, cfg):
        if not path.is_file():
            parser.error(f"{path} not found")
    t0 = time.monotonic()
    build(st, cfg, args.out)
    print(
        f"wrote {args.out} ({args.out.stat().st_size / 1e6:.1f} MB, "
        f"sha256 {sha256_file(args.out)}) in {time.monotonic() - t0:.1f}s",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
