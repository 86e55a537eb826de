"""Unit: the CLI's pure parts: filter options -> the client's FilterOptions, update / store
options -> the fields sent, the plain JSONL format's id / relations / pinned, what tables and
JSON print, and docs/cli.md naming every command the parser has (its examples parse)."""

from __future__ import annotations

import argparse
import io
import json
import re
import shlex
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import pytest

from recallmesh.cli import build_parser, output, recall
from recallmesh.cli.common import memory_ids
from recallmesh.cli.filters import filter_options, list_options
from recallmesh.cli.memories import store_fields, update_fields
from recallmesh.client import Memory, Relation, jsonl
from recallmesh.client._wire import RecallOptions, list_request, recall_request
from recallmesh.client.jsonl import InputError, memory_from_json, read_json_lines

ROOT = Path(__file__).resolve().parents[2]
ID = "0b7e8f4e-51c2-4f0e-9a53-4c1b4a1f1c9e"


def parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(list(argv))


def test_every_filter_option_becomes_its_filter() -> None:
    args = parse("list", "-n", "ns", "--category", "fact", "--category", "note", "--tag", "a",
                 "--tag-all", "b", "--tag-all", "c", "--tag-none", "d", "--thread", "t1",
                 "--meta", "src=chat", "--meta", "src=email", "--meta", "lang=en",
                 "--meta", "src=chat", "--importance-min", "0.2", "--importance-max", "0.8",
                 "--created-after", "2026-01-01T00:00:00Z",
                 "--created-before", "2026-02-01T01:00:00+01:00",
                 "--updated-after", "2026-01-02T00:00:00Z",
                 "--updated-before", "2026-01-03T00:00:00Z", "--as-of", "2026-01-15T12:00:00Z")
    assert filter_options(args) == {
        "categories": ["fact", "note"], "tags": ["a"], "tags_all": ["b", "c"],
        "tags_none": ["d"], "threads": ["t1"],
        # the same key again: membership; a value given twice counts once
        "metadata": {"src": ["chat", "email"], "lang": "en"},
        "importance_min": 0.2, "importance_max": 0.8,
        "created_after": datetime(2026, 1, 1, tzinfo=UTC),
        "created_before": datetime(2026, 2, 1, tzinfo=UTC),
        "updated_after": datetime(2026, 1, 2, tzinfo=UTC),
        "updated_before": datetime(2026, 1, 3, tzinfo=UTC),
        "as_of": datetime(2026, 1, 15, 12, tzinfo=UTC),
    }
    assert filter_options(parse("list", "-n", "ns")) == {}
    assert filter_options(parse("list", "-n", "ns", "--meta", "note=a=b")) == {
        "metadata": {"note": "a=b"}}  # the first = splits


def test_list_options_and_the_request_they_make() -> None:
    args = parse("list", "-n", "ns", "--order", "importance", "--ascending", "--include-ended",
                 "--include-deleted", "--tag", "x", "--meta", "k=v")
    options = list_options(args)
    assert options == {"tags": ["x"], "metadata": {"k": "v"}, "order_by": "importance",
                       "ascending": True, "include_deleted": True, "include_ended": True}
    request = list_request("ns", 50, "", options)
    assert (request.ascending, request.include_ended, list(request.filters.tags)) == (
        True, True, ["x"])
    assert [(m.key, list(m.values)) for m in request.filters.metadata] == [("k", ["v"])]
    assert list_options(parse("count", "-n", "ns")) == {}


@pytest.mark.parametrize("argv, message", [
    (["--meta", "novalue"], "--meta 'novalue': expected KEY=VALUE"),
    (["--meta", "=v"], "expected KEY=VALUE"),
    (["--importance-min", "1.5"], "--importance-min must be within [0, 1]"),
    (["--importance-min", "0.8", "--importance-max", "0.2"], "is above --importance-max"),
    (["--created-after", "2026-01-01"], "list: --created-after needs a timezone"),
    (["--as-of", "yesterday"], "--as-of must be an ISO 8601 time"),
])
def test_bad_filters_are_input_errors(argv: list[str], message: str) -> None:
    with pytest.raises(InputError, match=re.escape(message)):
        filter_options(parse("list", "-n", "ns", *argv))


