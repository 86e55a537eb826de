"""An fp32 ONNX encoder -> dynamic int8, with onnxruntime's own quantization tooling.

What it does
    1. ``onnxruntime.quantization.quant_pre_process``: onnxruntime's pre-processing for
       quantization: its basic graph optimizations (constant folding, redundant nodes)
       and ONNX shape inference. Symbolic shape inference is skipped: it needs sympy,
       which neither onnxruntime nor the ``build`` extra installs, and dynamic
       quantization of MatMuls with constant weights does not need it (the weights'
       shapes are in the initializers).
    2. optionally ``onnxruntime.transformers.optimizer.optimize_model`` (model_type
       "bert"): onnxruntime's transformer fusions (attention, SkipLayerNormalization,
       GELU); off by default, see ``OPTIMIZER`` below.
    3. ``onnxruntime.quantization.quantize_dynamic``: the weights of the MatMuls whose
       second input is a constant (all projections; not q.k^T or probs.v) become
       signed int8, symmetric, one scale per output channel; activations are quantized
       to uint8 at run time (MatMulInteger, which onnxruntime fuses into
       DynamicQuantizeMatMul when it loads the graph).
    The result is written byte-deterministically, with the producer set here and
    model properties naming the fp32 file's sha256, the options and the onnxruntime
    version. Built twice with the same onnxruntime, the bytes are the same (checked on the
    tiny test graph, tests/unit/test_int8_onnx.py); the
    quantizer and the pre-processing optimizer are onnxruntime's Python and C++ code,
    so another onnxruntime version may write other bytes: the catalogue entry records
    the version that produced its pinned sha256 (``built_with``).

The default options (`python -m benchmarks int8` and the variants in --help are how to
choose): per-channel, QInt8 weights, MatMul only (the token-embedding Gather stays fp32: a
lookup, it costs nothing to speak of at run time), reduce_range off. The catalogue's
nomic-embed-text-v1.5-int8 entry turns reduce_range on (its build spec's "options"): built
without it, the model computes noise on a CPU without VNNI (onnxruntime's u8s8 integer MatMul
saturates there; 7-bit weights do not), and the embedding service's probe checks a build's
vectors at start (docs/decisions/0009-embedding-model-race.md). onnxruntime's transformer
optimizer is off: it fuses only SkipLayerNormalization (no attention: the rotary embedding
does not match its patterns), which onnxruntime's own ORT_ENABLE_ALL session fuses in part
anyway, and it needs sympy (docs/decisions/0026-the-hops-around-the-vector.md).

Usage
    python -m recallmesh.embedding_models.build.int8_onnx --fp32 model.onnx --out model-int8.onnx
"""

from __future__ import annotations

import argparse
import logging
import re
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import onnx
from onnx import helper

from recallmesh.embedding_models.build.onnx_graph import write_model
from recallmesh.embedding_models.manifest import sha256_file

PRODUCER = "recallmesh.embedding_models.build.int8_onnx"


class QuantizeError(RuntimeError):
    pass


@dataclass(frozen=True)
class Options:
    """How the fp32 graph is quantized (a catalogue build spec's "options" set fields)."""

    per_channel: bool = True
    reduce_range: bool = False
    op_types: tuple[str, ...] = ("MatMul",)  # () = every op type onnxruntime can quantize
    optimizer: bool = False  # onnxruntime.transformers.optimizer (model_type "bert")
    num_heads: int = 0  # for the optimizer; 0: let it detect
    hidden_size: int = 0
    exclude: str = ""  # regex: MatMul nodes whose name it matches (re.search) stay fp32

    def describe(self) -> str:
        return ",".join(f"{k}={v}" for k, v in asdict(self).items())


def onnxruntime_version() -> str:
    import onnxruntime

    version: str = onnxruntime.__version__
    return version


class _FailureLog(logging.Handler):
    """quant_pre_process logs a failed optimization and goes on without it; catch that."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def _pre_process(fp32: Path, out: Path) -> None:
    from onnxruntime.quantization.shape_inference import quant_pre_process

    failures = _FailureLog()
    root = logging.getLogger()
    root.addHandler(failures)
    try:
        quant_pre_process(str(fp32), str(out), skip_symbolic_shape=True)
    finally:
        root.removeHandler(failures)
    if failures.messages:
        raise QuantizeError("onnxruntime's quantization pre-processing failed: "
                            + " | ".join(failures.messages)[:2000])


def _optimize(model_path: Path, out: Path, options: Options) -> dict[str, int]:
    """onnxruntime's transformer optimizer, Python fusions only (no onnxruntime session:
    its output would depend on the machine's kernels); returns the fused op counts."""
    from onnxruntime.transformers.optimizer import optimize_model

    optimized = optimize_model(str(model_path), model_type="bert",
                               num_heads=options.num_heads, hidden_size=options.hidden_size,
                               opt_level=0, only_onnxruntime=False, use_gpu=False)
    optimized.save_model_to_file(str(out))
    return {k: v for k, v in optimized.get_fused_operator_statistics().items() if v}


