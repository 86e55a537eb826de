"""Plumbing shared by the torch-free exporters (mpnet_onnx, nomic_onnx).

Each exporter writes a transformer encoder's ONNX graph by hand from numpy weights: a
small builder with deterministic names, the post-LN LayerNorm, the additive attention
mask and a byte-deterministic write. The architecture-specific parts (positions,
attention, feed-forward) stay in each exporter.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8  # opset 17 needs IR >= 8; accepted by every onnxruntime 1.1x/1.2x


class Graph:
    """Tiny builder: unique deterministic names, nodes and initializers in order."""

    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self._names: set[str] = set()
        self._consts: dict[tuple[Any, ...], str] = {}
        self._counter = 0

    def _fresh(self, hint: str) -> str:
        self._counter += 1
        return f"{hint}_{self._counter}"

    def init(self, name: str, array: np.ndarray) -> str:
        if name in self._names:
            raise ValueError(f"duplicate initializer {name}")
        self._names.add(name)
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def const(self, hint: str, value: npt.ArrayLike, dtype: npt.DTypeLike) -> str:
        array = np.asarray(value, dtype=dtype)
        key = (hint, array.dtype.str, array.shape, array.tobytes())
        if key not in self._consts:
            self._consts[key] = self.init(self._fresh(f"const/{hint}"), array)
        return self._consts[key]

    def op(self, op_type: str, inputs: list[str], hint: str, out: str | None = None,
           **attrs: Any) -> str:
        name = out or self._fresh(hint)
        self.nodes.append(
            helper.make_node(op_type, inputs, [name], name=f"{op_type}/{name}", **attrs)
        )
        return name

    def split(self, x: str, sizes: str, hint: str, n_out: int, axis: int = -1) -> list[str]:
        """Split `x` into `n_out` outputs along `axis` (sizes: an int64 constant)."""
        outs = [self._fresh(f"{hint}{i}") for i in range(n_out)]
        self.nodes.append(helper.make_node("Split", [x, sizes], outs, name=f"Split/{outs[0]}",
                                           axis=axis))
        return outs


def weight(tensors: dict[str, np.ndarray], name: str, shape: tuple[int, ...],
           error: type[Exception] = ValueError) -> np.ndarray:
    """A checkpoint tensor as float32, after checking it is there with the expected shape."""
    if name not in tensors:
        raise error(f"tensor {name!r} is missing from the checkpoint")
    if tuple(tensors[name].shape) != shape:
        raise error(f"tensor {name!r} has shape {tuple(tensors[name].shape)}, expected {shape}")
    return tensors[name].astype(np.float32, copy=False)


def layer_norm(g: Graph, x: str, tensors: dict[str, np.ndarray], prefix: str, hidden: int,
               eps: float, out: str | None = None, error: type[Exception] = ValueError) -> str:
    """LayerNormalization over the last axis with the checkpoint's `<prefix>.weight` / `.bias`."""
    scale = g.init(f"{prefix}.weight", weight(tensors, f"{prefix}.weight", (hidden,), error))
    bias = g.init(f"{prefix}.bias", weight(tensors, f"{prefix}.bias", (hidden,), error))
    return g.op("LayerNormalization", [x, scale, bias], f"{prefix}/ln", out=out, axis=-1,
                epsilon=eps)


def additive_mask(g: Graph) -> str:
    """[b, 1, 1, s]: 0 on real keys, finfo(float32).min on padded ones (`attention_mask`)."""
    keep = g.op("Cast", ["attention_mask"], "mask/bool", to=TensorProto.BOOL)
    additive = g.op(
        "Where",
        [keep, g.const("zero_f", 0.0, np.float32),
         g.const("neg_big", np.finfo(np.float32).min, np.float32)],
        "mask/additive",
    )
    return g.op("Unsqueeze", [additive, g.const("axes12", [1, 2], np.int64)], "mask/extended")


def encoder_model(g: Graph, name: str, inputs: tuple[str, ...], hidden: int, producer: str,
                  doc: str, props: dict[str, str]) -> onnx.ModelProto:
    """The graph as a model: int64 [batch, seq] inputs, float32 `last_hidden_state`."""
    graph = helper.make_graph(
        g.nodes, name,
        [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "seq"]) for n in inputs],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT,
                                       ["batch", "seq", hidden])],
        initializer=g.inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name=producer, producer_version="1", doc_string=doc)
    model.ir_version = IR_VERSION
    helper.set_model_props(model, props)
    return model


def write_model(model: onnx.ModelProto, out_path: Path) -> None:
    """Check the model, then write it byte-deterministically (atomically)."""
    onnx.checker.check_model(model)
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_path.with_name(out_path.name + ".tmp")
    tmp.write_bytes(model.SerializeToString(deterministic=True))
    tmp.replace(out_path)
