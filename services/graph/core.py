"""The graph leg: recall by concept links, Personalized PageRank over a namespace's graph.

Nodes are the namespace's live memories and its concepts. Edges (undirected for
the walk, weighted): memory -mentions- concept, concept -relation- concept
(co-occurrence and extracted relations, live ones only), memory -relation-
memory (explicit relations from Store). A deleted, sensitive or superseded
(valid_to passed) memory is not a node.

A search
  1. seeds concepts from the query: every 1..4-word span of the query that is a
     known alias (weight 1), plus the concepts whose name embeddings are nearest
     the query vector (weight = cosine, above `seed_min_similarity`);
  2. keeps at most `node_cap` nodes, nearest the seeds first (breadth-first);
  3. scores nodes by Personalized PageRank (restart to the seeds with
     probability 1 - damping; power iteration to `tolerance` or `max_iterations`)
     or, in "hops" mode, by hop-decay from the seeds;
  4. returns the best memories (score, then id: deterministic) with the path
     that reached each (seed concept -> ... -> memory).
Namespace graphs are cached and reloaded when `graph_versions` says they
changed (every write that alters a graph bumps it) or a validity window ends.
"""

from __future__ import annotations

import asyncio
import math
import re
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
import scipy.sparse as sp
from prometheus_client import Counter, Histogram

from services.graph.extraction import normalise
from shared.filters import Filters

MAX_SEED_WORDS = 4

GRAPH_LOADS = Histogram(
    "recallmesh_graph_load_seconds",
    "Time to load one namespace's graph from Postgres and build its matrix.",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5),
)
GRAPH_CACHE = Counter(
    "recallmesh_graph_cache_total",
    "Graph lookups per search: served from the cache (hit) or (re)loaded (load).",
    ["outcome"],
)
GRAPH_SEEDS = Histogram(
    "recallmesh_graph_seed_concepts",
    "Seed concepts found per search (0: the graph leg returns nothing).",
    buckets=(0, 1, 2, 3, 5, 8, 13, 21),
)
_WORDS = re.compile(r"[\w'-]+")


@dataclass(frozen=True)
class GraphSettings:
    mode: str = "ppr"  # or "hops"
    damping: float = 0.5  # probability of following an edge (1 - restart probability)
    max_iterations: int = 50
    tolerance: float = 1e-6
    node_cap: int = 50_000
    seed_top: int = 5  # nearest concept names seeded from the query vector
    seed_min_similarity: float = 0.45
    hop_decay: float = 0.5
    concept_edge_weight: float = 0.25  # concept-concept edges relative to mentions
    cache_namespaces: int = 128


@dataclass
class NamespaceGraph:
    version: int
    memory_ids: list[str]
    importance: np.ndarray
    categories: list[str]
    tags: list[tuple[str, ...]]
    created_at: list[datetime]
    concept_names: list[str]
    concept_vectors: np.ndarray  # (concepts, d), zero rows for concepts without a vector
    concept_models: list[str]
    alias_to_concept: dict[str, int]  # -> concept index
    adjacency: sp.csr_matrix  # (memories + concepts) square, symmetric
    expires_at: float = math.inf  # monotonic time a validity window ends
    loaded_at: float = field(default_factory=time.monotonic)

    @property
    def memories(self) -> int:
        return len(self.memory_ids)

    def node_name(self, node: int) -> str:
        if node < self.memories:
            return f"memory {self.memory_ids[node][:8]}"
        return f"'{self.concept_names[node - self.memories]}'"


@dataclass(frozen=True)
class GraphHit:
    memory_id: str
    score: float
    importance: float
    path: str


