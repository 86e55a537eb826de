"""benchmarks.quality.relabel: a result file takes the name `default` only when its configuration
asks for exactly what the deployment default serves, and nothing moves on a refusal."""

from __future__ import annotations

import json

import pytest

from benchmarks.harness.configs import CONFIGS, preset
from benchmarks.quality import relabel
from recallmesh.shared.legs import DEFAULT_LEGS

# The default with only the vector weight asked for (the route never touches that one).
VECTOR_1 = preset("default_v1", "", tuple(DEFAULT_LEGS.split(",")), weights={"vector": 1.0})


@pytest.fixture(autouse=True)
def configs(monkeypatch):
    monkeypatch.setattr(relabel, "CONFIGS", {**CONFIGS, VECTOR_1.name: VECTOR_1})


def write(folder, name, commit="c0ffee"):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.json").write_text(json.dumps(
        {"config": name, "settings": {}, "git_commit": commit, "overall": {"recall@10": 0.5}}))


def test_only_a_configuration_asking_for_the_default_weights_is_the_default(monkeypatch):
    monkeypatch.setattr(relabel, "DEFAULT_LEG_WEIGHTS", {"lexical": 1.0, "vector": 1.0})
    assert relabel.same_as_default(CONFIGS["default"])
    assert relabel.same_as_default(VECTOR_1)
    # An explicit lexical weight, even the default's, keeps the advice route from setting it
    assert not relabel.same_as_default(CONFIGS["default_lw1"])
    assert not relabel.same_as_default(CONFIGS["default_no_time"])  # time boost pinned
    assert not relabel.same_as_default(CONFIGS["default_no_intent"])  # routing pinned off
    assert not relabel.same_as_default(CONFIGS["hybrid_rrf"])
    monkeypatch.setattr(relabel, "DEFAULT_LEG_WEIGHTS", {"lexical": 0.7, "vector": 2.0})
    assert not relabel.same_as_default(VECTOR_1)


def test_relabel_swaps_the_files_and_records_what_they_ran_as(tmp_path, monkeypatch):
    monkeypatch.setattr(relabel, "DEFAULT_LEG_WEIGHTS", {"lexical": 0.7, "vector": 1.0})
    write(tmp_path / "a", "default", commit="old")
    write(tmp_path / "a", "default_v1", commit="new")
    relabel.main([str(tmp_path / "a"), "--from", "default_v1", "--displaced-as", "default_lw1"])
    now = json.loads((tmp_path / "a" / "default.json").read_text())
    before = json.loads((tmp_path / "a" / "default_lw1.json").read_text())
    assert not (tmp_path / "a" / "default_v1.json").exists()
    assert now["config"] == "default" and now["relabelled"]["ran_as"] == "default_v1"
    assert now["relabelled"]["git_commit"] == "new"
    assert before["config"] == "default_lw1" and before["relabelled"]["ran_as"] == "default"
    assert before["settings"]["weights"] == {"lexical": 1.0, "vector": 1.0}


def test_refusals_move_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(relabel, "DEFAULT_LEG_WEIGHTS", {"lexical": 0.7, "vector": 1.0})
    write(tmp_path / "a", "default")
    write(tmp_path / "a", "default_v1")
    write(tmp_path / "b", "default")  # no default_v1 here
    with pytest.raises(SystemExit):
        relabel.main([str(tmp_path / "a"), str(tmp_path / "b"), "--from", "default_v1",
                      "--displaced-as", "default_lw1"])
    with pytest.raises(SystemExit):  # an explicit lexical weight is not what the default asks
        relabel.main([str(tmp_path / "a"), "--from", "default_lw1.7", "--displaced-as",
                      "default_lw1"])
    with pytest.raises(SystemExit):  # the displaced name must not be the default itself
        relabel.main([str(tmp_path / "a"), "--from", "default_v1", "--displaced-as",
                      "default_v1"])
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["default.json",
                                                                  "default_v1.json"]
