"""The graph leg: recall by concept links, Personalized PageRank over a namespace's graph.

Nodes are the namespace's live memories and its concepts. Edges (undirected for
the walk, weighted): memory -mentions- concept, concept -relation- concept
(co-occurrence and extracted relations, live ones only), memory -relation-
memory (explicit relations from Store). A deleted, sensitive, expired or superseded
(valid_to passed) memory is not a node; a cached graph is rebuilt when one of its memories
expires or its validity ends.

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
Namespace graphs are cached and reloaded when `graph_versions` says they
changed (every write that alters a graph bumps it) or a validity window ends.
"""

from __future__ import annotations

import asyncio
import logging
import math
import re
import time
from collections import Counter as Tally
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
import scipy.sparse as sp
from prometheus_client import Counter, Gauge, Histogram

from recallmesh.services.graph.extraction import normalise
from recallmesh.shared.replicas import as_reads
from recallmesh.wire.filters import Filters, filter_sql, live

MAX_SEED_WORDS = 4
Row = tuple[Any, ...]  # a database row (psycopg returns tuples)
_ARRAY_HEADER = 20  # binary 1-D array: ndim, has-nulls, element type, length, lower bound
log = logging.getLogger(__name__)

GRAPH_LOADS = Histogram(
    "recallmesh_graph_load_seconds",
    "Time to load one namespace's graph from Postgres and build its matrix.",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5),
)
GRAPH_CACHE = Counter(
    "recallmesh_graph_cache_total",
    "Graph lookups per search: served from the cache (hit), served from a stale graph while "
    "the new one loads in the background (stale), or waited for a first load (load).",
    ["outcome"],
)
GRAPH_CACHE_BYTES = Gauge(
    "recallmesh_graph_cache_bytes",
    "Estimated memory held by the cached namespace graphs (matrix, name vectors, row data).",
)
GRAPH_EVICTIONS = Counter(
    "recallmesh_graph_cache_evictions_total",
    "Namespace graphs dropped from the cache (least recently used first) to stay within "
    "RECALLMESH_GRAPH_CACHE_NAMESPACES and RECALLMESH_GRAPH_CACHE_MB. A steady rate means "
    "searches keep reloading graphs: raise the limits.",
)
GRAPH_SEEDS = Histogram(
    "recallmesh_graph_seed_concepts",
    "Seed nodes per search: query concepts plus seed memories (0: the leg returns nothing).",
    buckets=(0, 1, 2, 3, 5, 8, 13, 21),
)
_WORDS = re.compile(r"[\w'-]+")


@dataclass(frozen=True)
class GraphSettings:
    mode: str = "ppr"  # or "hops"
    damping: float = 0.5  # probability of following an edge (1 - restart probability)
    max_iterations: int = 50
    tolerance: float = 1e-6
    # nodes ranked at most (docs/decisions/0017-smaller-settings-and-limits.md)
    node_cap: int = 10_000
    seed_top: int = 5  # nearest concept names seeded from the query vector
    seed_min_similarity: float = 0.45
    hop_decay: float = 0.5
    concept_edge_weight: float = 0.25  # concept-concept edges relative to mentions
    cache_namespaces: int = 1024
    cache_mb: int = 512  # estimated bytes of all cached graphs together


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
    memory_index: dict[str, int]  # memory id -> node
    adjacency: sp.csr_matrix  # (memories + concepts) square, symmetric
    expires_at: float = math.inf  # monotonic time a validity window ends
    loaded_at: float = field(default_factory=time.monotonic)

    @property
    def memories(self) -> int:
        return len(self.memory_ids)

    @property
    def size_bytes(self) -> int:
        """An estimate of the memory this graph holds: its arrays exactly, Python rows and
        aliases at a flat rate (about 400 bytes a memory, 150 an alias)."""
        arrays: int = (self.concept_vectors.nbytes + self.importance.nbytes
                       + self.adjacency.data.nbytes + self.adjacency.indices.nbytes
                       + self.adjacency.indptr.nbytes)
        return arrays + 400 * self.memories + 150 * len(self.alias_to_concept)

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
_MEMORIES = f"""
SELECT m.id::text, m.importance, m.category, m.tags, m.created_at,
       least(m.valid_to, m.expires_at)  -- when the node goes: the cached graph expires then
FROM memories m
WHERE m.namespace = %(ns)s AND {live('m')} AND NOT m.is_sensitive
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
SELECT id, name, array_send(embedding), coalesce(embedding_model, '') FROM concepts
WHERE namespace = %(ns)s ORDER BY id
"""
_ALIASES = "SELECT alias, concept_id FROM concept_aliases WHERE namespace = %(ns)s"
_CONCEPT_EDGES = """
SELECT src, dst, sum(weight) FROM concept_edges
WHERE namespace = %(ns)s AND retracted_at IS NULL AND (valid_to IS NULL OR valid_to > now())
GROUP BY src, dst
"""
_MEMORY_EDGES = "SELECT src::text, dst::text FROM memory_edges WHERE namespace = %(ns)s"
_LIVE = f"""
SELECT id::text FROM memories
WHERE namespace = %s AND id = ANY(%s::uuid[]) AND {live()} AND NOT is_sensitive
  AND (valid_to IS NULL OR valid_to > now())
"""


