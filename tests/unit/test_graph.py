"""The concept graph: extraction, PPR ranking (unit), and the graph leg end to end."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, cast

import numpy as np
import pytest
from psycopg_pool import AsyncConnectionPool

from recallmesh.services.graph.core import GraphRetriever
from recallmesh.services.graph.extraction import SpacyExtractor, normalise
from recallmesh.services.graph.loading import NamespaceGraph, build_graph
from recallmesh.services.graph.ranking import bfs, personalized_pagerank, rank
from recallmesh.services.graph.settings import GraphSettings
from recallmesh.v1 import memory_pb2
from recallmesh.wire.filters import Filters

# The cache tests never connect: the retriever is built over no pool.
NO_DATABASE = cast(AsyncConnectionPool, None)

NOW = datetime(2025, 1, 1, tzinfo=UTC)
WAIT = memory_pb2.IndexWait(wait=True, timeout_ms=30000)


def memory_row(i: int) -> tuple[str, float, str, list[str], datetime, None]:
    return (f"00000000-0000-4000-8000-{i:012d}", 0.5, "", [], NOW, None)


def toy_graph(
        extra_memories: int = 0) -> tuple[NamespaceGraph, list[tuple[Any, ...]]]:
    """m1 mentions svelte + frontend; m2 mentions frontend + vite (two hops from svelte);
    m3 mentions lunch and the word 'svelte' nowhere; extra memories hang off 'noise'."""
    memories: list[tuple[Any, ...]] = [memory_row(i) for i in range(1, 4 + extra_memories)]
    concepts = [(1, "svelte", None, ""), (2, "frontend", None, ""), (3, "vite", None, ""),
                (4, "lunch", None, ""), (5, "noise", None, "")]
    links = [(memories[0][0], 1, 1.0), (memories[0][0], 2, 1.0), (memories[1][0], 2, 1.0),
             (memories[1][0], 3, 1.0), (memories[2][0], 4, 1.0)]
    links += [(m[0], 5, 1.0) for m in memories[3:]]
    aliases = [("svelte", 1), ("frontend", 2), ("vite", 3), ("lunch", 4), ("noise", 5)]
    return build_graph(1, memories, links, concepts, aliases, [], [], 0.25), memories


def test_ppr_reaches_two_hops_and_ignores_unrelated() -> None:
    graph, memories = toy_graph()
    hits = rank(graph, "which frontend tool is svelte built with", (), "", 10, Filters(),
                GraphSettings())
    ids = [h.memory_id for h in hits]
    assert ids[:2] == [memories[0][0], memories[1][0]]  # direct mention, then two hops
    assert memories[2][0] not in ids  # lunch is not connected to the query's concepts
    assert hits[1].path.startswith("'frontend'") or "->" in hits[1].path
    # The two-hop memory is reached through the shared concept.
    only_svelte = rank(graph, "svelte", (), "", 10, Filters(), GraphSettings())
    assert [h.memory_id for h in only_svelte][:2] == [memories[0][0], memories[1][0]]
    assert only_svelte[1].path == "'svelte' -> memory 00000000 -> 'frontend' -> memory 00000000"


def test_seed_memories_walk_to_what_they_link_to() -> None:
    graph, memories = toy_graph()
    # No query concept: only the seed memory (m1: svelte + frontend) starts the walk.
    hits = rank(graph, "what else", (), "", 10, Filters(), GraphSettings(),
                seed_memories=[memories[0][0]])
    ids = [h.memory_id for h in hits]
    assert ids[:2] == [memories[0][0], memories[1][0]] and memories[2][0] not in ids
    assert hits[1].path == "memory 00000000 -> 'frontend' -> memory 00000000"
    unknown = "00000000-0000-4000-8000-999999999999"
    assert rank(graph, "what else", (), "", 10, Filters(), GraphSettings(),
                seed_memories=[unknown]) == []


def test_graph_cache_keeps_within_its_count_and_size_limits() -> None:
    big = np.zeros((1000, 384), dtype=np.float32)  # 1.5 MB of name vectors
    retriever = GraphRetriever(NO_DATABASE, GraphSettings(cache_namespaces=3, cache_mb=4))
    for ns in ("a", "b", "c"):
        retriever._cache[ns] = toy_graph()[0]
        retriever._evict()
    assert list(retriever._cache) == ["a", "b", "c"]
    retriever._cache["d"] = toy_graph()[0]
    retriever._evict()
    assert list(retriever._cache) == ["b", "c", "d"]  # the count limit drops the oldest
    for ns in ("e", "f", "g"):
        graph = toy_graph()[0]
        graph.concept_vectors = big
        retriever._cache[ns] = graph
        retriever._evict()
    assert list(retriever._cache) == ["f", "g"]  # 3 x 1.5 MB exceeds 4 MB: sizes count
    huge = toy_graph()[0]
    huge.concept_vectors = np.zeros((4000, 384), dtype=np.float32)  # 6 MB alone
    retriever._cache["h"] = huge
    retriever._evict()
    assert list(retriever._cache) == ["h"]  # the newest graph stays even when too large


def test_ranking_is_deterministic_and_hop_mode_agrees_on_order() -> None:
    graph, _ = toy_graph(extra_memories=20)
    first = rank(graph, "svelte noise", (), "", 10, Filters(), GraphSettings())
    for _ in range(3):
        assert rank(graph, "svelte noise", (), "", 10, Filters(), GraphSettings()) == first
    hops = rank(graph, "svelte", (), "", 10, Filters(), GraphSettings(mode="hops"))
    assert [h.score for h in hops] == sorted((h.score for h in hops), reverse=True)


def test_node_cap_is_respected() -> None:
    graph, _ = toy_graph(extra_memories=50)
    seed = graph.memories + 4  # the 'noise' concept: 50 neighbours
    nodes, _ = bfs(graph.adjacency, [seed], cap=10)
    assert len(nodes) == 10 and nodes[0] == seed
    capped = rank(graph, "noise", (), "", 100, Filters(), GraphSettings(node_cap=10))
    assert len(capped) == 9  # the seed concept plus nine memories fit under the cap


def test_ppr_is_a_distribution_and_finite() -> None:
    graph, _ = toy_graph(extra_memories=5)
    p = np.zeros(graph.adjacency.shape[0])
    p[graph.memories] = 1.0
    r = personalized_pagerank(graph.adjacency, p, 0.5, 100, 1e-12)
    assert np.all(np.isfinite(r)) and r.sum() == pytest.approx(1.0)


def test_filters_apply_to_graph_hits() -> None:
    graph, memories = toy_graph()
    graph.categories[1] = "work"
    hits = rank(graph, "svelte", (), "", 10, Filters(categories=("work",)), GraphSettings())
    assert [h.memory_id for h in hits] == [memories[1][0]]


@pytest.fixture(scope="module")
def extractor() -> SpacyExtractor:
    return SpacyExtractor()


def test_extraction_is_deterministic_and_skips_dates(extractor: SpacyExtractor) -> None:
    texts = ["Melanie works at Northwind Labs as a designer since March 2023.",
             "Maya prefers Svelte for frontend work."]
    first = extractor.extract(texts, [[], ["ui"]])
    assert extractor.extract(texts, [[], ["ui"]]) == first
    aliases = first[0].aliases
    assert {"melanie", "northwind labs", "designer"} <= aliases
    assert not any("2023" in a or "march" in a for a in aliases)
    assert ("maya", "prefer", "svelte") in {(r.src, r.rel_type, r.dst) for r in first[1].relations}
    assert "ui" in first[1].aliases  # tags are concepts
    assert normalise("  The  Svelte, framework! ") == "the svelte framework"


# --- end to end, through gRPC and the real indexer ---------------------------------------


