"""The shipped observability against running services: every metric the PrometheusRule and the
Grafana dashboard use is exported by a stack after some traffic, and a real Prometheus
(Debian's `prometheus`, installed by `make deploy-tools`) loaded with the shipped rules turns
the leg-failure alert pending when the vector leg is stopped under load."""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from recallmesh.stack.supervisor import Stack, free_port
from recallmesh.v1 import memory_pb2, memory_pb2_grpc
from tests.deploy.metric_names import (
    missing_from_scrape,
    prometheus_rule_groups,
    recallmesh_metric_names,
)
from tests.fixtures import stack_env

pytestmark = pytest.mark.integration

T = TypeVar("T")


def scrape(port: int) -> str:
    body: bytes = urllib.request.urlopen(f"http://localhost:{port}/metrics", timeout=5).read()
    return body.decode()


def test_every_metric_the_rules_and_dashboard_use_is_exported(
        stack: Stack, gateway: memory_pb2_grpc.MemoryServiceStub, ns: str) -> None:
    stored = gateway.StoreBatch(memory_pb2.StoreBatchRequest(namespace=ns, memories=[
        memory_pb2.Memory(content=f"The ferry to island {i} leaves at dawn") for i in range(5)],
        index_wait=memory_pb2.IndexWait(wait=True, timeout_ms=30_000)), timeout=40)
    assert stored.indexed
    for query in ("ferry island", "when does the boat leave?"):
        assert gateway.Recall(memory_pb2.RecallRequest(namespace=ns, query=query), timeout=10).hits
    text = "\n".join(scrape(port) for port in stack.metrics.values())
    names = recallmesh_metric_names()
    assert len(names) >= 10
    assert not missing_from_scrape(text, names)
    # the series alerts read are there before their first increment (at zero unless another
    # test of the session failed a leg or a recall)
    series = {(sample.name, frozenset(sample.labels.items()))
              for family in text_string_to_metric_families(text) for sample in family.samples}
    for leg in ("lexical", "vector"):
        for state in ("TIMEOUT", "ERROR"):
            assert ("recallmesh_leg_failures_total",
                    frozenset({"leg": leg, "state": state}.items())) in series
    assert ("recallmesh_recall_fallbacks_total",
            frozenset({"kind": "local_fusion"}.items())) in series
    assert ("recallmesh_indexer_jobs_total", frozenset({"outcome": "parked"}.items())) in series
    assert ("grpc_server_handled_total", frozenset({
        "grpc_service": "recallmesh.v1.MemoryService", "grpc_method": "Context",
        "grpc_type": "unary", "grpc_code": "UNAVAILABLE"}.items())) in series


def prometheus_rules(path: Path) -> Path:
    """The shipped rule groups, evaluated every second instead of every 30 s (a test cannot
    wait minutes); the expressions and thresholds are the shipped ones."""
    groups = prometheus_rule_groups()
    for group in groups["groups"]:
        group["interval"] = "1s"
    path.write_text(yaml.safe_dump(groups, sort_keys=False))
    return path


def api(port: int, path: str, **params: str) -> dict[str, Any]:
    url = f"http://127.0.0.1:{port}/api/v1/{path}"
    if params:
        url += "?" + urllib.parse.urlencode(params)
    data: dict[str, Any] = json.loads(urllib.request.urlopen(url, timeout=5).read())["data"]
    return data


def wait_for(condition: Callable[[], T], timeout_s: float, what: str) -> T:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.5)
    pytest.fail(f"{what}: not within {timeout_s} s")


@pytest.mark.timeout(300)
def test_prometheus_alerts_when_the_vector_leg_stops_under_load(dsn: str, pg_dir: Path, ns: str,
                                                                tmp_path: Path) -> None:
    prometheus = shutil.which("prometheus")
    assert prometheus, "prometheus is missing: `make deploy-tools` installs Debian's package"
    env = stack_env(pg_dir / "alerting", dsn, RECALLMESH_LEGS="lexical,vector",
                    RECALLMESH_FUSION_TARGET="local")
    stack = Stack(env=env, services=("embedding", "lexical", "vector", "gateway"))
    stack.start(timeout_s=60)
    port = free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(yaml.safe_dump({
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(prometheus_rules(tmp_path / "rules.yml"))],
        "scrape_configs": [{"job_name": "recallmesh", "static_configs": [{"targets": [
            f"127.0.0.1:{p}" for p in stack.metrics.values()]}]}]}))
    server = subprocess.Popen(
        [prometheus, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
         f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    stop = threading.Event()
    sent = [0]

    def load(stub: memory_pb2_grpc.MemoryServiceStub) -> None:
        deadline = time.monotonic() + 240  # bounded, whatever happens to the test
        while not stop.is_set() and time.monotonic() < deadline:
            stub.Recall(memory_pb2.RecallRequest(namespace=ns, query="lighthouse keeper"),
                        timeout=5)
            sent[0] += 1
            time.sleep(0.02)

    try:
        wait_for(lambda: _ready(port), 30, "prometheus ready")
        with stack.dial("gateway") as channel:
            stub = memory_pb2_grpc.MemoryServiceStub(channel)
            stub.Store(memory_pb2.StoreRequest(namespace=ns, memory=memory_pb2.Memory(
                content="The lighthouse keeper feeds the gulls")), timeout=10)
            worker = threading.Thread(target=load, args=(stub,), daemon=True)
            worker.start()
            # the recording rules see the vector leg's calls before it goes away
            wait_for(lambda: any(r["metric"].get("leg") == "vector" for r in api(
                port, "query", query="recallmesh:leg_calls:rate_5m")["result"]), 60,
                "vector leg calls recorded")
            assert not _leg_alerts(port)  # nothing fails yet
            stack.processes["vector"].kill()
            alerts = wait_for(lambda: _leg_alerts(port), 60, "RecallmeshLegFailing")
            stop.set()
            worker.join(timeout=10)
        assert alerts[0]["labels"]["leg"] == "vector"
        assert alerts[0]["state"] in ("pending", "firing")
        assert sent[0] > 10
    finally:
        stop.set()
        server.terminate()
        server.wait(timeout=30)
        stack.stop()


def _ready(port: int) -> bool:
    try:
        status: int = urllib.request.urlopen(f"http://127.0.0.1:{port}/-/ready", timeout=2).status
        return status == 200
    except OSError:
        return False


def _leg_alerts(port: int) -> list[dict[str, Any]]:
    return [a for a in api(port, "alerts")["alerts"]
            if a["labels"].get("alertname") == "RecallmeshLegFailing"]
