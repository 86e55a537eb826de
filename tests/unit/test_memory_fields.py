"""The table of a Memory's fields (recallmesh/wire/memory_fields.py) is complete, and every
shape that carries a memory agrees with it: a field added to the proto and not to the table,
or to the table and not to a shape, fails here."""

from __future__ import annotations

from dataclasses import fields
from datetime import UTC, datetime

import pytest

from recallmesh.cli.output import print_memory
from recallmesh.client import types as client_types
from recallmesh.client._wire import MemoryFields, UpdateFields
from recallmesh.mcp_server.results import memory_out
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


def a_memory_with_every_field_set() -> tuple[client_types.Memory, dict[str, str]]:
    """A memory whose every returned field holds a value of its own, and that value as text."""
    values = {
        "id": "0b8f3c52-0000-4000-8000-000000000001", "namespace": "ns-of-the-walk",
        "content": "content-of-the-walk", "category": "category-of-the-walk",
        "tags": ("tag-of-the-walk",), "importance": 0.37, "sensitive": True,
        "created_at": datetime(2031, 1, 2, 3, 4, 5, tzinfo=UTC),
        "updated_at": datetime(2032, 1, 2, 3, 4, 5, tzinfo=UTC),
        "valid_from": datetime(2033, 1, 2, 3, 4, 5, tzinfo=UTC),
        "valid_to": datetime(2034, 1, 2, 3, 4, 5, tzinfo=UTC),
        "metadata": {"key-of-the-walk": "value-of-the-walk"},
        "expires_at": datetime(2035, 1, 2, 3, 4, 5, tzinfo=UTC),
        "thread": "thread-of-the-walk",
        "superseded_by": "0b8f3c52-0000-4000-8000-000000000002",
        "deleted_at": datetime(2036, 1, 2, 3, 4, 5, tzinfo=UTC), "pinned": True,
    }
    assert set(values) == {f.name for f in RETURNED}  # a new field: give it a value here
    as_text = {name: (str(v.year) if isinstance(v, datetime) else
                      "value-of-the-walk" if isinstance(v, dict) else
                      v[0] if isinstance(v, tuple) else
                      str(v).lower() if isinstance(v, bool) else str(v))
               for name, v in values.items()}
    return client_types.Memory(**values), as_text  # type: ignore[arg-type]


# Returned fields a presentation leaves out on purpose, and why.
NOT_IN_A_TOOL_RESULT = {"namespace"}  # every MCP tool works in the server's one namespace


def test_every_presentation_shows_every_returned_field(capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    """The presentations written by hand (docs/reference/layout.md's walk, step 7): the CLI's
    `get` (recallmesh/cli/output.py print_memory) and the MCP tools' result
    (recallmesh/mcp_server/results.py memory_out). The console's memory page
    (recallmesh/console/templates/memory.html) is held to the same in
    tests/integration/test_console_pages.py."""
    memory, as_text = a_memory_with_every_field_set()
    print_memory(memory)
    printed = capsys.readouterr().out
    lines = {line.split(None, 1)[0]: line for line in printed.splitlines() if line.strip()}
    for name, text in as_text.items():
        if name != "content":  # the content: the lines after "content:"
            assert name in lines and text in lines[name], (name, printed)
    assert printed.rstrip().endswith(memory.content)
    out = memory_out(memory, now=datetime(2040, 1, 1, tzinfo=UTC)).model_dump()
    for name in set(as_text) - NOT_IN_A_TOOL_RESULT:
        value = getattr(memory, name)
        expected = list(value) if isinstance(value, tuple) else value
        assert out[name] == expected, name
