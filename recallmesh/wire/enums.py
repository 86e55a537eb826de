"""The contract's enums and the names the Python side uses for them, each mapping once:
name -> value for what is sent, value -> name for what is read."""

from __future__ import annotations

from typing import Any, TypeVar

from recallmesh.policy import METHODS, SORT_ORDERS, FusionMethod, SortBy
from recallmesh.shared.errors import InvalidArgument
from recallmesh.shared.legs import LEG_STATES, LegState
from recallmesh.v1 import fusion_pb2, memory_pb2

E = TypeVar("E", bound=int)


def _by_name(enum: type[E], prefix: str, lower: bool) -> dict[str, E]:
    """Every value of a proto enum but UNSPECIFIED, by its name without the prefix."""
    # The stubs declare the enum as an int subclass; at run time it is protobuf's
    # EnumTypeWrapper, whose items() the (untyped) protobuf package leaves as Any.
    wrapper: Any = enum
    names: dict[str, E] = {}
    for name, value in wrapper.items():
        if value:
            short = name.removeprefix(prefix)
            names[short.lower() if lower else short] = value
    return names


def _named(values: dict[str, E], names: tuple[str, ...], enum: str) -> dict[Any, E]:
    """`values` keyed by the Python side's names for them, which must be the enum's own."""
    if set(values) != set(names):
        raise ImportError(f"recallmesh.v1.{enum} names {sorted(values)}, the Python side "
                          f"{sorted(names)}: regenerate the stubs or mend the names "
                          "(recallmesh.policy, recallmesh.shared.legs)")
    return values


# recallmesh.v1.SortBy: "relevance", "importance", "recency" (UNSPECIFIED reads as relevance).
SORT_BY_VALUES: dict[SortBy, memory_pb2.SortBy] = _named(
    _by_name(memory_pb2.SortBy, "SORT_BY_", lower=True), SORT_ORDERS, "SortBy")
SORT_BY_NAMES: dict[int, SortBy] = {value: name for name, value in SORT_BY_VALUES.items()}
SORT_BY_NAMES[memory_pb2.SORT_BY_UNSPECIFIED] = "relevance"
# recallmesh.v1.RelationType: "supersedes", "derived_from", "references", "about".
RELATION_TYPE_VALUES = _by_name(memory_pb2.RelationType, "RELATION_TYPE_", lower=True)
RELATION_TYPE_NAMES = {value: name for name, value in RELATION_TYPE_VALUES.items()}
# recallmesh.v1.LegState: "OK", "TIMEOUT", "ERROR", "SKIPPED" (as RecallResponse reports them).
LEG_STATE_VALUES: dict[LegState, memory_pb2.LegState] = _named(
    _by_name(memory_pb2.LegState, "LEG_STATE_", lower=False), LEG_STATES, "LegState")
LEG_STATE_NAMES = {memory_pb2.LEG_STATE_UNSPECIFIED: "UNSPECIFIED"} | {
    value: name for name, value in LEG_STATE_VALUES.items()}
# recallmesh.v1.FusionMethod: "rrf", "cc", "cc_bounded", "calibrated" (UNSPECIFIED reads rrf).
FUSION_METHOD_VALUES: dict[FusionMethod, fusion_pb2.FusionMethod] = _named(
    _by_name(fusion_pb2.FusionMethod, "FUSION_METHOD_", lower=True), METHODS, "FusionMethod")
FUSION_METHOD_NAMES: dict[int, FusionMethod] = {
    value: name for name, value in FUSION_METHOD_VALUES.items()}
FUSION_METHOD_NAMES[fusion_pb2.FUSION_METHOD_UNSPECIFIED] = "rrf"


def sort_by(value: memory_pb2.SortBy) -> SortBy:
    """A SortBy value read off the wire, by name (InvalidArgument when unknown)."""
    try:
        return SORT_BY_NAMES[value]
    except KeyError:
        raise InvalidArgument(f"unknown sort_by value {value}") from None