_VERSION = "SELECT version FROM graph_versions WHERE namespace = %s"
_MEMORIES = """
SELECT m.id::text, m.importance, m.category, m.tags, m.created_at, m.valid_to
FROM memories m
WHERE m.namespace = %(ns)s AND m.deleted_at IS NULL AND NOT m.is_sensitive
  AND (m.valid_to IS NULL OR m.valid_to > now())
  AND EXISTS (SELECT 1 FROM memory_concepts mc WHERE mc.memory_id = m.id)
ORDER BY m.id
"""
_LINKS = """
SELECT mc.memory_id::text, mc.concept_id, mc.weight
FROM memory_concepts mc JOIN memories m ON m.id = mc.memory_id
WHERE m.namespace = %(ns)s
"""
_CONCEPTS = """
SELECT id, name, embedding, coalesce(embedding_model, '') FROM concepts
WHERE namespace = %(ns)s ORDER BY id
"""
_ALIASES = "SELECT alias, concept_id FROM concept_aliases WHERE namespace = %(ns)s"
_CONCEPT_EDGES = """
SELECT src, dst, sum(weight) FROM concept_edges
WHERE namespace = %(ns)s AND retracted_at IS NULL AND (valid_to IS NULL OR valid_to > now())
GROUP BY src, dst
"""
_MEMORY_EDGES = "SELECT src::text, dst::text FROM memory_edges WHERE namespace = %(ns)s"


class GraphRetriever:
    def __init__(self, pool: Any, settings: GraphSettings | None = None) -> None:
        self.pool = pool
        self.settings = settings or GraphSettings()
        self._cache: OrderedDict[str, NamespaceGraph] = OrderedDict()
        self._locks: dict[str, asyncio.Lock] = {}

    async def graph(self, namespace: str) -> NamespaceGraph | None:
        async with self.pool.connection() as conn:
            cur = await conn.execute(_VERSION, (namespace,))
            row = await cur.fetchone()
        if row is None:
            return None  # nothing was ever extracted in this namespace
        version = int(row[0])
        lock = self._locks.setdefault(namespace, asyncio.Lock())
        async with lock:
            cached = self._cache.get(namespace)
            if (cached is not None and cached.version == version
                    and time.monotonic() < cached.expires_at):
                self._cache.move_to_end(namespace)
                GRAPH_CACHE.labels("hit").inc()
                return cached
            GRAPH_CACHE.labels("load").inc()
            with GRAPH_LOADS.time():
                graph = await self._load(namespace, version)
            self._cache[namespace] = graph
            self._cache.move_to_end(namespace)
            while len(self._cache) > self.settings.cache_namespaces:
                self._cache.popitem(last=False)
            return graph

    async def _load(self, namespace: str, version: int) -> NamespaceGraph:
        params = {"ns": namespace}
        async with self.pool.connection() as conn, conn.transaction():
            await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            memories = await (await conn.execute(_MEMORIES, params)).fetchall()
            links = await (await conn.execute(_LINKS, params)).fetchall()
            concepts = await (await conn.execute(_CONCEPTS, params)).fetchall()
            aliases = await (await conn.execute(_ALIASES, params)).fetchall()
            concept_edges = await (await conn.execute(_CONCEPT_EDGES, params)).fetchall()
            memory_edges = await (await conn.execute(_MEMORY_EDGES, params)).fetchall()
        return build_graph(version, memories, links, concepts, aliases, concept_edges,
                           memory_edges, self.settings.concept_edge_weight)

    async def search(self, namespace: str, query: str, vector: Sequence[float], model: str,
                     k: int, filters: Filters | None = None) -> list[GraphHit]:
        graph = await self.graph(namespace)
        if graph is None or graph.memories == 0:
            return []
        return rank(graph, query, vector, model, k, filters or Filters(), self.settings)


