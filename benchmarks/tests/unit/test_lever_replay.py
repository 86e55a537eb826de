"""The lever replay's pure parts: how a long memory is cut into windows, and the adjust hook
a replayed lever uses to rescore the fused list before context propagation."""

from __future__ import annotations

from dataclasses import replace

from benchmarks.replay.pool import fuse_and_propagate, leg_lists
from benchmarks.replay.vectors import chunks


def test_chunks_are_overlapping_word_windows_headed_by_the_first_line():
    body = " ".join(f"w{i}" for i in range(250))
    out = chunks(f"A title\n{body}", words=120, stride=80)
    assert [c.split("\n")[0] for c in out] == ["A title"] * 3
    assert [c.split("\n")[1].split()[0] for c in out] == ["w0", "w80", "w160"]
    assert out[-1].endswith("w249")  # the tail is covered
    assert all(len(c.split("\n")[1].split()) <= 120 for c in out)


def test_short_or_headless_memories_are_one_window():
    assert chunks("just a few words here", words=120, stride=80) == ["just a few words here"]
    assert chunks("Title\nshort body") == ["Title\nshort body"]


def test_adjust_rescores_the_fused_list_before_context():
    pool = {"next": {}, "prev": {}}
    query = {"legs": {"lexical": [["a", 1, 9.0], ["b", 2, 8.0], ["c", 3, 1.0]],
                      "vector": [["b", 1, 0.9], ["a", 2, 0.1], ["c", 3, 0.0]]}}
    lists = leg_lists(query, 50, 1.0)
    assert fuse_and_propagate(pool, lists, 0, 0.0, 0.0)[:2] == ["b", "a"]

    def lift_a(fused):
        raised = [replace(c, score=c.score * 3) if c.memory_id == "a" else c for c in fused]
        return sorted(raised, key=lambda c: -c.score)

    assert fuse_and_propagate(pool, lists, 0, 0.0, 0.0, adjust=lift_a)[:2] == ["a", "b"]