class GraphRetriever:
    """Searches namespace graphs, cached in memory.

    Loading a large namespace's graph takes seconds (most of it moving the
    concept name vectors), far more than a search's budget. So a search never
    waits for a *re*load: when the namespace changed since its graph was loaded,
    the search runs on the graph it has while one background task per namespace
    loads the new one, and what the old graph returns is checked against the
    live rows (deleted and superseded memories are dropped at once). Only a
    namespace's first search waits for a load; the load is shielded, so a
    search that gives up at its deadline leaves it running for the next one.
    """

    def __init__(self, reads: Any, settings: GraphSettings | None = None) -> None:
        self.reads = as_reads(reads)  # a replica's connections when one is set
        self.settings = settings or GraphSettings()
        self._cache: OrderedDict[str, NamespaceGraph] = OrderedDict()
        self._loading: dict[str, asyncio.Task[NamespaceGraph]] = {}

    async def graph(self, namespace: str) -> tuple[NamespaceGraph | None, bool]:
        """The namespace's graph and whether it is stale (None: nothing extracted yet)."""
        async def version_of(conn: Any) -> Any:
            return await (await conn.execute(_VERSION, (namespace,))).fetchone()

        row = await self.reads.run(version_of)
        if row is None:  # nothing extracted, or the namespace was deleted: forget its graph
            self._cache.pop(namespace, None)
            return None, False
        version = int(row[0])
        cached = self._cache.get(namespace)
        if cached is not None:
            self._cache.move_to_end(namespace)
            if cached.version == version and time.monotonic() < cached.expires_at:
                GRAPH_CACHE.labels("hit").inc()
                return cached, False
            GRAPH_CACHE.labels("stale").inc()
            self._refresh(namespace, version)
            return cached, True
        GRAPH_CACHE.labels("load").inc()
        return await asyncio.shield(self._refresh(namespace, version)), False

    def _refresh(self, namespace: str, version: int) -> asyncio.Task[NamespaceGraph]:
        """The namespace's load task, started unless one is running."""
        task = self._loading.get(namespace)
        if task is None:
            task = asyncio.create_task(self._load_and_cache(namespace, version))
            self._loading[namespace] = task
            task.add_done_callback(lambda t: self._loaded(namespace, t))
        return task

    def _loaded(self, namespace: str, task: asyncio.Task[NamespaceGraph]) -> None:
        self._loading.pop(namespace, None)
        if not task.cancelled() and task.exception() is not None:
            log.warning("graph load failed", extra={"namespace": namespace,
                                                    "error": repr(task.exception())})

    async def _load_and_cache(self, namespace: str, version: int) -> NamespaceGraph:
        with GRAPH_LOADS.time():
            graph = await self._load(namespace, version)
        self._cache[namespace] = graph
        self._cache.move_to_end(namespace)
        self._evict()
        return graph

    def _evict(self) -> None:
        """Drop least recently used graphs beyond the count or size limit (never the newest)."""
        budget = self.settings.cache_mb * 1024 * 1024
        total = sum(g.size_bytes for g in self._cache.values())
        while len(self._cache) > 1 and (len(self._cache) > self.settings.cache_namespaces
                                        or total > budget):
            _, dropped = self._cache.popitem(last=False)
            total -= dropped.size_bytes
            GRAPH_EVICTIONS.inc()
        GRAPH_CACHE_BYTES.set(total)

    async def _load(self, namespace: str, version: int) -> NamespaceGraph:
        params = {"ns": namespace}

        async def rows_of(conn: Any) -> list[list[Any]]:
            async with conn.transaction():
                await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
                cur = conn.cursor(binary=True)  # binary: several times faster for large graphs
                return [await (await cur.execute(sql, params)).fetchall()
                        for sql in (_MEMORIES, _LINKS, _CONCEPTS, _ALIASES, _CONCEPT_EDGES,
                                    _MEMORY_EDGES)]

        memories, links, concepts, aliases, concept_edges, memory_edges = (
            await self.reads.run(rows_of))
        return build_graph(version, memories, links, concepts, aliases, concept_edges,
                           memory_edges, self.settings.concept_edge_weight)

    async def _live(self, namespace: str, ids: list[str]) -> set[str]:
        """Which of ids are still live, current memories (checked when serving a stale graph)."""
        async def live_of(conn: Any) -> set[str]:
            cur = await conn.execute(_LIVE, (namespace, ids))
            return {r[0] for r in await cur.fetchall()}

        return await self.reads.run(live_of)

    async def _passing(self, namespace: str, filters: Filters, hits: list[GraphHit]
                       ) -> list[GraphHit]:
        """The hits whose memories pass `filters` (the conditions the graph does not cache),
        in their order."""
        if not hits:
            return hits
        where_filters, params = filter_sql(filters, alias="m")

        async def passing_of(conn: Any) -> set[str]:
            cur = await conn.execute(
                f"SELECT m.id::text FROM memories m WHERE m.namespace = %(ns)s "
                f"AND m.id = ANY(%(ids)s::uuid[]) {where_filters}",
                params | {"ns": namespace, "ids": [h.memory_id for h in hits]})
            return {r[0] for r in await cur.fetchall()}

        passing = await self.reads.run(passing_of)
        return [h for h in hits if h.memory_id in passing]

    async def search(self, namespace: str, query: str, vector: Sequence[float], model: str,
                     k: int, filters: Filters | None = None,
                     seed_memories: Sequence[str] = ()) -> list[GraphHit]:
        graph, stale = await self.graph(namespace)
        if graph is None or graph.memories == 0:
            return []
        filters = filters or Filters()
        if filters.cached_only:
            hits = rank(graph, query, vector, model, k, filters, self.settings, seed_memories)
        else:  # rank every reachable memory, then let the database apply the filters
            hits = await self._passing(namespace, filters, rank(
                graph, query, vector, model, graph.memories, filters, self.settings,
                seed_memories))
            hits = hits[:k]
        if stale and hits:
            alive = await self._live(namespace, [h.memory_id for h in hits])
            hits = [h for h in hits if h.memory_id in alive]
        return hits


