"""Unit: expiry's pure parts: RECALLMESH_NAMESPACE_TTL rules, durations, the CLI's
--expires-in, and expires_at validation."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from google.protobuf.field_mask_pb2 import FieldMask
from google.protobuf.timestamp_pb2 import Timestamp

from recallmesh.cli.common import expires_at
from recallmesh.client.jsonl import InputError, memory_from_json
from recallmesh.gateway.settings import GatewaySettings, NamespaceTTL, parse_namespace_ttl
from recallmesh.services.indexer.settings import IndexerSettings
from recallmesh.shared.errors import InvalidArgument
from recallmesh.shared.settings import ConfigError, parse_duration_s
from recallmesh.v1 import memory_pb2
from recallmesh.wire import validation


@pytest.mark.parametrize("text, seconds", [
    ("86400", 86400), ("90s", 90), ("15m", 900), ("12h", 43200), ("30d", 2592000),
    (" 2 D ", 172800), ("0", 0)])
def test_durations(text: str, seconds: int) -> None:
    assert parse_duration_s(text, "X") == seconds


@pytest.mark.parametrize("text", ["", "-5", "1.5h", "3w", "h", "1e3", "36600000d"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(ConfigError, match="^X: "):
        parse_duration_s(text, "X")


def test_namespace_ttl_rules() -> None:
    ttl = parse_namespace_ttl("*=7d, team-*=1h, team-keep-*=0, team-a=90s,,")
    assert ttl.ttl_s("team-a") == 90  # exact beats prefix
    assert ttl.ttl_s("team-b") == 3600  # the longer prefix beats "*"
    assert ttl.ttl_s("team-keep-x") is None  # 0: no default TTL, an exception to team-*
    assert ttl.ttl_s("other") == 7 * 86400  # "*" matches every namespace
    assert parse_namespace_ttl("").ttl_s("anything") is None
    assert NamespaceTTL().ttl_s("x") is None
    assert parse_namespace_ttl("a=b=1m").ttl_s("a=b") == 60  # the last = splits


@pytest.mark.parametrize("raw, message", [
    ("team", "each rule is pattern=duration"),
    ("=1h", "each rule is pattern=duration"),
    ("te*am=1h", "`\\*` may only end a pattern"),
    ("a=1h,a=2h", "'a' has two rules"),
    ("a*=1h,a*=0", "'a\\*' has two rules"),
    ("a=soon", "a duration is whole seconds"),
])
def test_bad_namespace_ttl(raw: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_namespace_ttl(raw)


def test_settings_read_the_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECALLMESH_NAMESPACE_TTL", "tmp-*=1h")
    monkeypatch.setenv("RECALLMESH_EXPIRY_SWEEP_S", "5")
    assert GatewaySettings.from_env().namespace_ttl.ttl_s("tmp-1") == 3600
    assert IndexerSettings.from_env().expiry_sweep_s == 5
    monkeypatch.setenv("RECALLMESH_NAMESPACE_TTL", "tmp")
    with pytest.raises(ConfigError, match="RECALLMESH_NAMESPACE_TTL"):
        GatewaySettings.from_env()
    monkeypatch.setenv("RECALLMESH_EXPIRY_SWEEP_S", "-1")
    with pytest.raises(ConfigError, match="RECALLMESH_EXPIRY_SWEEP_S"):
        IndexerSettings.from_env()


def test_cli_expires_in() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    assert expires_at("90s", now) == (now + timedelta(seconds=90)).isoformat()
    assert expires_at("3600", now) == (now + timedelta(hours=1)).isoformat()
    assert expires_at("2027-01-01T00:00:00Z", now) == "2027-01-01T00:00:00Z"
    assert expires_at(None) is None
    with pytest.raises(InputError, match="--expires-in"):
        expires_at("3w", now)
    with pytest.raises(InputError, match="needs a timezone"):
        expires_at("2027-01-01T00:00:00", now)
    memory = memory_from_json({"content": "x", "expires_at": "2099-01-01T00:00:00Z"}, "line 1")
    assert memory.expires_at == datetime(2099, 1, 1, tzinfo=UTC)


def ts(when: datetime) -> Timestamp:
    out = Timestamp()
    out.FromDatetime(when)
    return out


def test_expires_at_validation() -> None:
    future = datetime.now(UTC) + timedelta(hours=1)
    memory = validation.new_memory(memory_pb2.Memory(content="x", expires_at=ts(future)), "ns")
    assert memory.expires_at == future
    assert validation.new_memory(memory_pb2.Memory(content="x"), "ns").expires_at is None
    with pytest.raises(InvalidArgument, match="memory.expires_at must be in the future"):
        validation.new_memory(memory_pb2.Memory(
            content="x", expires_at=ts(datetime.now(UTC) - timedelta(seconds=1))), "ns")
    with pytest.raises(InvalidArgument, match="expires_at must be after memory.created_at"):
        validation.new_memory(memory_pb2.Memory(
            content="x", created_at=ts(future + timedelta(hours=1)), expires_at=ts(future)),
            "ns")


def test_update_names_expires_at() -> None:
    future = datetime.now(UTC) + timedelta(hours=1)
    changes = validation.memory_update(memory_pb2.Memory(expires_at=ts(future)),
                                       FieldMask(paths=["expires_at"]).paths, "ns")
    assert changes == {"expires_at": future}
    cleared = validation.memory_update(memory_pb2.Memory(), ["expires_at"], "ns")
    assert cleared == {"expires_at": None}  # named but unset: no longer expires