@pytest.mark.parametrize("command", ["recall", "context", "list", "count", "export",
                                     "delete-matching"])
def test_the_filter_options_are_shared(command: str) -> None:
    positional = ["a query"] if command in ("recall", "context") else []
    args = parse(command, "-n", "ns", *positional, "--tag-none", "x", "--as-of",
                 "2026-01-01T00:00:00Z", "--json")
    assert filter_options(args) == {"tags_none": ["x"],
                                    "as_of": datetime(2026, 1, 1, tzinfo=UTC)}
    assert args.json


def test_recall_options_reach_the_request() -> None:
    args = parse("recall", "-n", "ns", "q", "--set", "method=rrf", "--set", "skip_legs=vector",
                 "--thread", "t", "--meta", "k=v")
    fusion = recall._fusion(args.set)
    assert fusion is not None
    # the CLI passes its options as keywords (client.recall(**options)): a dict, read as
    # the RecallOptions it is
    options = cast(RecallOptions, {**filter_options(args), "fusion": fusion})
    request = recall_request("ns", "q", options)
    assert (request.fusion.method, list(request.fusion.skip_legs)) == ("rrf", ["vector"])
    assert list(request.filters.threads) == ["t"]
    with pytest.raises(InputError, match="unknown setting 'colour'"):
        recall._fusion(["colour=red"])


def test_update_sends_only_the_fields_given() -> None:
    def fields(*argv: str) -> dict[str, Any]:
        return update_fields(parse("update", "-n", "ns", ID, *argv))

    assert fields("--content", "new text") == {"content": "new text"}
    assert fields("--tag", "a", "--tag", "b", "--tag", "a", "--importance", "0.3",
                  "--no-sensitive", "--unpin") == {
        "tags": ["a", "b"], "importance": 0.3, "sensitive": False, "pinned": False}
    assert fields("--no-tags", "--no-metadata", "--no-expiry", "--pin", "--sensitive") == {
        "tags": [], "metadata": {}, "expires_at": None, "pinned": True, "sensitive": True}
    assert fields("--metadata", "a=1", "--metadata", "b=", "--thread", "", "--category",
                  "fact", "--valid-from", "2026-01-01T00:00:00Z",
                  "--expires-at", "2030-01-01T00:00:00Z") == {
        "category": "fact", "thread": "", "metadata": {"a": "1", "b": ""},
        "valid_from": datetime(2026, 1, 1, tzinfo=UTC),
        "expires_at": datetime(2030, 1, 1, tzinfo=UTC)}
    with pytest.raises(InputError, match="nothing to change"):
        fields()
    with pytest.raises(InputError, match="--content must not be blank"):
        fields("--content", "  ")
    with pytest.raises(InputError, match="key 'a' given twice"):
        fields("--metadata", "a=1", "--metadata", "a=2")
    with pytest.raises(InputError, match="update: --valid-to needs a timezone"):
        fields("--valid-to", "2026-01-01T00:00:00")
    for clash in (["--pin", "--unpin"], ["--tag", "a", "--no-tags"],
                  ["--expires-at", "2030-01-01T00:00:00Z", "--no-expiry"],
                  ["--metadata", "a=1", "--no-metadata"]):
        with pytest.raises(SystemExit):  # argparse: not allowed with (status 2)
            parse("update", "-n", "ns", ID, *clash)


def test_store_options() -> None:
    args = parse("store", "-n", "ns", "text", "--tags", "a,b", "--tag", "c", "--tag", "a",
                 "--metadata", "src=chat", "--supersedes", ID.upper(), "--pin", "--wait")
    fields = store_fields(args)
    assert fields["tags"] == ["a", "b", "c"] and fields["metadata"] == {"src": "chat"}
    assert fields["supersedes"] == [ID] and fields["pinned"] and args.wait
    with pytest.raises(InputError, match="--supersedes: not a memory id"):
        store_fields(parse("store", "-n", "ns", "text", "--supersedes", "42"))
    with pytest.raises(InputError, match="--importance must be within"):
        store_fields(parse("store", "-n", "ns", "text", "--importance", "3"))


