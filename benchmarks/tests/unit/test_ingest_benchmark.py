"""benchmarks.performance.ingest: the model's busy time from the embedding service's text, and
a stack run's ratio against the model measured beside it."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from benchmarks.performance.ingest import document_seconds, report


def test_document_seconds_counts_the_document_lanes_model_time_only():
    registry = CollectorRegistry()
    c = Counter("recallmesh_embedding_model_seconds", "x", ["kind"], registry=registry)
    c.labels("document").inc(2.5)
    c.labels("document").inc(1.0)
    c.labels("query").inc(0.04)  # the warm-up recalls' queries are not the load's
    # requests overlap (a batch's concept names beside the next batch): their times are not
    # the model's, and the request histogram is not read
    h = Histogram("recallmesh_embedding_request_seconds", "x", ["kind"], registry=registry)
    h.labels("document").observe(9.0)
    assert document_seconds(generate_latest(registry).decode()) == 3.5
    assert document_seconds(None) == 0.0  # no answer from the service: nothing counted


def test_report_states_each_run_beside_its_model_and_the_busy_share():
    result = {"memories": 600, "rounds": 2, "model_per_s": [10.0, 9.0, 12.0],
              "variants": {"shipped": [
                  {"per_s": 9.0, "model_beside_per_s": 9.5, "ratio": 9.0 / 9.5,
                   "model_busy_share": 0.96},
                  {"per_s": 9.6, "model_beside_per_s": 10.5, "ratio": 9.6 / 10.5,
                   "model_busy_share": 0.94}]}}
    text = report(result, [])
    row = next(line for line in text.splitlines() if line.startswith("| shipped"))
    assert "9.0 (9.5), 9.6 (10.5)" in row
    assert "| 0.93 |" in row  # the median of 0.947 and 0.914
    assert row.endswith("| 95% |")
