"""The Grafana dashboard covers what issue 23 asks for and queries only recording rules that
exist."""

from __future__ import annotations

import json
import re

from tests.deploy import metric_names
from tests.deploy.tools import DASHBOARD


def test_dashboard_panels() -> None:
    dash = json.loads(DASHBOARD.read_text())
    assert dash["uid"] == "recallmesh"
    titles = {p["title"] for p in dash["panels"] if p["type"] != "row"}
    assert titles >= {
        "Recall rate", "Recall latency", "Per-leg latency p95", "Per-leg calls by state",
        "Degraded ratio", "Fallbacks", "Fusion: service vs local", "Embedding batch size",
        "Embedding latency p95", "Outbox backlog", "Database connections (pool)",
    }
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids))
    for panel in dash["panels"]:
        for target in panel.get("targets", []):
            assert "$namespace" in target["expr"], (panel["title"], target["expr"])


def test_dashboard_uses_only_recording_rules_that_exist() -> None:
    recorded = metric_names.recording_rule_names()
    for expr in metric_names.dashboard_exprs():
        for name in re.findall(r"recallmesh:[a-z_:0-9]+", expr):
            assert name in recorded, name
