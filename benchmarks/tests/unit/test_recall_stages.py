"""benchmarks.performance.recall_stages: stage means from two scrapes of Prometheus text."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Histogram, generate_latest

from benchmarks.performance.recall_stages import mean_ms, stage_rows, sums


def exposition(stage_seconds: list[tuple[str, float]]) -> str:
    registry = CollectorRegistry()
    h = Histogram("recallmesh_recall_stage_seconds", "x", ["stage"], registry=registry)
    for stage, seconds in stage_seconds:
        h.labels(stage).observe(seconds)
    return generate_latest(registry).decode()


def test_stage_means_are_the_difference_of_two_scrapes_per_recall():
    before = {"gateway": sums(exposition([("fusion", 0.004)]))}
    after = {"gateway": sums(exposition([("fusion", 0.004), ("fusion", 0.002),
                                         ("fusion", 0.004), ("hydration", 0.010)]))}
    # two recalls between the scrapes: 6 ms of fusion in all, 3 ms each
    assert mean_ms(before, after, "gateway", "recallmesh_recall_stage_seconds", 2,
                   stage="fusion") == 3.0
    assert mean_ms(before, after, "gateway", "recallmesh_recall_stage_seconds", 2,
                   stage="hydration") == 5.0
    assert mean_ms(before, after, "gateway", "recallmesh_recall_stage_seconds", 2,
                   stage="context") is None  # nothing observed: not a zero
    rows = {name.strip(): value for name, value, _ in stage_rows(before, after, 2)}
    assert rows["fusion"] == 3.0 and rows["gateway: recall"] is None
