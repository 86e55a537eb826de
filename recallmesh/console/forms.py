"""The console's forms as the typed client's options: the filter grammar (docs/api.md
"Filters", the same conditions as the CLI's and the MCP server's), the list order, recall's
per-request settings and a memory's editable fields. Plain functions of a mapping of form
fields to strings; a bad value raises FormError naming the field, shown beside the form."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, cast

from recallmesh.client import FilterOptions, ListOptions
from recallmesh.wire.filters import FILTER_FIELDS

ORDERS = ("created", "updated", "importance")
SORTS = ("relevance", "importance", "recency")
# form field -> filter condition; a list condition's values are comma-separated
LIST_FIELDS = {"category": "categories", "tag": "tags", "tag_all": "tags_all",
               "tag_none": "tags_none", "thread": "threads"}
TIME_FIELDS = ("created_after", "created_before", "updated_after", "updated_before", "as_of")
BOUND_FIELDS = ("importance_min", "importance_max")
# every field of the filter form, in the order the page shows them
FILTER_FORM_FIELDS = (*LIST_FIELDS, "meta", *BOUND_FIELDS, *TIME_FIELDS)
assert {*LIST_FIELDS.values(), "metadata", *BOUND_FIELDS, *TIME_FIELDS} == set(FILTER_FIELDS)


class FormError(ValueError):
    """A form value the console cannot use; str() names the field."""


def _text(form: Mapping[str, str], name: str) -> str:
    return (form.get(name) or "").strip()


def _names(raw: str) -> list[str]:
    return [part.strip() for part in raw.split(",") if part.strip()]


def parse_time(raw: str, name: str) -> datetime:
    """An ISO 8601 time; a date alone or a time without a zone is read as UTC."""
    try:
        value = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise FormError(f"{name}: not a date or time (e.g. 2026-03-01 or "
                        f"2026-03-01T09:00:00Z): {raw[:64]!r}") from None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def _fraction(raw: str, name: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise FormError(f"{name}: not a number: {raw[:32]!r}") from None
    if not 0.0 <= value <= 1.0:
        raise FormError(f"{name}: must be within 0..1, got {value}")
    return value


def metadata_conditions(raw: str) -> dict[str, list[str]]:
    """`key=value` pairs, comma- or line-separated; the same key again adds an alternative."""
    found: dict[str, list[str]] = {}
    for item in raw.replace("\n", ",").split(","):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise FormError(f"metadata: expected key=value, got {item.strip()[:64]!r}")
        found.setdefault(key.strip(), []).append(value.strip())
    return found


def filter_options(form: Mapping[str, str]) -> FilterOptions:
    """The filter conditions the form gives (empty fields give none)."""
    options: dict[str, Any] = {}
    for field, condition in LIST_FIELDS.items():
        if values := _names(_text(form, field)):
            options[condition] = values
    if meta := metadata_conditions(_text(form, "meta")):
        options["metadata"] = meta
    for name in BOUND_FIELDS:
        if raw := _text(form, name):
            options[name] = _fraction(raw, name.replace("_", " "))
    for name in TIME_FIELDS:
        if raw := _text(form, name):
            options[name] = parse_time(raw, name.replace("_", " "))
    return cast(FilterOptions, options)  # the keys are FILTER_FIELDS (checked above)


def list_options(form: Mapping[str, str]) -> ListOptions:
    """Filters plus the order and what else the list shows."""
    options: dict[str, Any] = dict(filter_options(form))
    order = _text(form, "order_by") or "created"
    if order not in ORDERS:
        raise FormError(f"order: one of {', '.join(ORDERS)}, got {order[:32]!r}")
    options["order_by"] = order
    options["ascending"] = _text(form, "ascending") == "on"
    options["include_deleted"] = _text(form, "include_deleted") == "on"
    options["include_ended"] = _text(form, "include_ended") == "on"
    return cast(ListOptions, options)


def count_options(options: ListOptions) -> ListOptions:
    """What the list counts: its filters and what it includes, without its order."""
    return cast(ListOptions, {k: v for k, v in options.items()
                              if k not in ("order_by", "ascending")})


def recall_options(form: Mapping[str, str]) -> dict[str, Any]:
    """Recall's per-request settings: k, sort, the relevance floor, the time budget, the
    fusion method; explain is always on (the page draws it)."""
    options: dict[str, Any] = dict(filter_options(form))
    options["explain"] = True
    if raw := _text(form, "k"):
        options["k"] = _integer(raw, "k", 1, 100)
    sort = _text(form, "sort_by") or "relevance"
    if sort not in SORTS:
        raise FormError(f"sort: one of {', '.join(SORTS)}, got {sort[:32]!r}")
    options["sort_by"] = sort
    if raw := _text(form, "min_score"):
        options["min_score"] = _fraction(raw, "relevance floor")
    if raw := _text(form, "budget_ms"):
        options["budget_ms"] = _integer(raw, "budget", 1, 60_000)
    if method := _text(form, "fusion"):
        options["fusion"] = {"method": method}
    return options


def context_options(form: Mapping[str, str]) -> dict[str, Any]:
    """Context's settings for the preview: the same filters and floor, and a token budget."""
    options: dict[str, Any] = dict(filter_options(form))
    if raw := _text(form, "max_tokens"):
        options["max_tokens"] = _integer(raw, "max tokens", 16, 32768)
    if raw := _text(form, "min_score"):
        options["min_score"] = _fraction(raw, "relevance floor")
    return options


