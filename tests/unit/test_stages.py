"""The pure stages after fusion (recallmesh/gateway/stages.py): superseded memories last."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from recallmesh.gateway.stages import ENDED_SHARE, current_first
from recallmesh.wire.fusion import FusedCandidate

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def test_a_superseded_memory_comes_after_every_current_one() -> None:
    top = [FusedCandidate(i, s) for i, s in (("old", 3.0), ("a", 2.0), ("new", 1.0))]
    valid_to = {"old": NOW - timedelta(days=1), "a": None, "new": NOW + timedelta(days=1)}
    ranked = current_first(top, valid_to, NOW)
    assert [c.memory_id for c in ranked] == ["a", "new", "old"]
    # ... and scores below its replacement (issue 39: it kept 0.892, above the new 0.411)
    assert [c.score for c in ranked] == [2.0, 1.0, ENDED_SHARE * 1.0]


def test_ended_memories_keep_their_order_and_ratios_below_every_current_score() -> None:
    top = [FusedCandidate(i, s) for i, s in (("o1", 4.0), ("c", 0.2), ("o2", 1.0))]
    ended_at = NOW - timedelta(seconds=1)
    ranked = current_first(top, {"o1": ended_at, "o2": ended_at, "c": None}, NOW)
    assert [(c.memory_id, c.score) for c in ranked] == [
        ("c", 0.2), ("o1", ENDED_SHARE * 0.2), ("o2", ENDED_SHARE * 0.2 / 4)]
    only_old = current_first([FusedCandidate("o", 0.8)], {"o": ended_at}, NOW)
    assert only_old[0].score == ENDED_SHARE * 0.8


@given(st.lists(st.tuples(st.sampled_from("abcdefgh"), st.sampled_from([None, -1, 0, 1])),
                unique_by=lambda x: x[0], max_size=8))
def test_the_order_is_kept_within_each_group(rows: list[tuple[str, int | None]]) -> None:
    top = [FusedCandidate(i, float(-n)) for n, (i, _) in enumerate(rows)]
    valid_to = {i: None if d is None else NOW + timedelta(seconds=d) for i, d in rows}
    got = [c.memory_id for c in current_first(top, valid_to, NOW)]
    ended = [i for i, d in rows if d is not None and d <= 0]
    assert got == [i for i, _ in rows if i not in ended] + ended
    scores = [c.score for c in current_first(top, valid_to, NOW)]
    current = len(rows) - len(ended)
    if current and ended:
        assert max(scores[current:]) < min(scores[:current]) or min(scores[:current]) <= 0
