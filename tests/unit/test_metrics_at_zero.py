"""The labelled series the alerts, the recording rules and the dashboard read exist at zero
from the start. A labelled counter is otherwise exported only from its first increment, and
Prometheus' rate() and increase() cannot see that first one: the first leg failure, the first
UNAVAILABLE recall would be missed."""

from __future__ import annotations

import asyncio
import itertools
import re

from grpc_health.v1 import health
from prometheus_client import REGISTRY, generate_latest

from recallmesh.gateway import metrics
from recallmesh.gateway.fanout import LegError, LegOutcome, run_leg
from recallmesh.gateway.servicer import GatewayApp
from recallmesh.services.embedding.servicer import EmbeddingApp
from recallmesh.services.fusion.servicer import FusionApp
from recallmesh.services.indexer.metrics import JOB_OUTCOMES, export_job_zeros
from recallmesh.services.retriever_app import RetrieverApp
from recallmesh.shared.replicas import export_read_zeros
from recallmesh.shared.telemetry import ZERO_CODES, export_rpc_zeros
from recallmesh.wire.filters import Filters
from recallmesh.wire.retriever import LegAnswer, LegQuery
from tests.deploy import metric_names

APPS = (GatewayApp, RetrieverApp, FusionApp, EmbeddingApp)  # the indexer serves no service


def value(name: str, **labels: str) -> float | None:
    return REGISTRY.get_sample_value(name, labels)


def test_the_recall_series_exist_at_zero_for_the_configured_legs() -> None:
    legs = ("zero-lexical", "zero-vector")
    assert value("recallmesh_leg_failures_total", leg="zero-lexical", state="TIMEOUT") is None
    metrics.export_recall_zeros(legs)
    for leg in legs:
        for state in ("TIMEOUT", "ERROR"):
            assert value("recallmesh_leg_failures_total", leg=leg, state=state) == 0
        for state in ("OK", "TIMEOUT", "ERROR"):
            assert value("recallmesh_leg_latency_seconds_count", leg=leg, state=state) == 0
        assert value("recallmesh_leg_failures_total", leg=leg, state="OK") is None
    for kind in ("lexical_only", "partial", "local_fusion"):
        assert value("recallmesh_recall_fallbacks_total", kind=kind) is not None
    for degraded in ("true", "false", "failed"):
        assert value("recallmesh_recall_seconds_count", degraded=degraded) is not None
    scrape = generate_latest(REGISTRY).decode()
    assert 'recallmesh_leg_failures_total{leg="zero-vector",state="TIMEOUT"} 0.0' in scrape


def test_a_graph_leg_brings_its_second_stage_label() -> None:
    metrics.export_recall_zeros(["graph"])
    assert value("recallmesh_leg_failures_total", leg="graph_second_stage",
                 state="TIMEOUT") is not None


def test_the_failure_states_are_the_ones_run_leg_counts() -> None:
    """A failing and a late leg add to the series created at zero, and to no other."""

    class Failing:
        name, needs_vector = "zero-run", False

        async def search(self, query: LegQuery, timeout_s: float) -> LegAnswer:
            raise LegError("UNAVAILABLE")

    class Late(Failing):
        async def search(self, query: LegQuery, timeout_s: float) -> LegAnswer:
            await asyncio.sleep(1)
            raise AssertionError("not reached: the leg's time runs out first")

    metrics.export_recall_zeros([Failing.name])
    query = LegQuery(namespace="ns", query="q", k=5, filters=Filters(), sort_by="relevance")

    async def scenario() -> list[LegOutcome]:
        return [await run_leg(Failing(), query, 0.5), await run_leg(Late(), query, 0.01)]

    assert [o.state for o in asyncio.run(scenario())] == ["ERROR", "TIMEOUT"]
    counted = {s.labels["state"]: s.value for m in REGISTRY.collect()
               if m.name == "recallmesh_leg_failures"
               for s in m.samples if s.name.endswith("_total") and s.labels["leg"] == "zero-run"}
    assert counted == {"TIMEOUT": 1.0, "ERROR": 1.0}


