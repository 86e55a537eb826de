"""The detector of a frozen write path (recallmesh.shared.db.StuckBackends, issue 65): a backend
counts as stuck when it waits on an LWLock at every look, in one statement, for longer than the
write path's statement timeout; one look without it, or another statement, starts over."""

from __future__ import annotations

from datetime import UTC, datetime

from prometheus_client import REGISTRY

from recallmesh.shared.db import WRITE, StuckBackends

T = datetime(2026, 12, 1, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def gauge() -> float | None:
    return REGISTRY.get_sample_value("recallmesh_db_stuck_backends")


def test_a_wait_seen_at_every_look_past_the_timeout_is_stuck() -> None:
    clock = Clock()
    detector = StuckBackends(after_s=15, clock=clock)
    waiting = [(101, T, "extension", "INSERT INTO memories ...")]
    for clock.now in (0, 5, 10, 14.9):
        assert detector.observe(waiting) == []
    clock.now = 15
    assert detector.observe(waiting) == [(101, "extension", "INSERT INTO memories ...")]
    assert gauge() == 1
    assert detector.observe([]) == [] and gauge() == 0


def test_a_look_without_the_wait_or_a_new_statement_starts_over() -> None:
    clock = Clock()
    detector = StuckBackends(after_s=15, clock=clock)
    first = (7, T, "WALWrite", "DELETE FROM memories ...")
    detector.observe([first])
    clock.now = 10
    detector.observe([])  # the purge went on working between two waits
    clock.now = 20
    assert detector.observe([first]) == []
    clock.now = 30
    assert detector.observe([(7, T.replace(second=5), "WALWrite", "DELETE ...")]) == []
    clock.now = 36
    assert detector.observe([(7, T.replace(second=5), "WALWrite", "DELETE ...")]) == []
    clock.now = 45
    assert len(detector.observe([(7, T.replace(second=5), "WALWrite", "DELETE ...")])) == 1


def test_the_default_threshold_is_the_write_statement_timeout() -> None:
    assert StuckBackends().after_s == WRITE.statement_timeout_ms / 1000 == 15
