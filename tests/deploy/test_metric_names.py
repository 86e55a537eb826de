"""Every metric the rules and the dashboard use is one recallmesh defines (or one of the few
named external exporters), and tests/deploy/metric-names.txt lists them."""

from __future__ import annotations

import re

from tests.deploy import metric_names
from tests.deploy.tools import ROOT


def defined_in_code() -> set[str]:
    """Metric names passed to prometheus_client constructors anywhere in recallmesh/."""
    names = set()
    for path in (ROOT / "recallmesh").rglob("*.py"):
        text = path.read_text()
        for match in re.finditer(
            r"\b(Counter|Gauge|Histogram|Summary|Info)\(\s*\"([a-z_:][a-z0-9_:]*)\"", text
        ):
            kind, name = match.groups()
            names.add(name if kind != "Counter" or name.endswith("_total") else name + "_total")
    return names


def test_names_extraction_reads_promql() -> None:
    assert metric_names.names_in_expr(
        'histogram_quantile(0.95, sum by (namespace, le) (rate(foo_bucket{a="b"}[5m]))) '
        '/ on (namespace) group_left bar_total > 0.64'
    ) == {"foo_bucket", "bar_total"}


def test_every_recallmesh_metric_used_is_defined_in_the_code() -> None:
    code = defined_in_code()
    assert {"recallmesh_recall_seconds", "recallmesh_leg_failures_total"} <= code
    used = metric_names.recallmesh_metric_names()
    assert len(used) >= 12
    undefined = {n for n in used if n not in code and metric_names.family(n) not in
                 {metric_names.family(c) for c in code}}
    assert not undefined, f"not defined in recallmesh/: {sorted(undefined)}"


def test_external_names_are_only_the_listed_exporters() -> None:
    used = metric_names.used_metric_names()
    external = set().union(*metric_names.EXTERNAL.values())
    assert used - metric_names.recallmesh_metric_names() <= external


def test_metric_names_file_is_current() -> None:
    assert metric_names.NAMES_FILE.read_text() == metric_names.names_file_text(), (
        "regenerate: python -m tests.deploy.metric_names > tests/deploy/metric-names.txt"
    )


def test_missing_from_scrape() -> None:
    scrape = (
        "# HELP recallmesh_leg_failures_total Leg calls that timed out or failed.\n"
        "# TYPE recallmesh_leg_failures_total counter\n"
        "# TYPE recallmesh_recall_seconds histogram\n"
        'recallmesh_recall_seconds_bucket{degraded="false",le="0.1"} 3.0\n'
    )
    assert metric_names.missing_from_scrape(
        scrape,
        {"recallmesh_leg_failures_total", "recallmesh_recall_seconds_count", "recallmesh_nope"},
    ) == {"recallmesh_nope"}
