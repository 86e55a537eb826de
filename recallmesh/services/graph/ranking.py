"""Ranking a namespace's graph for one search: seeds, the node cap, Personalized PageRank.

A search
  1. seeds concepts from the query: every 1..4-word span of the query that is a
     known alias (weight 1), plus the concepts whose name embeddings are nearest
     the query vector (weight = cosine, above `seed_min_similarity`); and any
     memories the caller names (weight 1: the gateway's second stage seeds the
     other legs' best hits, so the walk reaches what they link to);
  2. keeps at most `node_cap` nodes, nearest the seeds first (breadth-first);
  3. scores nodes by Personalized PageRank (restart to the seeds with
     probability 1 - damping; power iteration to `tolerance` or `max_iterations`)
     or, in "hops" mode, by hop-decay from the seeds;
  4. returns the best memories (score, then id: deterministic) with the path
     that reached each (seed concept -> ... -> memory).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from prometheus_client import Histogram

from recallmesh.services.graph.extraction import normalise
from recallmesh.services.graph.loading import NamespaceGraph
from recallmesh.services.graph.settings import GraphSettings
from recallmesh.wire.filters import Filters

MAX_SEED_WORDS = 4

GRAPH_SEEDS = Histogram(
    "recallmesh_graph_seed_concepts",
    "Seed nodes per search: query concepts plus seed memories (0: the leg returns nothing).",
    buckets=(0, 1, 2, 3, 5, 8, 13, 21),
)
_WORDS = re.compile(r"[\w'-]+")


@dataclass(frozen=True)
class GraphHit:
    memory_id: str
    score: float
    importance: float
    path: str


def query_seeds(graph: NamespaceGraph, query: str, vector: Sequence[float], model: str,
                settings: GraphSettings, seed_memories: Sequence[str] = ()) -> dict[int, float]:
    """Seed nodes -> personalisation weight: the query's concepts, and the named memories
    the graph holds (others are ignored: deleted, sensitive or without concepts)."""
    seeds: dict[int, float] = {}
    for memory_id in seed_memories:
        node = graph.memory_index.get(memory_id)
        if node is not None:
            seeds[node] = 1.0
    words = [normalise(w) for w in _WORDS.findall(query)]
    words = [w for w in words if w]
    for size in range(1, MAX_SEED_WORDS + 1):
        for i in range(len(words) - size + 1):
            span = " ".join(words[i : i + size])
            for form in (span, span[:-1] if span.endswith("s") else None):
                concept = graph.alias_to_concept.get(form) if form else None
                if concept is not None:
                    seeds[graph.memories + concept] = 1.0
    if len(vector) and graph.concept_vectors.shape[1] == len(vector):
        q = np.asarray(vector, dtype=np.float32)
        norm = float(np.linalg.norm(q))
        if norm > 0:
            sims = graph.concept_vectors @ (q / norm)
            usable = np.asarray([cm == model for cm in graph.concept_models], dtype=bool)
            sims = np.where(usable, sims, -1.0)
            top = np.argsort(-sims, kind="stable")[: settings.seed_top]
            for concept in top:
                if sims[concept] >= settings.seed_min_similarity:
                    node = graph.memories + int(concept)
                    seeds[node] = max(seeds.get(node, 0.0), float(sims[concept]))
    return seeds


def bfs(adjacency: sp.csr_matrix, seeds: Sequence[int], cap: int) -> tuple[np.ndarray,
                                                                            np.ndarray]:
    """Nodes reachable from the seeds in breadth-first order (at most `cap`), and each
    node's predecessor on a shortest path (-1 for seeds and unreached nodes)."""
    n = adjacency.shape[0]
    pred = np.full(n, -1, dtype=np.int64)
    seen = np.zeros(n, dtype=bool)
    frontier = np.unique(np.asarray(list(seeds), dtype=np.int64))
    seen[frontier] = True
    order = [frontier]
    total = len(frontier)
    while len(frontier) and total < cap:
        step = adjacency[frontier].tocoo()  # rows follow the (sorted) frontier
        fresh = ~seen[step.col]
        cols, rows = step.col[fresh], step.row[fresh]
        reached = np.zeros(n, dtype=bool)  # a mask, not a sort: linear in the edges
        reached[cols] = True
        new = np.flatnonzero(reached)[: max(cap - total, 0)]
        # the lowest frontier node reaching a node is its predecessor (deterministic)
        lowest = np.full(n, n, dtype=np.int64)
        np.minimum.at(lowest, cols, frontier[rows])
        pred[new] = lowest[new]
        seen[new] = True
        order.append(new)
        total += len(new)
        frontier = new
    return np.concatenate(order), pred


