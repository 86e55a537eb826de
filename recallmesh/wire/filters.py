"""Filters: one validated shape and one SQL rendering for every call that selects memories.

Recall and Context (inside every leg's SQL), List, Count, Export and DeleteMatching read the
same `Filters`, rendered by `filter_sql`; the graph leg, which ranks a cached graph, checks
what its cache holds in Python (`cached_only`) and asks the database for the rest.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

from recallmesh.shared.errors import InvalidArgument
from recallmesh.v1 import memory_pb2
from recallmesh.wire.real import as_real
from recallmesh.wire.timestamps import from_proto_timestamp, to_proto_timestamp

MAX_FILTER_VALUES = 50
MAX_LABEL_CHARS = 64
MAX_METADATA_FILTERS = 16
MAX_METADATA_FILTER_CHARS = 1024  # a metadata value's own limit (validation/memories.py)
MAX_THREAD_FILTER_CHARS = 128
MAX_METADATA_KEY_CHARS = 128


def metadata_key_problem(key: str) -> str:
    """Why `key` cannot be a metadata key ("" when it can). One rule for the keys a memory
    stores and the keys a filter names, so every stored key can be filtered on: 1..128
    characters, not only white space, no NUL. Keys compare exactly (never trimmed)."""
    if not key.strip():
        return "must not be empty or only white space"
    if len(key) > MAX_METADATA_KEY_CHARS:
        return f"must be at most {MAX_METADATA_KEY_CHARS} characters"
    if "\x00" in key:
        return "must not contain NUL characters"
    return ""


@dataclass(frozen=True)
class Filters:
    categories: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()  # any of
    created_after: datetime | None = None  # inclusive
    created_before: datetime | None = None  # exclusive
    tags_all: tuple[str, ...] = ()
    tags_none: tuple[str, ...] = ()
    threads: tuple[str, ...] = ()
    # (key, values): the key holds one of the values; every entry must hold
    metadata: tuple[tuple[str, tuple[str, ...]], ...] = ()
    importance_min: float | None = None  # inclusive
    importance_max: float | None = None  # inclusive
    updated_after: datetime | None = None  # inclusive
    updated_before: datetime | None = None  # exclusive
    as_of: datetime | None = None  # valid at this time

    @property
    def empty(self) -> bool:
        return self == Filters()

    @property
    def cached_only(self) -> bool:
        """Whether every condition reads only what the graph leg caches per memory
        (category, tags, created_at)."""
        return (self.threads, self.metadata, self.importance_min, self.importance_max,
                self.updated_after, self.updated_before, self.as_of) == (
                    (), (), None, None, None, None, None)


FILTER_FIELDS = tuple(f.name for f in fields(Filters))  # the conditions, by name


def _labels(values: Sequence[str], what: str, max_chars: int = MAX_LABEL_CHARS
            ) -> tuple[str, ...]:
    out: list[str] = []
    if len(values) > MAX_FILTER_VALUES:
        raise InvalidArgument(f"filters.{what}: at most {MAX_FILTER_VALUES} values")
    for i, raw in enumerate(values):
        value = raw.strip()
        if not value:
            raise InvalidArgument(f"filters.{what}[{i}] is empty")
        if len(value) > max_chars or "\x00" in value:
            raise InvalidArgument(
                f"filters.{what}[{i}] must be at most {max_chars} characters without NUL"
            )
        if value not in out:
            out.append(value)
    return tuple(out)


def _time(msg: Any, name: str) -> datetime | None:
    return from_proto_timestamp(getattr(msg, name), f"filters.{name}") if msg.HasField(
        name) else None


def _range(low: datetime | None, high: datetime | None, what: str) -> None:
    if low is not None and high is not None and low >= high:
        raise InvalidArgument(f"filters.{what}_after must be earlier than filters.{what}_before")


def _importance(msg: Any, name: str) -> float | None:
    if not msg.HasField(name):
        return None
    value = as_real(float(getattr(msg, name)))  # compared as the column's `real`
    if not 0.0 <= value <= 1.0:  # NaN fails too
        raise InvalidArgument(f"filters.{name} must be within [0, 1], got "
                              f"{getattr(msg, name)}")
    return value


def _metadata(entries: Sequence[Any]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    if len(entries) > MAX_METADATA_FILTERS:
        raise InvalidArgument(f"filters.metadata: at most {MAX_METADATA_FILTERS} entries")
    out: dict[str, tuple[str, ...]] = {}
    for i, entry in enumerate(entries):
        key = entry.key
        if problem := metadata_key_problem(key):
            raise InvalidArgument(f"filters.metadata[{i}].key {problem}")
        if key in out:
            raise InvalidArgument(f"filters.metadata[{i}]: key {key!r} is named twice")
        if not entry.values:
            raise InvalidArgument(f"filters.metadata[{i}].values: name at least one value")
        if len(entry.values) > MAX_FILTER_VALUES:
            raise InvalidArgument(
                f"filters.metadata[{i}].values: at most {MAX_FILTER_VALUES} values")
        for j, value in enumerate(entry.values):
            if len(value) > MAX_METADATA_FILTER_CHARS or "\x00" in value:
                raise InvalidArgument(
                    f"filters.metadata[{i}].values[{j}] must be at most "
                    f"{MAX_METADATA_FILTER_CHARS} characters without NUL")
        out[key] = tuple(dict.fromkeys(entry.values))  # metadata values are exact strings
    return tuple(out.items())


def filters_from_proto(msg: memory_pb2.RecallFilters | None) -> Filters:
    """Validate a recallmesh.v1.RecallFilters message (None or unset -> no filter)."""
    if msg is None:
        return Filters()
    after, before = _time(msg, "created_after"), _time(msg, "created_before")
    _range(after, before, "created")
    updated_after, updated_before = _time(msg, "updated_after"), _time(msg, "updated_before")
    _range(updated_after, updated_before, "updated")
    low, high = _importance(msg, "importance_min"), _importance(msg, "importance_max")
    if low is not None and high is not None and low > high:
        raise InvalidArgument("filters.importance_min must not be above filters.importance_max")
    tags_any, tags_all = _labels(msg.tags, "tags"), _labels(msg.tags_all, "tags_all")
    tags_none = _labels(msg.tags_none, "tags_none")
    if clash := sorted(set(tags_none) & (set(tags_any) | set(tags_all))):
        raise InvalidArgument(f"filters.tags_none also names a required tag: {clash[0]!r}")
    return Filters(
        categories=_labels(msg.categories, "categories"),
        tags=tags_any,
        created_after=after,
        created_before=before,
        tags_all=tags_all,
        tags_none=tags_none,
        threads=_labels(msg.threads, "threads", MAX_THREAD_FILTER_CHARS),
        metadata=_metadata(msg.metadata),
        importance_min=low,
        importance_max=high,
        updated_after=updated_after,
        updated_before=updated_before,
        as_of=_time(msg, "as_of"),
    )


def filters_to_proto(filters: Filters, msg: memory_pb2.RecallFilters) -> None:
    """Fill a recallmesh.v1.RecallFilters message in place."""
    msg.categories.extend(filters.categories)
    msg.tags.extend(filters.tags)
    msg.tags_all.extend(filters.tags_all)
    msg.tags_none.extend(filters.tags_none)
    msg.threads.extend(filters.threads)
    for key, values in filters.metadata:
        msg.metadata.add(key=key, values=list(values))
    if filters.importance_min is not None:
        msg.importance_min = filters.importance_min
    if filters.importance_max is not None:
        msg.importance_max = filters.importance_max
    for name in ("created_after", "created_before", "updated_after", "updated_before",
                 "as_of"):
        value = getattr(filters, name)
        if value is not None:
            to_proto_timestamp(value, getattr(msg, name))


def not_deleted(alias: str = "") -> str:
    """The condition a memory that is not deleted meets (its `deleted_at`, migration 0001),
    for the reads and writes that care for deletion alone: the indexer's and re-embedding's
    (an expired memory is theirs until the sweeper purges it). Every read that a user sees
    asks `live`. `alias`: the memories table's alias in the statement, if any."""
    return f"{alias}.deleted_at IS NULL" if alias else "deleted_at IS NULL"


