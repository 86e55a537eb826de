"""The filter grammar as one tool parameter, `filters`, shared by list_memories,
count_memories, recall and context (docs/api.md "Filters"; the client's FilterOptions); and
`Maybe`, how an optional tool parameter reads in a schema.

One model, so every tool's schema carries the same definition and a new condition is added
in one place. Unknown keys are refused: a misspelled condition must not silently widen what a
tool returns."""

from __future__ import annotations

from typing import Annotated, Any, TypeVar

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

T = TypeVar("T")


def _omit_null_default(schema: dict[str, Any]) -> None:
    if "default" in schema and schema["default"] is None:
        del schema["default"]


# An optional parameter: absent (None) means "not given". Its schema is the value's own type
# (not anyOf [type, null] with a null default), which is what a model should send; an
# explicit null is still accepted. Constraints belong inside T, e.g.
# Maybe[Annotated[list[str], Field(max_length=32)]].
Maybe = Annotated[T | SkipJsonSchema[None], Field(json_schema_extra=_omit_null_default)]

Names = Annotated[list[str], Field(max_length=50)]  # empty: no condition
Bound = Annotated[float, Field(ge=0.0, le=1.0)]
MetadataValues = Annotated[list[str], Field(min_length=1, max_length=50)]
MetadataConditions = Annotated[dict[str, str | MetadataValues], Field(max_length=64)]


class MemoryFilters(BaseModel):
    """Which memories a tool sees: every condition given must hold (AND); inside one
    condition the values are alternatives (OR) unless it says otherwise. Times are ISO 8601
    with a timezone, e.g. "2026-03-01T00:00:00Z"."""

    model_config = ConfigDict(extra="forbid", title="MemoryFilters")

    categories: Annotated[Maybe[Names], Field(
        description="Only these categories (fact, preference, decision, note)")] = None
    tags: Annotated[Maybe[Names], Field(
        description="Only memories with at least one of these tags")] = None
    tags_all: Annotated[Maybe[Names], Field(
        description="Only memories with every one of these tags")] = None
    tags_none: Annotated[Maybe[Names], Field(
        description="Only memories with none of these tags")] = None
    threads: Annotated[Maybe[Names], Field(
        description="Only memories of one of these threads (conversations)")] = None
    metadata: Annotated[Maybe[MetadataConditions], Field(
        description="Only memories whose metadata matches every entry: the key holds that "
                    "value, or one of a list of values, e.g. {\"source\": \"email\", "
                    "\"project\": [\"atlas\", \"zephyr\"]}")] = None
    importance_min: Annotated[Maybe[Bound], Field(
        description="Only importance >= this (0..1)")] = None
    importance_max: Annotated[Maybe[Bound], Field(
        description="Only importance <= this (0..1)")] = None
    created_after: Annotated[Maybe[AwareDatetime], Field(
        description="Only memories created at or after this time")] = None
    created_before: Annotated[Maybe[AwareDatetime], Field(
        description="Only memories created before this time")] = None
    updated_after: Annotated[Maybe[AwareDatetime], Field(
        description="Only memories last changed at or after this time")] = None
    updated_before: Annotated[Maybe[AwareDatetime], Field(
        description="Only memories last changed before this time")] = None
    as_of: Annotated[Maybe[AwareDatetime], Field(
        description="The memories that were current at this time (a fact superseded since "
                    "counts; one stored later does not)")] = None


FiltersArg = Annotated[Maybe[MemoryFilters], Field(
    description="Optional conditions on the memories; every one given must hold")]


def filter_options(filters: MemoryFilters | None, **shorthand: list[str] | None
                   ) -> dict[str, Any]:
    """The client's FilterOptions from `filters`, plus a shorthand top-level list (recall's
    `categories` and `tags`, kept for earlier callers). A condition given both ways is
    refused (ValueError) rather than silently picking one."""
    given = filters.model_dump(exclude_none=True) if filters is not None else {}
    options: dict[str, Any] = {name: value for name, value in given.items() if value != []}
    for name, values in shorthand.items():
        if values:
            if name in options:
                raise ValueError(f"give {name} once: at the top level or in filters, not both")
            options[name] = values
    return options