def personalized_pagerank(adjacency: sp.csr_matrix, personalisation: np.ndarray,
                          damping: float, max_iterations: int, tolerance: float) -> np.ndarray:
    """r = (1 - d) p + d P^T r with P the row-normalised adjacency; dangling mass restarts.

    The adjacency is symmetric, so P^T r = A (r / degree): no transposed matrix to build."""
    degree = np.asarray(adjacency.sum(axis=1)).ravel()
    inv = np.divide(1.0, degree, out=np.zeros_like(degree), where=degree > 0)
    p: np.ndarray = personalisation / personalisation.sum()
    r = p.copy()
    dangling = degree == 0
    for _ in range(max_iterations):
        nxt: np.ndarray = (damping * (adjacency @ (r * inv) + r[dangling].sum() * p)
                           + (1 - damping) * p)
        if np.abs(nxt - r).sum() < tolerance:
            return nxt
        r = nxt
    return r


def _passes(graph: NamespaceGraph, i: int, filters: Filters) -> bool:
    if filters.categories and graph.categories[i] not in filters.categories:
        return False
    if filters.tags and not set(filters.tags).intersection(graph.tags[i]):
        return False
    if filters.tags_all and not set(filters.tags_all).issubset(graph.tags[i]):
        return False
    if filters.tags_none and set(filters.tags_none).intersection(graph.tags[i]):
        return False
    if filters.created_after is not None and graph.created_at[i] < filters.created_after:
        return False
    return not (filters.created_before is not None
                and graph.created_at[i] >= filters.created_before)


def rank(graph: NamespaceGraph, query: str, vector: Sequence[float], model: str, k: int,
         filters: Filters, settings: GraphSettings,
         seed_memories: Sequence[str] = ()) -> list[GraphHit]:
    seeds = query_seeds(graph, query, vector, model, settings, seed_memories)
    GRAPH_SEEDS.observe(len(seeds))
    if not seeds:
        return []
    nodes, pred = bfs(graph.adjacency, list(seeds), settings.node_cap)
    sub = graph.adjacency[nodes][:, nodes]
    if settings.mode == "hops":
        scores = _hop_scores(nodes, pred, seeds, graph, settings.hop_decay)
    else:
        position = np.full(graph.adjacency.shape[0], -1, dtype=np.int64)
        position[nodes] = np.arange(len(nodes))
        p = np.zeros(len(nodes))
        for node, w in seeds.items():
            p[position[node]] = w
        scores = personalized_pagerank(sub, p, settings.damping, settings.max_iterations,
                                       settings.tolerance)
    reached = np.flatnonzero((nodes < graph.memories) & (scores > 0))
    order = reached[np.argsort(-scores[reached], kind="stable")]
    found: list[tuple[float, int]] = []
    for i in order:  # best first; past k, only ties of the k-th score (the id breaks them)
        score, node = float(scores[i]), int(nodes[i])
        if len(found) >= k and score < found[-1][0]:
            break
        if _passes(graph, node, filters):
            found.append((score, node))
    found.sort(key=lambda t: (-t[0], graph.memory_ids[t[1]]))
    return [GraphHit(graph.memory_ids[node], score, float(graph.importance[node]),
                     _path(graph, pred, node)) for score, node in found[:k]]


def _hop_scores(nodes: np.ndarray, pred: np.ndarray, seeds: dict[int, float],
                graph: NamespaceGraph, decay: float) -> np.ndarray:
    hops = {}
    for node in nodes:
        node = int(node)
        h, at = 0, node
        while pred[at] >= 0:
            at, h = int(pred[at]), h + 1
        hops[node] = (h, seeds.get(at, 0.0))
    return np.asarray([w * decay ** max(h - 1, 0) for h, w in (hops[int(n)] for n in nodes)])


def _path(graph: NamespaceGraph, pred: np.ndarray, node: int) -> str:
    steps = [node]
    while pred[steps[-1]] >= 0 and len(steps) < 16:
        steps.append(int(pred[steps[-1]]))
    return " -> ".join(graph.node_name(s) for s in reversed(steps))
