"""The pure stages after fusion (recallmesh/gateway/stages.py): superseded memories last."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from recallmesh.fusion.core import FusedCandidate
from recallmesh.gateway.stages import current_first

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def test_a_superseded_memory_comes_after_every_current_one():
    top = [FusedCandidate(i, s) for i, s in (("old", 3.0), ("a", 2.0), ("new", 1.0))]
    valid_to = {"old": NOW - timedelta(days=1), "a": None, "new": NOW + timedelta(days=1)}
    assert [c.memory_id for c in current_first(top, valid_to, NOW)] == ["a", "new", "old"]


@given(st.lists(st.tuples(st.sampled_from("abcdefgh"), st.sampled_from([None, -1, 0, 1])),
                unique_by=lambda x: x[0], max_size=8))
def test_the_order_is_kept_within_each_group(rows):
    top = [FusedCandidate(i, float(-n)) for n, (i, _) in enumerate(rows)]
    valid_to = {i: None if d is None else NOW + timedelta(seconds=d) for i, d in rows}
    got = [c.memory_id for c in current_first(top, valid_to, NOW)]
    ended = [i for i, d in rows if d is not None and d <= 0]
    assert got == [i for i, _ in rows if i not in ended] + ended
