"""benchmarks.harness.script.publish: a benchmark's report printed and written, its data as JSON."""

from __future__ import annotations

import json

from benchmarks.harness.script import publish


def test_publish_prints_and_writes_only_what_it_is_given(tmp_path, capsys):
    publish("# report\n", tmp_path / "r.md", tmp_path / "r.json", {"a": 1}, end="")
    assert capsys.readouterr().out == "# report\n"
    assert (tmp_path / "r.md").read_text() == "# report\n"
    assert json.loads((tmp_path / "r.json").read_text()) == {"a": 1}
    publish("only printed")
    assert capsys.readouterr().out == "only printed\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json", "r.md"]
