"""The gRPC tracing interceptors are installed only where traces are exported (decision 0026)."""

from __future__ import annotations

import pytest

from recallmesh.shared.telemetry import exporting_traces, tracing_interceptors


@pytest.mark.parametrize("value", [None, "", "none", " None "])
def test_no_interceptor_without_an_exporter(monkeypatch: pytest.MonkeyPatch,
                                            value: str | None) -> None:
    if value is None:
        monkeypatch.delenv("RECALLMESH_OTEL_EXPORTER", raising=False)
    else:
        monkeypatch.setenv("RECALLMESH_OTEL_EXPORTER", value)
    assert not exporting_traces()
    assert tracing_interceptors("client") == [] and tracing_interceptors("server") == []


@pytest.mark.parametrize("value", ["console", "otlp"])
def test_both_sides_intercepted_with_an_exporter(monkeypatch: pytest.MonkeyPatch,
                                                 value: str) -> None:
    monkeypatch.setenv("RECALLMESH_OTEL_EXPORTER", value)
    assert exporting_traces()
    assert tracing_interceptors("client") and len(tracing_interceptors("server")) == 1