def _integer(raw: str, name: str, low: int, high: int) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise FormError(f"{name}: not a whole number: {raw[:32]!r}") from None
    if not low <= value <= high:
        raise FormError(f"{name}: must be within {low}..{high}, got {value}")
    return value


# the times a memory's own form sets (the add, supersede and edit forms)
MEMORY_TIMES = ("valid_from", "valid_to", "expires_at")


def metadata_pairs(raw: str) -> dict[str, str]:
    """A memory's metadata from `key=value` pairs, one per line or comma-separated; the
    same key twice is a mistake, not an alternative."""
    pairs: dict[str, str] = {}
    for part in raw.replace("\r", "").replace("\n", ",").split(","):
        if not part.strip():
            continue
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise FormError(f"metadata: write key=value, got {part.strip()[:64]!r}")
        if key.strip() in pairs:
            raise FormError(f"metadata: the key {key.strip()[:64]!r} is given twice")
        pairs[key.strip()] = value.strip()
    return pairs


def new_memory(form: Mapping[str, str]) -> tuple[str, dict[str, Any]]:
    """The add (and supersede) form: the content and the fields it gives (empty ones none)."""
    content = (form.get("content") or "").strip()
    if not content:
        raise FormError("content: a memory needs some text")
    fields: dict[str, Any] = {}
    for name in ("category", "thread"):
        if value := _text(form, name):
            fields[name] = value
    if tags := _names(_text(form, "tags")):
        fields["tags"] = tags
    if raw := _text(form, "importance"):
        fields["importance"] = _fraction(raw, "importance")
    if meta := metadata_pairs(form.get("metadata") or ""):
        fields["metadata"] = meta
    for name in MEMORY_TIMES:
        if raw := _text(form, name):
            fields[name] = parse_time(raw, name.replace("_", " "))
    fields["sensitive"] = _text(form, "sensitive") == "on"
    fields["pinned"] = _text(form, "pinned") == "on"
    return content, fields


def update_fields(form: Mapping[str, str], current: Any) -> dict[str, Any]:
    """The fields of the edit form that differ from the memory's current values (an update
    changes only those, so an unchanged form writes no version). A time emptied is no
    longer set."""
    changed: dict[str, Any] = {}
    if "content" in form:  # absent when the page withheld a sensitive memory's text
        content = (form.get("content") or "").strip()
        if not content:
            raise FormError("content: a memory needs some text")
        if content != current.content:
            changed["content"] = content
    category = _text(form, "category")
    if category != current.category:
        changed["category"] = category
    if "tags" in form:
        tags = _names(_text(form, "tags"))
        if tuple(tags) != tuple(current.tags):
            changed["tags"] = tags
    if raw := _text(form, "importance"):
        importance = _fraction(raw, "importance")
        if abs(importance - current.importance) > 1e-9:
            changed["importance"] = importance
    sensitive = _text(form, "sensitive") == "on"
    if sensitive != current.sensitive:
        changed["sensitive"] = sensitive
    if "thread" in form and _text(form, "thread") != current.thread:
        changed["thread"] = _text(form, "thread")
    if "metadata" in form:  # absent when the page withheld a sensitive memory's metadata
        metadata = metadata_pairs(form.get("metadata") or "")
        if metadata != dict(current.metadata):
            changed["metadata"] = metadata
    for name in MEMORY_TIMES:
        if name in form:
            raw = _text(form, name)
            value = parse_time(raw, name.replace("_", " ")) if raw else None
            if value != getattr(current, name):
                changed[name] = value
    return changed
