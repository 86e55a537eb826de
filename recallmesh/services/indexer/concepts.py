"""Writes the concept graph for the memories the indexer has just embedded.

Per batch:
  1. extract mentions and relations from the texts (recallmesh/services/graph/extraction.py),
     off the event loop;
  2. look up which normalised surface forms the namespace already knows
     (concept_aliases); embed the new ones with the embedding service;
  3. inside the indexer's write transaction, for the memories whose vectors
     were written: give each new form a concept -- an existing one whose name
     embedding is at least `merge_threshold` cosine-similar (the form becomes
     its alias), else a new concept named by the form -- then link memories to
     concepts, add weighted co-occurrence edges and the extracted typed
     relations (bi-temporal: valid from the memory's time, recorded now), and
     bump the namespace's graph version so graph legs reload it.
Sensitive memories never reach this code (they have no embedding job).
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict, defaultdict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import combinations
from typing import Any

import numpy as np
from prometheus_client import Gauge
from psycopg_pool import AsyncConnectionPool

from recallmesh.services.embedding.client import Embeddings
from recallmesh.services.graph.extraction import ConceptExtractor, Extraction
from recallmesh.services.indexer.settings import DEFAULT_CONCEPT_MERGE_THRESHOLD
from recallmesh.shared.db import Conn, one_row

MAX_EVIDENCE = 32  # memory ids kept per edge

CONCEPT_CACHE_BYTES = Gauge(
    "recallmesh_indexer_concept_cache_bytes",
    "Bytes of concept name vectors the indexer holds to merge new surface forms "
    "(RECALLMESH_INDEXER_CONCEPT_CACHE_MB bounds it). It grows with the concepts of the "
    "namespaces being written, up to that bound: growth of the indexer's memory that it "
    "explains is a cache filling, not a leak.")


@dataclass(frozen=True)
class Source:
    memory_id: str
    namespace: str
    content: str
    tags: tuple[str, ...]
    created_at: datetime


@dataclass
class Prepared:
    sources: list[Source]
    extractions: list[Extraction]
    new_vectors: dict[tuple[str, str], np.ndarray]  # (namespace, alias) -> name embedding
    model_id: str = ""


class ConceptWriter:
    def __init__(self, extractor: ConceptExtractor,
                 merge_threshold: float = DEFAULT_CONCEPT_MERGE_THRESHOLD,
                 cache_namespaces: int = 64, cache_bytes: int = 256 << 20) -> None:
        self.extractor = extractor
        self.merge_threshold = merge_threshold
        self.cache_namespaces = cache_namespaces
        self.cache_bytes = cache_bytes
        # (namespace, model) -> (concept ids, their name vectors): grown incrementally
        # (only ids above the largest cached one are read), least recently used dropped
        # beyond cache_namespaces entries or cache_bytes of vectors (the one in use is kept
        # only if it fits alone: a bigger namespace is read whole each batch instead).
        # A concept another indexer created with a lower id may be missed; that costs at
        # most an unmerged duplicate concept, never a wrong link.
        self._vectors: OrderedDict[tuple[str, str], tuple[list[int], np.ndarray]] = (
            OrderedDict())
        self._held = 0  # bytes of the cached matrices

    def _drop_oldest(self) -> None:
        _, (_, matrix) = self._vectors.popitem(last=False)
        self._held -= matrix.nbytes

    async def _known_vectors(self, conn: Conn, ns: str,
                             model: str) -> tuple[list[int], np.ndarray]:
        key = (ns, model)
        ids, matrix = self._vectors.pop(key, ([], np.zeros((0, 1), dtype=np.float32)))
        self._held -= matrix.nbytes if ids else 0
        cur = await conn.execute(
            "SELECT id, embedding::float4[] FROM concepts WHERE namespace = %s "
            "AND embedding IS NOT NULL AND embedding_model = %s AND id > %s ORDER BY id",
            (ns, model, ids[-1] if ids else 0))
        rows = await cur.fetchall()
        if rows:
            fresh = np.asarray([r[1] for r in rows], dtype=np.float32)
            matrix = fresh if not ids else np.vstack([matrix, fresh])
            ids = ids + [r[0] for r in rows]
        if ids and matrix.nbytes <= self.cache_bytes:
            self._vectors[key] = (ids, matrix)
            self._held += matrix.nbytes
        while self._vectors and (len(self._vectors) > self.cache_namespaces
                                 or self._held > self.cache_bytes):
            self._drop_oldest()
        CONCEPT_CACHE_BYTES.set(self._held)
        return ids, matrix

    async def extract(self, sources: Sequence[Source]) -> list[Extraction]:
        """Step 1, in a thread (the indexer runs it while the batch is being embedded)."""
        return await asyncio.to_thread(
            self.extractor.extract, [s.content for s in sources], [s.tags for s in sources])

    async def prepare(self, pool: AsyncConnectionPool, sources: Sequence[Source],
                      extractions: list[Extraction],
                      embed: Callable[[list[str]], Awaitable[Embeddings]]) -> Prepared:
        """Step 2: everything else slow, before the write transaction."""
        wanted: dict[str, set[str]] = defaultdict(set)
        for s, x in zip(sources, extractions, strict=True):
            wanted[s.namespace].update(x.aliases)
        new: list[tuple[str, str]] = []
        async with pool.connection() as conn:
            for ns, aliases in sorted(wanted.items()):
                cur = await conn.execute(
                    "SELECT alias FROM concept_aliases WHERE namespace = %s AND alias = ANY(%s)",
                    (ns, sorted(aliases)))
                known = {r[0] for r in await cur.fetchall()}
                new += [(ns, a) for a in sorted(aliases - known)]
        prepared = Prepared(list(sources), extractions, {})
        if new:
            names = sorted({a for _, a in new})
            embedded = await embed(names)
            # A name the embedding service failed on alone has no vector (None): its concept
            # is created unembedded, as when the extractor's form cannot be merged.
            by_name = {name: np.asarray(vector, dtype=np.float32)
                       for name, vector in zip(names, embedded.vectors, strict=True)
                       if vector is not None}
            prepared.new_vectors = {key: by_name[key[1]] for key in new if key[1] in by_name}
            prepared.model_id = embedded.model_id
        return prepared

    async def write(self, conn: Conn, prepared: Prepared, written: set[str]) -> None:
        """Step 3, on the indexer's open transaction (memories already locked)."""
        by_ns: dict[str, list[tuple[Source, Extraction]]] = defaultdict(list)
        for s, x in zip(prepared.sources, prepared.extractions, strict=True):
            if s.memory_id in written and x.mentions:
                by_ns[s.namespace].append((s, x))
        for ns, items in sorted(by_ns.items()):
            aliases = sorted({a for _, x in items for a in x.aliases})
            concept_of = await self._resolve(conn, ns, aliases, prepared)
            await self._link(conn, ns, items, concept_of)
            await conn.execute("SELECT recallmesh_bump_graph_version(%s)", (ns,))

    async def _resolve(self, conn: Conn, ns: str, aliases: list[str],
                       prepared: Prepared) -> dict[str, int]:
        cur = await conn.execute(
            "SELECT alias, concept_id FROM concept_aliases WHERE namespace = %s "
            "AND alias = ANY(%s)", (ns, aliases))
        concept_of: dict[str, int] = dict(await cur.fetchall())
        missing = [a for a in aliases if a not in concept_of]
        if not missing:
            return concept_of
        known_ids, known = await self._known_vectors(conn, ns, prepared.model_id)
        created_ids: list[int] = []
        created: list[np.ndarray] = []
        alive: set[int] = set()  # cached concepts seen in the table in this transaction
        for alias in missing:  # sorted: the same batch always resolves the same way
            vector = prepared.new_vectors.get((ns, alias))
            target = self._closest(vector, ((known_ids, known), (created_ids, created)))
            if target is not None and target not in alive and target not in created_ids:
                # The cache may hold a concept purged since it was read. The writer holds the
                # namespace's write lock, so what it sees now stays until it commits: a
                # purged one makes the namespace's vectors be read again, whole.
                cur = await conn.execute(
                    "SELECT 1 FROM concepts WHERE namespace = %s AND id = %s", (ns, target))
                if await cur.fetchone() is None:
                    self._forget(ns, prepared.model_id)
                    known_ids, known = await self._known_vectors(conn, ns, prepared.model_id)
                    alive.update(known_ids)
                    target = self._closest(vector, ((known_ids, known), (created_ids, created)))
                else:
                    alive.add(target)
            if target is None:
                cur = await conn.execute(
                    "INSERT INTO concepts (namespace, name, kind, embedding, embedding_model) "
                    "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (namespace, name) DO UPDATE "
                    "SET name = EXCLUDED.name RETURNING id",
                    (ns, alias, _kind_of(alias, prepared),
                     None if vector is None else vector.tolist(),
                     prepared.model_id if vector is not None else None))
                target = (await one_row(cur))[0]
                if vector is not None:
                    created_ids.append(target)
                    created.append(vector)
            cur = await conn.execute(
                "INSERT INTO concept_aliases (namespace, alias, concept_id) VALUES (%s, %s, %s) "
                "ON CONFLICT (namespace, alias) DO UPDATE SET alias = EXCLUDED.alias "
                "RETURNING concept_id", (ns, alias, target))
            concept_of[alias] = (await one_row(cur))[0]
        return concept_of

    def _closest(self, vector: np.ndarray | None,
                 candidates: Sequence[tuple[Sequence[int], Any]]) -> int | None:
        """The concept whose name vector is the most similar to `vector`, at least
        merge_threshold; None when none is (or the form has no vector)."""
        target, best = None, self.merge_threshold
        if vector is None:
            return None
        for ids, matrix in candidates:
            if len(ids):
                sims = np.asarray(matrix) @ vector
                j = int(np.argmax(sims))
                if sims[j] >= best:
                    target, best = ids[j], float(sims[j])
        return target

    def _forget(self, ns: str, model: str) -> None:
        """Drop the cached vectors of (ns, model): the next read is whole."""
        ids, matrix = self._vectors.pop((ns, model), ([], np.zeros((0, 1), dtype=np.float32)))
        self._held -= matrix.nbytes if ids else 0
        CONCEPT_CACHE_BYTES.set(self._held)

    async def _link(self, conn: Conn, ns: str, items: list[tuple[Source, Extraction]],
                    concept_of: dict[str, int]) -> None:
        links: dict[tuple[str, int], float] = {}
        edges: dict[tuple[int, int, str], list[Any]] = {}  # -> [weight, evidence, valid_from]

        def edge(a: int, b: int, rel: str, weight: float, s: Source) -> None:
            key = (a, b, rel)
            if key not in edges:
                edges[key] = [0.0, [], s.created_at]
            e = edges[key]
            e[0] += weight
            if len(e[1]) < MAX_EVIDENCE:
                e[1].append(s.memory_id)
            e[2] = min(e[2], s.created_at)

        for s, x in items:
            weights: dict[int, float] = {}
            for m in x.mentions:
                c = concept_of[m.alias]
                weights[c] = max(weights.get(c, 0.0), m.weight)
            for c, w in weights.items():
                links[(s.memory_id, c)] = w
            for a, b in combinations(sorted(weights), 2):
                edge(a, b, "co_occurs", min(weights[a], weights[b]), s)
            for r in x.relations:
                a, b = concept_of[r.src], concept_of[r.dst]
                if a != b:
                    edge(a, b, r.rel_type, 1.0, s)
        await conn.execute(
            "INSERT INTO memory_concepts (memory_id, concept_id, weight) "
            "SELECT * FROM unnest(%s::uuid[], %s::bigint[], %s::real[]) "
            "ON CONFLICT (memory_id, concept_id) DO UPDATE SET weight = EXCLUDED.weight",
            ([k[0] for k in links], [k[1] for k in links], list(links.values())))
        if not edges:
            return
        keys = sorted(edges)
        async with conn.cursor() as cur:
            await cur.executemany(
                "INSERT INTO concept_edges (namespace, src, dst, rel_type, weight, evidence, "
                "valid_from) VALUES (%s, %s, %s, %s, %s, %s::uuid[], %s) "
                "ON CONFLICT (src, dst, rel_type) WHERE retracted_at IS NULL DO UPDATE SET "
                "weight = concept_edges.weight + EXCLUDED.weight, "
                f"evidence = (concept_edges.evidence || EXCLUDED.evidence)[1:{MAX_EVIDENCE}], "
                "valid_from = least(concept_edges.valid_from, EXCLUDED.valid_from)",
                [(ns, a, b, rel, *edges[(a, b, rel)]) for a, b, rel in keys])


def _kind_of(alias: str, prepared: Prepared) -> str:
    for x in prepared.extractions:
        for m in x.mentions:
            if m.alias == alias:
                return m.kind
    return "phrase"