def float4_arrays(blobs: Sequence[bytes | None]) -> np.ndarray:
    """Rows of a (len(blobs), d) float32 matrix from Postgres binary one-dimensional real[]
    values (array_send): the most common length wins; NULL, empty or other-length arrays
    (a concept embedded by another model) become zero rows."""
    sizes = Tally(len(b) for b in blobs if b is not None and len(b) > _ARRAY_HEADER)
    if not sizes:
        return np.zeros((len(blobs), 1), dtype=np.float32)
    size = sizes.most_common(1)[0][0]
    d = (size - _ARRAY_HEADER) // 8  # each element: int32 length + float4
    zero = bytes(size)
    data = b"".join(b if b is not None and len(b) == size else zero for b in blobs)
    words = np.frombuffer(data, dtype=">i4").reshape(len(blobs), size // 4)
    values = np.ascontiguousarray(words[:, _ARRAY_HEADER // 4:].reshape(len(blobs), d, 2)[:, :, 1])
    return values.view(">f4").astype(np.float32)


def build_graph(version: int, memories: Sequence[Row], links: Sequence[Row],
                concepts: Sequence[Row], aliases: Sequence[Row], concept_edges: Sequence[Row],
                memory_edges: Sequence[Row], concept_edge_weight: float) -> NamespaceGraph:
    memory_index = {r[0]: i for i, r in enumerate(memories)}
    concept_index = {r[0]: i for i, r in enumerate(concepts)}
    m, c = len(memories), len(concepts)
    vectors = float4_arrays([r[2] for r in concepts])
    rows: list[int] = []
    cols: list[int] = []
    weights: list[float] = []

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
        memory_index=memory_index,
        adjacency=adjacency,
        expires_at=expires,
    )


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
