"""The table of a Memory's fields (recallmesh/wire/memory_fields.py) is complete, and every
shape that carries a memory agrees with it: a field added to the proto and not to the table,
or to the table and not to a shape, fails here."""

from __future__ import annotations

from dataclasses import fields

from recallmesh.client import types as client_types
from recallmesh.client._wire import MemoryFields, UpdateFields
from recallmesh.v1 import memory_pb2
from recallmesh.wire.memory_fields import (
    COLUMNS,
    FIELDS,
    RETURNED,
    STORE_FIELDS,
    STORED,
    UPDATABLE,
    NewMemory,
    SetBy,
    StoredMemory,
)


def names(cls: type) -> set[str]:
    return {f.name for f in fields(cls)}


def test_every_field_of_the_proto_memory_is_in_the_table_and_nothing_else() -> None:
    assert [f.name for f in FIELDS] == [f.name for f in memory_pb2.Memory.DESCRIPTOR.fields]


def test_the_server_and_client_shapes_hold_the_tables_fields() -> None:
    assert names(StoredMemory) == {f.name for f in RETURNED}
    assert names(client_types.Memory) == {f.name for f in RETURNED}
    assert names(NewMemory) == set(STORE_FIELDS)
    assert names(client_types.NewMemory) == set(STORE_FIELDS)


def test_the_clients_typed_arguments_are_what_a_client_may_set() -> None:
    assert set(UpdateFields.__annotations__) == set(UPDATABLE)
    # `supersedes` is the client's shorthand for SUPERSEDES relations; content is positional
    assert set(MemoryFields.__annotations__) == (set(STORE_FIELDS) - {"content"}) | {"supersedes"}


def test_the_select_list_reads_every_stored_field_in_the_tables_order() -> None:
    assert [c.strip() for c in COLUMNS.split(",")] == [
        "id::text" if f.name == "id" else f.column for f in STORED]
    assert {f.name for f in STORED} == {f.name for f in RETURNED} - {"superseded_by"}


def test_what_a_client_may_change_is_what_a_version_keeps() -> None:
    assert UPDATABLE == tuple(f.name for f in FIELDS if f.set_by is SetBy.CLIENT)
    assert "id" not in UPDATABLE and "created_at" not in UPDATABLE
