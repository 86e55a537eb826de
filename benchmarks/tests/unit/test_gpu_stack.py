"""The GPU script's bundle: cut into parts here, staged one part per device call there, joined
and checked before anything is installed (benchmarks/performance/gpu_stack.py)."""

from __future__ import annotations

import json
import os

import pytest

from benchmarks.performance import gpu_stack


def test_parts_staged_in_any_order_join_to_the_bundle(tmp_path):
    bundle = tmp_path / "bundle.tar.gz"
    data = os.urandom(2500)
    bundle.write_bytes(data)
    parts = gpu_stack.cut(bundle, tmp_path / "out", part_bytes=1000)
    assert [p.name for p in parts] == ["part-1", "part-2", "part-3"]
    keep = tmp_path / "keep"
    for part in reversed(parts):
        gpu_stack.stage(part, keep)
    assert gpu_stack.join(keep).read_bytes() == data


def test_the_join_refuses_until_every_part_is_staged(tmp_path):
    bundle = tmp_path / "bundle.tar.gz"
    bundle.write_bytes(os.urandom(2500))
    parts = gpu_stack.cut(bundle, tmp_path / "out", part_bytes=1000)
    keep = tmp_path / "keep"
    gpu_stack.stage(parts[0], keep)
    gpu_stack.stage(parts[2], keep)
    with pytest.raises(SystemExit, match="bundle.002"):
        gpu_stack.join(keep)


def test_a_damaged_part_is_refused_where_it_lands(tmp_path):
    bundle = tmp_path / "bundle.tar.gz"
    bundle.write_bytes(os.urandom(2500))
    parts = gpu_stack.cut(bundle, tmp_path / "out", part_bytes=1000)
    chunk = parts[1] / "bundle.002"
    chunk.write_bytes(b"x" + chunk.read_bytes()[1:])
    with pytest.raises(SystemExit, match="sha256 mismatch"):
        gpu_stack.stage(parts[1], tmp_path / "keep")


def test_a_part_from_another_pack_does_not_join(tmp_path):
    first, second = tmp_path / "a.tar.gz", tmp_path / "b.tar.gz"
    first.write_bytes(os.urandom(2000))
    second.write_bytes(os.urandom(2000))
    a = gpu_stack.cut(first, tmp_path / "a", part_bytes=1000)
    b = gpu_stack.cut(second, tmp_path / "b", part_bytes=1000)
    keep = tmp_path / "keep"
    gpu_stack.stage(a[0], keep)
    gpu_stack.stage(b[1], keep)  # its bundle.json names b's chunks: a's first one is stale
    meta = json.loads((keep / "chunks" / "bundle.json").read_text())
    assert meta["sha256"] != gpu_stack.sha256_file(first)
    with pytest.raises(SystemExit, match="sha256"):
        gpu_stack.join(keep)


def test_every_part_fits_one_call_beside_the_working_tree():
    # 64 MiB a call, the tracked working tree included (about 10 MiB today)
    assert gpu_stack.PART_BYTES + 12 * gpu_stack.MIB <= 64 * gpu_stack.MIB
