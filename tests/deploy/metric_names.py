"""Every metric name the shipped PrometheusRule and Grafana dashboard use, and a check of a
/metrics scrape against them.

Reusable by a live test (scrape each service after some traffic; load the rules into a local
Prometheus with `write_prometheus_rules(path)`):

    from tests.deploy.metric_names import recallmesh_metric_names, missing_from_scrape
    missing = missing_from_scrape(scraped_text_of_all_services, recallmesh_metric_names())
    assert not missing

Names from other exporters (CloudNativePG, kube-state-metrics, Prometheus itself) are listed
apart in EXTERNAL: a recallmesh stack does not export them.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "k8s" / "base" / "observability" / "prometheusrule.yaml"
DASHBOARD = ROOT / "k8s" / "base" / "observability" / "recallmesh-dashboard.json"
NAMES_FILE = ROOT / "tests" / "deploy" / "metric-names.txt"

# exporter -> names the rules or the dashboard use
EXTERNAL = {
    "prometheus (scrape)": {"up"},
    "cloudnative-pg (instance manager)": {"cnpg_collector_up", "cnpg_backends_total"},
    "kube-state-metrics": {"kube_pod_container_status_ready"},
}
_EXTERNAL = set().union(*EXTERNAL.values())

_IDENT = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'')
_LABELS = re.compile(r"\{[^{}]*\}")
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_RANGES = re.compile(r"\[[^\]]*\]")
_KEYWORDS = {
    "sum", "min", "max", "avg", "count", "rate", "irate", "increase", "histogram_quantile",
    "min_over_time", "max_over_time", "avg_over_time", "label_values", "round", "and", "or",
    "unless", "by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset",
    "absent", "deriv", "clamp_min", "clamp_max", "topk", "bottomk", "time", "vector", "le",
}


def names_in_expr(expr: str) -> set[str]:
    """Metric names in one PromQL expression (label matchers, groupings, strings removed)."""
    text = _STRINGS.sub("", expr)
    text = _LABELS.sub("", text)
    text = _GROUPING.sub("", text)
    text = _RANGES.sub("", text)
    text = re.sub(r"\$\{?\w+\}?", "", text)  # Grafana variables
    names = set()
    for match in _IDENT.finditer(text):
        word = match.group()
        end = match.end()
        if word in _KEYWORDS or word[0].isdigit():
            continue
        if text[end:end + 1] == "(":  # a function call
            continue
        names.add(word)
    return names


def prometheus_rule_groups() -> dict[str, Any]:
    """The PrometheusRule's spec: a plain Prometheus rule file's content (`groups: [...]`)."""
    groups: dict[str, Any] = yaml.safe_load(RULES.read_text())["spec"]
    return groups


def write_prometheus_rules(path: Path) -> Path:
    """Write the rule file a plain Prometheus (or promtool) loads with `rule_files:`."""
    path.write_text(yaml.safe_dump(prometheus_rule_groups(), sort_keys=False))
    return path


def rule_exprs() -> list[str]:
    doc = yaml.safe_load(RULES.read_text())
    return [r["expr"] for g in doc["spec"]["groups"] for r in g["rules"]]


def recording_rule_names() -> set[str]:
    doc = yaml.safe_load(RULES.read_text())
    return {r["record"] for g in doc["spec"]["groups"] for r in g["rules"] if "record" in r}


def dashboard_exprs() -> list[str]:
    dash = json.loads(DASHBOARD.read_text())
    exprs = []
    for panel in dash["panels"]:
        exprs += [t["expr"] for t in panel.get("targets", [])]
    for var in dash["templating"]["list"]:
        if var.get("type") == "query":
            # label_values(<metric>, <label>): only the metric is a name
            match = re.fullmatch(r"label_values\((.+),\s*\w+\)", var["definition"])
            exprs.append(match.group(1) if match else var["definition"])
    return exprs


def used_metric_names() -> set[str]:
    """Every raw metric name used (recording rules' own names excluded)."""
    names = set()
    for expr in rule_exprs() + dashboard_exprs():
        names |= names_in_expr(expr)
    return names - recording_rule_names()


def recallmesh_metric_names() -> set[str]:
    """The names a running recallmesh stack must export."""
    return used_metric_names() - _EXTERNAL


def family(name: str) -> str:
    """The metric family a sample name belongs to (histogram/counter suffixes dropped)."""
    for suffix in ("_bucket", "_count", "_sum", "_total", "_created"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def missing_from_scrape(scrape_text: str, names: set[str]) -> set[str]:
    """The names not exported in a Prometheus text scrape (all services' /metrics joined).

    A name counts as exported when a sample of it appears, or, for a labelled metric that has
    not been observed yet, its family's `# TYPE` line."""
    samples, families = set(), set()
    for line in scrape_text.splitlines():
        if line.startswith("# TYPE "):
            families.add(family(line.split()[2]))
        elif line and not line.startswith("#"):
            samples.add(re.split(r"[{ ]", line, maxsplit=1)[0])
    return {n for n in names if n not in samples and family(n) not in families}


def names_file_text() -> str:
    lines = [
        "# Metric names used by k8s/base/observability/prometheusrule.yaml and",
        "# recallmesh-dashboard.json. Generated by tests/deploy/metric_names.py",
        "# (python -m tests.deploy.metric_names > tests/deploy/metric-names.txt); a test keeps it",
        "# current.",
        "# recallmesh (exported by the services):",
    ]
    lines += sorted(recallmesh_metric_names())
    for exporter, names in EXTERNAL.items():
        lines.append(f"# {exporter}:")
        lines += sorted(names & used_metric_names())
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(names_file_text(), end="")
