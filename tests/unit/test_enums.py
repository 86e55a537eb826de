"""The contract's enums and the Python side's names for them agree, or recallmesh.wire.enums
refuses to import (a regenerated stub with a new value must not be read as another)."""

from __future__ import annotations

from typing import Any

import pytest

from recallmesh.policy import METHODS, SORT_ORDERS
from recallmesh.shared.legs import LEG_STATES
from recallmesh.v1 import fusion_pb2, memory_pb2
from recallmesh.wire import enums


@pytest.mark.parametrize(("enum", "prefix", "lower", "names"), [
    (memory_pb2.LegState, "LEG_STATE_", False, LEG_STATES),
    (memory_pb2.SortBy, "SORT_BY_", True, SORT_ORDERS),
    (fusion_pb2.FusionMethod, "FUSION_METHOD_", True, METHODS),
])
def test_each_literal_names_every_value_of_its_proto_enum(
        enum: Any, prefix: str, lower: bool, names: tuple[str, ...]) -> None:
    assert set(enums._by_name(enum, prefix, lower)) == set(names)


def test_a_name_the_protos_lack_or_add_refuses_to_import() -> None:
    values = enums._by_name(memory_pb2.LegState, "LEG_STATE_", lower=False)
    with pytest.raises(ImportError, match="LegState names"):
        enums._named(values, (*LEG_STATES, "PARTIAL"), "LegState")
    with pytest.raises(ImportError, match="regenerate the stubs"):
        enums._named(values, LEG_STATES[:-1], "LegState")


def test_leg_states_go_out_and_come_back_by_name() -> None:
    for state in LEG_STATES:
        assert enums.LEG_STATE_NAMES[enums.LEG_STATE_VALUES[state]] == state