def _excluded(model_path: Path, pattern: str) -> list[str]:
    if not pattern:
        return []
    model = onnx.load(str(model_path), load_external_data=False)
    names = [n.name for n in model.graph.node
             if n.op_type == "MatMul" and re.search(pattern, n.name)]
    if not names:
        raise QuantizeError(f"no MatMul node name matches {pattern!r}")
    return names


def _quantize(model_path: Path, out: Path, options: Options) -> list[str]:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    excluded = _excluded(model_path, options.exclude)
    quantize_dynamic(
        str(model_path), str(out),
        op_types_to_quantize=list(options.op_types) or None,
        per_channel=options.per_channel,
        reduce_range=options.reduce_range,
        weight_type=QuantType.QInt8,
        nodes_to_exclude=excluded or None,
        extra_options={"MatMulConstBOnly": True},
    )
    return excluded


def quantize(fp32_path: Path, out_path: Path, options: Options | None = None) -> dict[str, Any]:
    """Write the int8 model of the fp32 ONNX file at ``fp32_path`` to ``out_path``.
    Returns what happened (fused ops when the optimizer ran, quantized node counts)."""
    options = options or Options()
    fp32_path, out_path = Path(fp32_path), Path(out_path)
    source_sha256 = sha256_file(fp32_path)
    report: dict[str, Any] = {"options": asdict(options), "onnxruntime": onnxruntime_version()}
    with tempfile.TemporaryDirectory(prefix="recallmesh-int8-") as tmp_name:
        tmp = Path(tmp_name)
        pre = tmp / "pre.onnx"
        _pre_process(fp32_path, pre)
        if options.optimizer:
            optimized = tmp / "optimized.onnx"
            report["fused"] = _optimize(pre, optimized, options)
            pre = optimized
        quantized = tmp / "quantized.onnx"
        report["excluded"] = _quantize(pre, quantized, options)
        model = onnx.load(str(quantized))
    counts: dict[str, int] = {}
    for node in model.graph.node:
        counts[node.op_type] = counts.get(node.op_type, 0) + 1
    report["ops"] = dict(sorted(counts.items()))
    if not any(op in counts for op in ("MatMulInteger", "DynamicQuantizeMatMul")):
        raise QuantizeError(f"no MatMul was quantized (ops: {report['ops']})")
    model.producer_name, model.producer_version = PRODUCER, "1"
    props = {p.key: p.value for p in model.metadata_props}
    props |= {"quantized_from_sha256": source_sha256,
              "quantized_with": f"onnxruntime {report['onnxruntime']}",
              "quantization": f"dynamic int8 ({options.describe()})"}
    del model.metadata_props[:]
    helper.set_model_props(model, dict(sorted(props.items())))
    write_model(model, out_path)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m recallmesh.embedding_models.build.int8_onnx",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--fp32", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--per-tensor", action="store_true", help="one scale per weight")
    parser.add_argument("--reduce-range", action="store_true", help="7-bit weights")
    parser.add_argument("--op-types", default="MatMul",
                        help="comma-separated op types to quantize; 'all' for every one "
                        "onnxruntime can (default: %(default)s)")
    parser.add_argument("--optimizer", action="store_true",
                        help="run onnxruntime.transformers.optimizer (bert) first")
    parser.add_argument("--exclude", default="",
                        help="regex: MatMul nodes whose name it matches stay fp32")
    parser.add_argument("--num-heads", type=int, default=0)
    parser.add_argument("--hidden-size", type=int, default=0)
    args = parser.parse_args(argv)
    options = Options(per_channel=not args.per_tensor, reduce_range=args.reduce_range,
                      op_types=() if args.op_types == "all" else tuple(args.op_types.split(",")),
                      optimizer=args.optimizer, exclude=args.exclude, num_heads=args.num_heads,
                      hidden_size=args.hidden_size)
    t0 = time.monotonic()
    report = quantize(args.fp32, args.out, options)
    print(f"wrote {args.out} ({args.out.stat().st_size / 1e6:.1f} MB, "
          f"sha256 {sha256_file(args.out)}) in {time.monotonic() - t0:.1f}s", file=sys.stderr)
    print(report, file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