def test_every_unary_method_answers_zero_for_the_codes_alerts_read() -> None:
    export_rpc_zeros(["recallmesh.v1.MemoryService", health.SERVICE_NAME])
    for method in ("Recall", "Context", "Store"):
        for code in ZERO_CODES:
            assert value("grpc_server_handled_total", grpc_service="recallmesh.v1.MemoryService",
                         grpc_method=method, grpc_type="unary", grpc_code=code) is not None
    assert value("grpc_server_handled_total", grpc_service=health.SERVICE_NAME,
                 grpc_method="Check", grpc_type="unary", grpc_code="OK") is not None
    assert value("grpc_server_handled_total", grpc_service=health.SERVICE_NAME,  # streaming
                 grpc_method="Watch", grpc_type="unary", grpc_code="OK") is None


def test_indexer_outcomes_exist_at_zero() -> None:
    export_job_zeros()
    for outcome in JOB_OUTCOMES:
        assert value("recallmesh_indexer_jobs_total", outcome=outcome) is not None


# Counters (`_total`) and histogram counts (`_count`) of recallmesh, and gRPC's server counters.
_SELECTOR = re.compile(r"\b((?:recallmesh|grpc_server)_[a-z0-9_]*?_(?:total|count))\b"
                       r"(?:\{([^{}]*)\})?")
_MATCHER = re.compile(r'([a-zA-Z_]\w*)\s*(=~|!=|!~|=)\s*"((?:[^"\\]|\\.)*)"')


def wanted_series(expr: str) -> list[tuple[str, dict[str, list[str]]]]:
    """(metric, {label: values it must have a series for}) of each selector in `expr`: an
    `=` matcher wants its value, an `=~` matcher of plain alternatives (`a|b`) each of them;
    negative matchers want nothing."""
    found = []
    for name, body in _SELECTOR.findall(expr):
        labels: dict[str, list[str]] = {}
        for label, op, text in _MATCHER.findall(body or ""):
            if op == "=":
                labels[label] = [text]
            elif op == "=~" and re.fullmatch(r"[\w|]+", text):
                labels[label] = text.split("|")
        found.append((name, labels))
    return found


def exported() -> dict[str, list[dict[str, str]]]:
    samples: dict[str, list[dict[str, str]]] = {}
    for family in REGISTRY.collect():
        for sample in family.samples:
            samples.setdefault(sample.name, []).append(sample.labels)
    return samples


def test_every_counter_the_rules_and_the_dashboard_read_is_exported_from_the_start() -> None:
    """What each service does at start (GatewayApp.start, IndexerApp.start, serve() for every
    app's services), then every selector of a counter or a histogram count in
    prometheusrule.yaml and recallmesh-dashboard.json must find its series: a new alert on a
    labelled counter fails here until the counter's known labels are created at zero."""
    metrics.export_recall_zeros(["lexical", "vector", "graph"])
    export_job_zeros()
    export_read_zeros()  # Reads.open, in the gateway and every leg
    for app in APPS:
        export_rpc_zeros(app.service_names)
    samples = exported()
    exprs = metric_names.rule_exprs() + metric_names.dashboard_exprs()
    checked, missing = set(), []
    for name, labels in itertools.chain.from_iterable(map(wanted_series, exprs)):
        series = samples.get(name, [])
        known = set().union(*(s.keys() for s in series)) if series else set()
        own = {k: v for k, v in labels.items() if k in known}  # not `namespace`, `$vars`
        for combination in itertools.product(*own.values()):
            want = dict(zip(own, combination, strict=True))
            checked.add((name, tuple(sorted(want.items()))))
            if not any(all(s.get(k) == v for k, v in want.items()) for s in series):
                missing.append(f"{name}{want or ''}")
    assert not missing, ("read by an alert, a recording rule or the dashboard but not exported "
                         f"at zero from the start: {sorted(set(missing))}")
    names = {name for name, _ in checked}
    assert {"recallmesh_leg_failures_total", "recallmesh_recall_fallbacks_total",
            "recallmesh_indexer_jobs_total", "grpc_server_handled_total",
            "recallmesh_recall_seconds_count"} <= names
    assert ("grpc_server_handled_total",
            (("grpc_code", "UNAVAILABLE"), ("grpc_method", "Context"))) in checked
