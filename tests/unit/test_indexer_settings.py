"""The indexer's concept extractor follows the graph leg (docs/decisions/0025), and the legs
every service reads from RECALLMESH_LEGS."""

from __future__ import annotations

import pytest

from recallmesh.services.indexer.settings import IndexerSettings, concept_extractor
from recallmesh.shared.legs import DEFAULT_LEGS, leg_names
from recallmesh.shared.settings import ConfigError


def test_auto_extracts_concepts_only_for_a_graph_leg_that_is_asked() -> None:
    assert concept_extractor("auto", ["lexical", "vector"]) == "none"
    assert concept_extractor("auto", ["lexical", "vector", "graph"]) == "spacy"
    assert concept_extractor("spacy", ["lexical"]) == "spacy"  # set: as set
    assert concept_extractor("none", ["graph"]) == "none"


def test_the_indexer_reads_the_gateways_legs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RECALLMESH_CONCEPT_EXTRACTOR", raising=False)
    monkeypatch.delenv("RECALLMESH_LEGS", raising=False)
    assert IndexerSettings.from_env().concept_extractor == "none"  # the default legs
    monkeypatch.setenv("RECALLMESH_LEGS", "lexical,vector,graph")
    assert IndexerSettings.from_env().concept_extractor == "spacy"
    monkeypatch.setenv("RECALLMESH_CONCEPT_EXTRACTOR", "none")
    assert IndexerSettings.from_env().concept_extractor == "none"


def test_leg_names() -> None:
    assert leg_names(DEFAULT_LEGS) == ["lexical", "vector"]
    assert leg_names(" lexical , graph ") == ["lexical", "graph"]
    for bad in ("", " , ", "lexical,lexical"):
        with pytest.raises(ConfigError):
            leg_names(bad)
