"""Recall filters: one validated shape, one SQL rendering, used by every leg."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from recallmesh.shared.errors import InvalidArgument
from recallmesh.v1 import memory_pb2
from recallmesh.wire.timestamps import from_proto_timestamp, to_proto_timestamp

MAX_FILTER_VALUES = 50
MAX_LABEL_CHARS = 64


@dataclass(frozen=True)
class Filters:
    categories: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    created_after: datetime | None = None  # inclusive
    created_before: datetime | None = None  # exclusive

    @property
    def empty(self) -> bool:
        return not (self.categories or self.tags or self.created_after or self.created_before)


def _labels(values: Sequence[str], what: str) -> tuple[str, ...]:
    out: list[str] = []
    if len(values) > MAX_FILTER_VALUES:
        raise InvalidArgument(f"filters.{what}: at most {MAX_FILTER_VALUES} values")
    for i, raw in enumerate(values):
        value = raw.strip()
        if not value:
            raise InvalidArgument(f"filters.{what}[{i}] is empty")
        if len(value) > MAX_LABEL_CHARS or "\x00" in value:
            raise InvalidArgument(
                f"filters.{what}[{i}] must be at most {MAX_LABEL_CHARS} characters without NUL"
            )
        if value not in out:
            out.append(value)
    return tuple(out)


def filters_from_proto(msg: memory_pb2.RecallFilters | None) -> Filters:
    """Validate a recallmesh.v1.RecallFilters message (None or unset -> no filter)."""
    if msg is None:
        return Filters()
    after = (
        from_proto_timestamp(msg.created_after, "filters.created_after")
        if msg.HasField("created_after")
        else None
    )
    before = (
        from_proto_timestamp(msg.created_before, "filters.created_before")
        if msg.HasField("created_before")
        else None
    )
    if after is not None and before is not None and after >= before:
        raise InvalidArgument("filters.created_after must be earlier than filters.created_before")
    return Filters(
        categories=_labels(msg.categories, "categories"),
        tags=_labels(msg.tags, "tags"),
        created_after=after,
        created_before=before,
    )


def filters_to_proto(filters: Filters, msg: memory_pb2.RecallFilters) -> None:
    """Fill a recallmesh.v1.RecallFilters message in place."""
    msg.categories.extend(filters.categories)
    msg.tags.extend(filters.tags)
    if filters.created_after is not None:
        to_proto_timestamp(filters.created_after, msg.created_after)
    if filters.created_before is not None:
        to_proto_timestamp(filters.created_before, msg.created_before)


def filter_sql(filters: Filters, alias: str = "m") -> tuple[str, dict[str, Any]]:
    """SQL conjuncts (each starting with AND) and their named parameters."""
    parts: list[str] = []
    params: dict[str, Any] = {}
    if filters.categories:
        parts.append(f"AND {alias}.category = ANY(%(f_categories)s)")
        params["f_categories"] = list(filters.categories)
    if filters.tags:
        parts.append(f"AND {alias}.tags && %(f_tags)s::text[]")
        params["f_tags"] = list(filters.tags)
    if filters.created_after is not None:
        parts.append(f"AND {alias}.created_at >= %(f_after)s")
        params["f_after"] = filters.created_after
    if filters.created_before is not None:
        parts.append(f"AND {alias}.created_at < %(f_before)s")
        params["f_before"] = filters.created_before
    return " ".join(parts), params
