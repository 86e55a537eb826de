"""The graph leg: recall by concept links, Personalized PageRank over a namespace's graph.

GraphRetriever serves a search: it finds the namespace's graph (a concept graph over its
live memories, recallmesh/services/graph/loading.py), ranks it for the query
(recallmesh/services/graph/ranking.py) and holds the result to the request's filters.
Namespace graphs are cached and reloaded when `graph_versions` says they
changed (every write that alters a graph bumps it) or a validity window ends.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from prometheus_client import Counter, Gauge, Histogram

from recallmesh.services.graph.loading import NamespaceGraph, load_graph
from recallmesh.services.graph.ranking import GraphHit, rank
from recallmesh.services.graph.settings import GraphSettings
from recallmesh.shared.db import Conn
from recallmesh.shared.replicas import ReadSource, as_reads
from recallmesh.wire.filters import Filters, filter_sql, live

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

_VERSION = "SELECT version FROM graph_versions WHERE namespace = %s"
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

    def __init__(self, reads: ReadSource,
                 settings: GraphSettings | None = None) -> None:
        self.reads = as_reads(reads)  # a replica's connections when one is set
        self.settings = settings or GraphSettings()
        self._cache: OrderedDict[str, NamespaceGraph] = OrderedDict()
        self._loading: dict[str, asyncio.Task[NamespaceGraph]] = {}

    async def graph(self, namespace: str) -> tuple[NamespaceGraph | None, bool]:
        """The namespace's graph and whether it is stale (None: nothing extracted yet)."""
        async def version_of(conn: Conn) -> Any:
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
            graph = await load_graph(self.reads, namespace, version,
                                     self.settings.concept_edge_weight)
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

    async def _live(self, namespace: str, ids: list[str]) -> set[str]:
        """Which of ids are still live, current memories (checked when serving a stale graph)."""
        async def live_of(conn: Conn) -> set[str]:
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

        async def passing_of(conn: Conn) -> set[str]:
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
