"""Property tests for the new parsers: model manifests, update masks, index waits.

Whatever the input, each parser either returns a valid value or raises its
documented error (ConfigError / InvalidArgument): never anything else.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from recallmesh.embedding_models.manifest import ModelManifest
from recallmesh.shared.errors import InvalidArgument
from recallmesh.shared.settings import ConfigError
from recallmesh.v1 import memory_pb2
from recallmesh.wire.memory_fields import UPDATE_PATHS
from recallmesh.wire.validation import index_wait, memory_update

json_scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8)
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(st.text(max_size=6), children, max_size=3),
    max_leaves=8,
)
manifest_keys = st.sampled_from([
    "model_id", "onnx", "tokenizer", "dimension", "max_length", "pooling", "normalize",
    "output", "query_prefix", "document_prefix", "precision", "sha256", "junk",
])


@given(st.dictionaries(manifest_keys, json_values, max_size=12) | json_values)
def test_any_manifest_json_is_a_manifest_or_a_config_error(raw: object) -> None:
    try:
        manifest = ModelManifest.from_dict(raw, Path("/models/x/manifest.json"))
    except ConfigError:
        return
    assert 1 <= manifest.dimension <= 4000
    assert manifest.pooling in ("mean", "cls") and manifest.max_length >= 2
    assert manifest.model_id.strip()


paths = st.lists(st.sampled_from([*UPDATE_PATHS, "namespace", "id", "created_at", "", "x.y"]),
                 max_size=5)
memories = st.builds(
    memory_pb2.Memory,
    content=st.text(max_size=20),
    category=st.text(max_size=70),
    tags=st.lists(st.text(max_size=5), max_size=3),
    importance=st.floats(allow_nan=True),
    sensitive=st.booleans(),
)


@given(memories, paths)
def test_update_masks_are_validated_or_rejected(memory: memory_pb2.Memory,
                                                mask: list[str]) -> None:
    try:
        changes = memory_update(memory, mask, "ns")
    except InvalidArgument:
        return
    assert mask and set(changes) <= set(UPDATE_PATHS.values())
    assert len(changes) == len(set(mask))
    if "importance" in changes:
        assert 0.0 <= changes["importance"] <= 1.0
    if "content" in changes:
        assert changes["content"].strip()


@given(st.booleans(), st.integers(min_value=-(2**31), max_value=2**31 - 1), st.booleans())
def test_index_wait_is_none_a_bound_or_invalid(wait: bool, timeout_ms: int,
                                               present: bool) -> None:
    msg = memory_pb2.IndexWait(wait=wait, timeout_ms=timeout_ms)
    try:
        result = index_wait(msg, present)
    except InvalidArgument:
        assert present and wait
        return
    if present and wait:
        assert result == timeout_ms and result is not None and 0 <= result
    else:
        assert result is None


def test_update_of_content_alone_ignores_unrelated_garbage() -> None:
    memory = memory_pb2.Memory(content="new text", importance=7.0, category="x" * 500)
    assert memory_update(memory, ["content"], "ns") == {"content": "new text"}
    with pytest.raises(InvalidArgument, match="importance"):
        memory_update(memory, ["content", "importance"], "ns")