def test_the_plain_format_takes_id_relations_and_pinned() -> None:
    memory = memory_from_json({
        "content": "c", "id": ID.upper(), "pinned": True,
        "relations": [{"type": "supersedes", "target_id": ID},
                      {"type": "about", "target_id": ID}]}, "f:1")
    assert memory.id == ID and memory.pinned
    assert memory.relations == (Relation("supersedes", ID), Relation("about", ID))
    plain = memory_from_json({"content": "c"}, "f:1")
    assert (plain.id, plain.pinned, plain.relations) == ("", False, ())


@pytest.mark.parametrize("record, message", [
    ({"content": "c", "id": "x"}, "f:1: id: not a memory id"),
    ({"content": "c", "id": 7}, "id has the wrong type"),
    ({"content": "c", "pinned": "yes"}, "pinned has the wrong type"),
    ({"content": "c", "relations": {"type": "about"}}, "relations has the wrong type"),
    ({"content": "c", "relations": [{"type": "likes", "target_id": ID}]},
     "relations[0]: type must be one of supersedes"),
    ({"content": "c", "relations": [{"type": "about"}]}, "relations[0] must be an object"),
    ({"content": "c", "relations": [{"type": "about", "target_id": "nope"}]},
     "relations[0].target_id: not a memory id"),
    ({"content": "c", "metadata": {"n": 1}}, "metadata values must be strings"),
])
def test_bad_plain_records_name_the_line(record: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError, match=re.escape(message)):
        memory_from_json(record, "f:1")


def test_an_export_is_told_apart_from_plain_memories(tmp_path: Path) -> None:
    exported = tmp_path / "export.jsonl"
    exported.write_text(json.dumps({"memory": {"id": ID, "content": "c"}}) + "\n\n"
                        + json.dumps({"content": "plain"}) + "\n")
    lines = read_json_lines(exported)
    assert jsonl.is_export(lines) and not jsonl.is_export([(1, {"content": "c"})])
    with pytest.raises(InputError, match=r"export.jsonl:3: not an exported record"):
        jsonl.exported_records(lines, str(exported))
    exported.write_text(json.dumps({"memory": {"id": ID, "colour": "red"}}) + "\n")
    with pytest.raises(InputError, match=r"export.jsonl:1: not an exported record: .*colour"):
        jsonl.exported_records(read_json_lines(exported), str(exported))
    exported.write_text(json.dumps({"memory": {"content": "no id"}}) + "\n")
    with pytest.raises(InputError, match="export.jsonl:1: the record's memory has no id"):
        jsonl.exported_records(read_json_lines(exported), str(exported))


def test_export_lines_are_stable() -> None:
    a = {"memory": {"id": ID, "metadata": {"z": "1", "a": "2"}},
         "versions": [{"memory": {"metadata": {"y": "1", "b": "2"}}}]}
    b = {"memory": {"id": ID, "metadata": {"a": "2", "z": "1"}},
         "versions": [{"memory": {"metadata": {"b": "2", "y": "1"}}}]}
    assert jsonl.export_line(a) == jsonl.export_line(b)
    assert jsonl.export_line(a).endswith("}\n") and jsonl.export_line(a).count("\n") == 1


def test_tables_cut_content_and_json_prints_iso_times() -> None:
    text = "word " * 10_000 + "\n\nend"
    assert len(output.short(text)) == output.TABLE_CONTENT_CHARS
    assert output.short(text).endswith("…")
    assert output.short(" two\n lines ") == "two lines"
    memory = Memory(ID, "ns", "x" * 32 * 1024, tags=("a",), pinned=True,
                    created_at=datetime(2026, 1, 31, 9, tzinfo=UTC))
    assert str(output.content_cell(memory)).startswith("[pinned] xxx")
    assert len(str(output.content_cell(memory))) < 220
    as_json = output.jsonable(memory)
    assert as_json["created_at"] == "2026-01-31T09:00:00Z" and as_json["tags"] == ["a"]
    assert as_json["valid_to"] is None
    json.dumps(as_json)


