"""Every model the suite reads comes from a make step (issue 53): tests/models.py lists them,
`make test` fetches that list, and a test asking for a model outside it fails everywhere, warm
cache or not."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from recallmesh.embedding_models.fetch import catalogue_names, main
from recallmesh.embedding_models.manifest import DEFAULT_MODEL
from tests.models import SUITE_MODELS, suite_manifest

ROOT = Path(__file__).resolve().parents[2]


def test_the_suite_models_are_catalogue_models_and_include_the_served_default() -> None:
    assert DEFAULT_MODEL in SUITE_MODELS
    assert set(SUITE_MODELS) <= set(catalogue_names())


def test_make_test_fetches_the_suite_models() -> None:
    makefile = (ROOT / "Makefile").read_text()
    test_deps = re.search(r"^test:(.*)$", makefile, re.M)
    assert test_deps and "test-models" in test_deps.group(1).split()
    recipe = re.search(r"^test-models:.*\n\t(.*)$", makefile, re.M)
    assert recipe and recipe.group(1).endswith("-m tests.models")


def test_a_model_the_suite_does_not_fetch_fails_the_test_that_asks(monkeypatch: pytest.MonkeyPatch,
                                                                   tmp_path: Path) -> None:
    monkeypatch.setenv("RECALLMESH_MODEL_CACHE", str(tmp_path))
    unlisted = next(n for n in catalogue_names() if n not in SUITE_MODELS)
    (tmp_path / unlisted).mkdir()
    (tmp_path / unlisted / "manifest.json").write_text("{}")  # a warm cache does not hide it
    with pytest.raises(pytest.fail.Exception, match="not in tests/models.py SUITE_MODELS"):
        suite_manifest(unlisted)
    with pytest.raises(pytest.fail.Exception, match="`make test-models`"):
        suite_manifest("all-MiniLM-L6-v2")


def test_fetch_names_the_model_it_cannot_fetch(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["no-such-model", "--cache", str(tmp_path)]) == 1
    assert "no-such-model" in capsys.readouterr().err