def build_graph(version: int, memories: Sequence, links: Sequence, concepts: Sequence,
                aliases: Sequence, concept_edges: Sequence, memory_edges: Sequence,
                concept_edge_weight: float) -> NamespaceGraph:
    memory_index = {r[0]: i for i, r in enumerate(memories)}
    concept_index = {r[0]: i for i, r in enumerate(concepts)}
    m, c = len(memories), len(concepts)
    dims = {len(r[2]) for r in concepts if r[2] is not None}
    d = dims.pop() if len(dims) == 1 else 0
    vectors = np.zeros((c, max(d, 1)), dtype=np.float32)
    for i, r in enumerate(concepts):
        if r[2] is not None and d and len(r[2]) == d:
            vectors[i] = r[2]
    rows, cols, weights = [], [], []

    def edge(a: int, b: int, w: float) -> None:
        rows.extend((a, b))
        cols.extend((b, a))
        weights.extend((w, w))

    for memory_id, concept_id, w in links:
        if memory_id in memory_index and concept_id in concept_index:
            edge(memory_index[memory_id], m + concept_index[concept_id], float(w))
    for src, dst, w in concept_edges:
        if src in concept_index and dst in concept_index:
            edge(m + concept_index[src], m + concept_index[dst],
                 concept_edge_weight * math.log1p(float(w)))
    for src, dst in memory_edges:
        if src in memory_index and dst in memory_index:
            edge(memory_index[src], memory_index[dst], 1.0)
    n = m + c
    adjacency = sp.csr_matrix((np.asarray(weights, dtype=np.float64), (rows, cols)),
                              shape=(n, n))
    adjacency.sum_duplicates()
    now = datetime.now(UTC)
    ends = [r[5] for r in memories if r[5] is not None and r[5] > now]
    expires = (time.monotonic() + (min(ends) - now).total_seconds()) if ends else math.inf
    return NamespaceGraph(
        version=version,
        memory_ids=[r[0] for r in memories],
        importance=np.asarray([float(r[1]) for r in memories], dtype=np.float64),
        categories=[r[2] for r in memories],
        tags=[tuple(r[3]) for r in memories],
        created_at=[r[4] for r in memories],
        concept_names=[r[1] for r in concepts],
        concept_vectors=vectors,
        concept_models=[r[3] for r in concepts],
        alias_to_concept={a: concept_index[cid] for a, cid in aliases if cid in concept_index},
        adjacency=adjacency,
        expires_at=expires,
    )


def query_seeds(graph: NamespaceGraph, query: str, vector: Sequence[float], model: str,
                settings: GraphSettings) -> dict[int, float]:
    """Seed concept nodes -> personalisation weight."""
    seeds: dict[int, float] = {}
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
        # np.unique keeps the first occurrence: the lowest frontier node is the predecessor
        new, first = np.unique(cols, return_index=True)
        new = new[: max(cap - total, 0)]
        pred[new] = frontier[rows[first[: len(new)]]]
        seen[new] = True
        order.append(new)
        total += len(new)
        frontier = new
    return np.concatenate(order), pred


def personalized_pagerank(adjacency: sp.csr_matrix, personalisation: np.ndarray,
                          damping: float, max_iterations: int, tolerance: float) -> np.ndarray:
    """r = (1 - d) p + d P^T r with P the row-normalised adjacency; dangling mass restarts."""
    degree = np.asarray(adjacency.sum(axis=1)).ravel()
    inv = np.divide(1.0, degree, out=np.zeros_like(degree), where=degree > 0)
    transition_t = (sp.diags(inv) @ adjacency).T.tocsr()
    p = personalisation / personalisation.sum()
    r = p.copy()
    dangling = degree == 0
    for _ in range(max_iterations):
        nxt = damping * (transition_t @ r + r[dangling].sum() * p) + (1 - damping) * p
        if np.abs(nxt - r).sum() < tolerance:
            return nxt
        r = nxt
    return r


def _passes(graph: NamespaceGraph, i: int, filters: Filters) -> bool:
    if filters.categories and graph.categories[i] not in filters.categories:
        return False
    if filters.tags and not set(filters.tags).intersection(graph.tags[i]):
        return False
    if filters.created_after is not None and graph.created_at[i] < filters.created_after:
        return False
    return not (filters.created_before is not None
                and graph.created_at[i] >= filters.created_before)


def rank(graph: NamespaceGraph, query: str, vector: Sequence[float], model: str, k: int,
         filters: Filters, settings: GraphSettings) -> list[GraphHit]:
    seeds = query_seeds(graph, query, vector, model, settings)
    GRAPH_SEEDS.observe(len(seeds))
    if not seeds:
        return []
    nodes, pred = bfs(graph.adjacency, list(seeds), settings.node_cap)
    local = {int(node): i for i, node in enumerate(nodes)}
    sub = graph.adjacency[nodes][:, nodes]
    if settings.mode == "hops":
        scores = _hop_scores(nodes, pred, seeds, graph, settings.hop_decay)
    else:
        p = np.zeros(len(nodes))
        for node, w in seeds.items():
            p[local[node]] = w
        scores = personalized_pagerank(sub, p, settings.damping, settings.max_iterations,
                                       settings.tolerance)
    found = [(float(scores[i]), int(node)) for i, node in enumerate(nodes)
             if node < graph.memories and scores[i] > 0 and _passes(graph, int(node), filters)]
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