def test_output_that_is_not_a_terminal_is_never_wrapped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdout", io.StringIO())
    console = output._console()
    assert console.width == output.NOT_A_TERMINAL_WIDTH and console.soft_wrap
    console.print("word " * 100)
    assert isinstance(console.file, io.StringIO)
    assert console.file.getvalue().count("\n") == 1


def test_a_32_kib_memory_is_a_few_table_lines(monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(output, "console", output._console())
    memory = Memory(ID, "ns", "lorem ipsum " * 2800)
    output.console.print(output.memory_table([memory], "1 memory"))
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 6  # title, rules, header, the row
    (row,) = [line for line in lines if ID in line]
    assert "lorem ipsum" in row and "…" in row


def test_a_narrow_terminal_drops_columns_but_never_cuts_an_id(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from rich.console import Console

    monkeypatch.setattr(output, "console", Console(width=80, file=io.StringIO()))
    memories = [Memory(ID, "ns", "lorem ipsum " * 30, category="preference", tags=("a", "b"),
                       created_at=datetime(2026, 1, 31, tzinfo=UTC))]
    output.console.print(output.memory_table(memories, "1 memory"))
    assert isinstance(output.console.file, io.StringIO)
    lines = output.console.file.getvalue().splitlines()
    assert all(len(line) <= 80 for line in lines)
    (row,) = [line for line in lines if ID in line]  # whole, on one line
    assert "lorem" in row and "preference" not in "".join(lines)  # dropped, not squeezed
    assert output.fitting_columns(0, {"category": ["preference"]}) == []  # no room at 80
    monkeypatch.setattr(output, "console", Console(width=160, file=io.StringIO()))
    assert output.fitting_columns(0, {"category": ["preference"], "created": ["x" * 20],
                                   "importance": ["0.50"], "tags": ["a, b"]}) == [
        "category", "created", "importance", "tags"]


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def summary() -> str:
    """docs/cli.md's command summary: its first fenced block."""
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    found = re.search(r"^```\n(.*?)^```", text, re.S | re.M)
    assert found is not None
    return found.group(1)


def test_the_docs_summary_names_every_command() -> None:
    lines = summary()
    missing = []
    for name, sub in subcommands(build_parser()).items():
        if not re.search(rf"^recallmesh {re.escape(name)}\b", lines, re.M):
            missing.append(name)
        nested = [a for a in sub._actions if isinstance(a, argparse._SubParsersAction)]
        for inner in nested[0].choices if nested else ():
            if not re.search(rf"^recallmesh {name} .*\b{inner}\b", lines, re.M):
                missing.append(f"{name} {inner}")
    assert not missing, f"docs/cli.md's summary does not list: {missing}"
    assert "--purge" in lines and "--json" in lines


def shell_commands() -> list[tuple[str, list[str]]]:
    """Every `recallmesh ...` command line in docs/cli.md's sh blocks, as argv."""
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    found = []
    for block in re.findall(r"^```(?:sh|bash)\n(.*?)^```", text, re.S | re.M):
        for line in block.replace("\\\n", " ").splitlines():
            if line.lstrip().startswith("#"):
                continue
            for match in re.finditer(r"recallmesh ([^|;)&#>]+)", line):
                command = re.sub(r'"?\$\{?\w+\}?"?', ID, match.group(1))
                found.append((line.strip(), shlex.split(command)))
    return found


def test_the_docs_examples_parse() -> None:
    commands = shell_commands()
    assert len(commands) >= 20
    for line, argv in commands:
        try:
            build_parser().parse_args(argv)
        except SystemExit:
            pytest.fail(f"docs/cli.md: {line!r} does not parse")


def test_ids_are_canonical_uuids() -> None:
    assert memory_ids([ID.upper()]) == [ID]
    with pytest.raises(InputError, match="not a memory id"):
        memory_ids([str(uuid.uuid4())[:-1]])
