"""google.protobuf.Timestamp <-> timezone-aware datetime, with range checks."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from google.protobuf import timestamp_pb2

from recallmesh.shared.errors import InvalidArgument

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# Postgres timestamptz and Python datetime both cover years 1..9999.
_MIN_SECONDS = int((datetime(1, 1, 1, tzinfo=UTC) - _EPOCH).total_seconds())
_MAX_SECONDS = int((datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC) - _EPOCH).total_seconds())


def from_proto_timestamp(ts: timestamp_pb2.Timestamp, field: str) -> datetime:
    if not (_MIN_SECONDS <= ts.seconds <= _MAX_SECONDS) or not (0 <= ts.nanos < 1_000_000_000):
        raise InvalidArgument(f"{field} is outside the supported range (years 1..9999)")
    return _EPOCH + timedelta(seconds=ts.seconds, microseconds=ts.nanos // 1000)


def optional_datetime(msg: Any, name: str) -> datetime | None:
    """`msg.<name>` (a Timestamp field) as a UTC datetime; None when the field is unset."""
    return from_proto_timestamp(getattr(msg, name), name) if msg.HasField(name) else None


def to_proto_timestamp(value: datetime, ts: timestamp_pb2.Timestamp) -> None:
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    delta = value - _EPOCH
    seconds = delta.days * 86400 + delta.seconds
    ts.seconds = seconds
    ts.nanos = delta.microseconds * 1000
