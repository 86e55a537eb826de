"""Unit: settings from the environment and the JSONL import format."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from recallmesh.client.jsonl import InputError, memory_from_json
from recallmesh.gateway.settings import GatewaySettings
from recallmesh.shared.settings import ConfigError, ServerConfig


def test_server_config_defaults_and_overrides() -> None:
    config = ServerConfig.from_env("gateway", {})
    assert (config.host, config.port, config.metrics_port) == ("localhost", 50051, 9451)
    config = ServerConfig.from_env("lexical", {"RECALLMESH_LEXICAL_PORT": "6000"})
    assert config.address == "localhost:6000"


@pytest.mark.parametrize("bad", ["0", "-1", "http", "1.5"])
def test_bad_ports_are_config_errors(bad: str) -> None:
    with pytest.raises(ConfigError, match="RECALLMESH_GATEWAY_PORT"):
        ServerConfig.from_env("gateway", {"RECALLMESH_GATEWAY_PORT": bad})


def test_leg_target_follows_the_leg_port(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECALLMESH_LEXICAL_PORT", "6123")
    monkeypatch.delenv("RECALLMESH_LEXICAL_TARGET", raising=False)
    monkeypatch.delenv("RECALLMESH_LEGS", raising=False)
    lexical, vector = GatewaySettings.from_env().legs  # the default legs
    assert (lexical.name, lexical.target, lexical.needs_vector) == (
        "lexical", "localhost:6123", False
    )
    assert (vector.name, vector.target, vector.needs_vector) == ("vector", "localhost:50053", True)
    monkeypatch.setenv("RECALLMESH_LEXICAL_TARGET", "lexical.recallmesh.svc:50052")
    assert GatewaySettings.from_env().legs[0].target == "lexical.recallmesh.svc:50052"


def test_unknown_leg_needs_a_target(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECALLMESH_LEGS", "lexical,mystery")
    with pytest.raises(ConfigError, match="RECALLMESH_MYSTERY_TARGET"):
        GatewaySettings.from_env()


def test_budget_reserve_must_fit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECALLMESH_RECALL_BUDGET_MS", "100")
    monkeypatch.setenv("RECALLMESH_RECALL_RESERVE_MS", "100")
    with pytest.raises(ConfigError, match="RESERVE"):
        GatewaySettings.from_env()


def test_graph_second_stage_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    policy = GatewaySettings.from_env().policy
    assert (policy.graph_second_stage, policy.graph_second_stage_seeds,
            policy.graph_second_stage_min_ms) == (False, 5, 50)
    monkeypatch.setenv("RECALLMESH_GRAPH_SECOND_STAGE", "true")
    monkeypatch.setenv("RECALLMESH_GRAPH_SECOND_STAGE_SEEDS", "8")
    policy = GatewaySettings.from_env().policy
    assert policy.graph_second_stage and policy.graph_second_stage_seeds == 8
    monkeypatch.setenv("RECALLMESH_GRAPH_SECOND_STAGE_SEEDS", "101")
    with pytest.raises(ConfigError, match="RECALLMESH_GRAPH_SECOND_STAGE_SEEDS must be <= 100"):
        GatewaySettings.from_env()


def test_context_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HITS", "NEXT_WEIGHT", "PREV_WEIGHT"):
        monkeypatch.delenv(f"RECALLMESH_CONTEXT_{name}", raising=False)
    policy = GatewaySettings.from_env().policy
    assert (policy.context_hits, policy.context_next_weight, policy.context_prev_weight) == (
        5, 0.3, 0.2)
    monkeypatch.setenv("RECALLMESH_CONTEXT_NEXT_WEIGHT", "0.25")
    assert GatewaySettings.from_env().policy.context_next_weight == 0.25
    monkeypatch.setenv("RECALLMESH_CONTEXT_PREV_WEIGHT", "1.5")
    with pytest.raises(ConfigError,
                       match=r"RECALLMESH_CONTEXT_PREV_WEIGHT must be within \[0, 1\]"):
        GatewaySettings.from_env()


def test_import_record_full() -> None:
    memory = memory_from_json({
        "content": "c", "category": "fact", "tags": ["a", "b"], "importance": 1,
        "sensitive": True, "metadata": {"k": "v"}, "created_at": "2024-05-01T10:00:00+02:00",
        "thread": "chat-42",
    }, "f:1")
    assert list(memory.tags) == ["a", "b"] and memory.importance == 1.0 and memory.sensitive
    assert memory.thread == "chat-42"
    assert memory.created_at == datetime(2024, 5, 1, 8, tzinfo=UTC)


@pytest.mark.parametrize("record, message", [
    ({"content": 5}, "content"),
    ({"content": "c", "sensitive": "false"}, "sensitive"),
    ({"content": "c", "tags": "abc"}, "tags"),
    ({"content": "c", "tags": ["ok", None]}, "tags"),
    ({"content": "c", "metadata": {"a": {"b": 1}}}, "metadata"),
    ({"content": "c", "metadata": ["x"]}, "metadata"),
    ({"content": "c", "importance": "high"}, "importance"),
    ({"content": "c", "importance": True}, "importance"),
    ({"content": "c", "created_at": 1700000000}, "created_at"),
    ({"content": "c", "created_at": "2024-05-01T10:00:00"}, "timezone"),
    ({"content": "c", "thread": 7}, "thread"),
    ({"content": "c", "colour": "red"}, "unknown field"),
    (["not", "an", "object"], "JSON object"),
])
def test_import_record_type_errors_name_the_line(record: object, message: str) -> None:
    with pytest.raises(InputError, match=message) as info:
        memory_from_json(record, "file.jsonl:7")
    assert "file.jsonl:7" in str(info.value)


def test_bad_log_level_falls_back_to_info(monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    import logging

    from recallmesh.shared.logs import configure_logging

    monkeypatch.setenv("RECALLMESH_LOG_LEVEL", "chatty")
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    try:
        configure_logging("test")
        assert root.level == logging.INFO
        assert "not a log level" in capsys.readouterr().err
    finally:
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])


def test_import_batches_stay_within_the_request_limit_by_encoded_size() -> None:
    from recallmesh.client import NewMemory, encoded_size
    from recallmesh.client._wire import new_memory_message
    from recallmesh.client.jsonl import batches

    memory = NewMemory("x" * 30_000, tags=("a", "b"), metadata={"k": "v"}, id=str(uuid.uuid4()))
    assert encoded_size(memory) == new_memory_message(memory).ByteSize() + 8
    assert encoded_size(NewMemory("short")) == encoded_size(NewMemory("short", id=memory.id))
    records = [(n, memory) for n in range(10)]
    sizes = [len(chunk) for chunk in batches(records, 1000, max_bytes=4 * encoded_size(memory))]
    assert sizes == [4, 4, 2]  # by bytes, not by count
    assert [len(c) for c in batches(records, 3)] == [3, 3, 3, 1]  # by count
