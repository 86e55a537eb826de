"""The PrometheusRule passes `promtool check rules`, every alert has a promtool unit test and a
runbook in docs/operations/alerts.md, and `promtool test rules` passes."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy import metric_names
from tests.deploy.tools import ALERTS_MD, PROMTOOL_TESTS, tool

RUNBOOK_BASE = "https://github.com/recallmesh/recallmesh/blob/main/docs/operations/alerts.md#"


def rule_groups() -> dict[str, Any]:
    """The plain Prometheus rule file: the PrometheusRule's spec, unchanged."""
    return metric_names.prometheus_rule_groups()


def alerts() -> list[dict[str, Any]]:
    return [r for g in rule_groups()["groups"] for r in g["rules"] if "alert" in r]


@pytest.fixture(scope="module")
def rules_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("promtool")
    metric_names.write_prometheus_rules(out / "recallmesh-rules.yaml")
    shutil.copy(PROMTOOL_TESTS, out / PROMTOOL_TESTS.name)
    return out


def _promtool(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([tool("promtool"), *args], cwd=cwd, capture_output=True, text=True)
    print(done.stdout, done.stderr)
    return done


def test_promtool_check_rules(rules_dir: Path) -> None:
    done = _promtool("check", "rules", "recallmesh-rules.yaml", cwd=rules_dir)
    assert done.returncode == 0, done.stdout + done.stderr
    count = sum(len(g["rules"]) for g in rule_groups()["groups"])
    assert f"SUCCESS: {count} rules found" in done.stdout


def test_promtool_test_rules(rules_dir: Path) -> None:
    done = _promtool("test", "rules", PROMTOOL_TESTS.name, cwd=rules_dir)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


def test_every_alert_has_a_firing_unit_test() -> None:
    tests = yaml.safe_load(PROMTOOL_TESTS.read_text())
    firing = {
        case["alertname"]
        for test in tests["tests"]
        for case in test.get("alert_rule_test", [])
        if case.get("exp_alerts")
    }
    assert {a["alert"] for a in alerts()} == firing


def github_anchor(heading: str) -> str:
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def test_every_alert_has_a_runbook_in_alerts_md() -> None:
    anchors = {
        github_anchor(m.group(1))
        for m in re.finditer(r"^#+ (.+)$", ALERTS_MD.read_text(), flags=re.M)
    }
    for alert in alerts():
        url = alert["annotations"]["runbook_url"]
        assert url.startswith(RUNBOOK_BASE), url
        anchor = url[len(RUNBOOK_BASE):]
        assert anchor == alert["alert"].lower()
        assert anchor in anchors, f"docs/operations/alerts.md has no heading for #{anchor}"
        assert alert["labels"]["severity"] in {"info", "warning", "critical"}
        assert {"summary", "description"} <= set(alert["annotations"])