def live(alias: str = "", include_deleted: bool = False) -> str:
    """The condition a readable memory meets, for every read of memories: not deleted, not
    expired (an expired memory is treated exactly like a deleted one until the indexer's
    sweeper purges it). `alias`: the memories table's alias in the statement, if any;
    `include_deleted`: deleted memories too (List and History may show them), never expired
    ones."""
    a = f"{alias}." if alias else ""
    unexpired = f"({a}expires_at IS NULL OR {a}expires_at > now())"
    return unexpired if include_deleted else f"{not_deleted(alias)} AND {unexpired}"


def filter_sql(filters: Filters, alias: str = "m") -> tuple[str, dict[str, Any]]:
    """SQL conjuncts (each starting with AND) and their named parameters.

    Each condition is one an index can serve: tags with the GIN on tags (&&, @>), metadata
    with the GIN on metadata (@>, one containment per alternative), the rest as plain
    comparisons. Importance compares as `real`, the column's type, so a bound equal to a
    stored value keeps it."""
    m = alias
    parts: list[str] = []
    params: dict[str, Any] = {}
    if filters.categories:
        parts.append(f"AND {m}.category = ANY(%(f_categories)s)")
        params["f_categories"] = list(filters.categories)
    if filters.tags:
        parts.append(f"AND {m}.tags && %(f_tags)s::text[]")
        params["f_tags"] = list(filters.tags)
    if filters.tags_all:
        parts.append(f"AND {m}.tags @> %(f_tags_all)s::text[]")
        params["f_tags_all"] = list(filters.tags_all)
    if filters.tags_none:
        parts.append(f"AND NOT ({m}.tags && %(f_tags_none)s::text[])")
        params["f_tags_none"] = list(filters.tags_none)
    if filters.threads:
        parts.append(f"AND {m}.thread = ANY(%(f_threads)s)")
        params["f_threads"] = list(filters.threads)
    single = {key: values[0] for key, values in filters.metadata if len(values) == 1}
    if single:
        parts.append(f"AND {m}.metadata @> %(f_meta)s::jsonb")
        params["f_meta"] = json.dumps(single)
    for i, (key, values) in enumerate(v for v in filters.metadata if len(v[1]) > 1):
        names = []
        for j, value in enumerate(values):
            params[f"f_meta_{i}_{j}"] = json.dumps({key: value})
            names.append(f"{m}.metadata @> %(f_meta_{i}_{j})s::jsonb")
        parts.append(f"AND ({' OR '.join(names)})")
    if filters.importance_min is not None:
        parts.append(f"AND {m}.importance >= %(f_importance_min)s::real")
        params["f_importance_min"] = filters.importance_min
    if filters.importance_max is not None:
        parts.append(f"AND {m}.importance <= %(f_importance_max)s::real")
        params["f_importance_max"] = filters.importance_max
    for name, column, op in (("created_after", "created_at", ">="),
                             ("created_before", "created_at", "<"),
                             ("updated_after", "updated_at", ">="),
                             ("updated_before", "updated_at", "<")):
        value = getattr(filters, name)
        if value is not None:
            parts.append(f"AND {m}.{column} {op} %(f_{name})s")
            params[f"f_{name}"] = value
    if filters.as_of is not None:
        parts.append(
            f"AND {m}.created_at <= %(f_as_of)s"
            f" AND ({m}.valid_from IS NULL OR {m}.valid_from <= %(f_as_of)s)"
            f" AND ({m}.valid_to IS NULL OR {m}.valid_to > %(f_as_of)s)"
            f" AND ({m}.expires_at IS NULL OR {m}.expires_at > %(f_as_of)s)")
        params["f_as_of"] = filters.as_of
    return " ".join(parts), params
