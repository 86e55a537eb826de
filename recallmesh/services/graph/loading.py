"""A namespace's concept graph, loaded from Postgres into one sparse matrix.

Nodes are the namespace's live memories and its concepts. Edges (undirected for
the walk, weighted): memory -mentions- concept, concept -relation- concept
(co-occurrence and extracted relations, live ones only), memory -relation-
memory (explicit relations from Store). A deleted, sensitive, expired or superseded
(valid_to passed) memory is not a node; a cached graph is rebuilt when one of its memories
expires or its validity ends (NamespaceGraph.expires_at).
"""

from __future__ import annotations

import math
import time
from collections import Counter as Tally
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
import scipy.sparse as sp

from recallmesh.shared.db import Conn
from recallmesh.shared.replicas import Reads
from recallmesh.wire.filters import live

Row = tuple[Any, ...]  # a database row (psycopg returns tuples)
_ARRAY_HEADER = 20  # binary 1-D array: ndim, has-nulls, element type, length, lower bound


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


async def load_graph(reads: Reads, namespace: str, version: int,
                     concept_edge_weight: float) -> NamespaceGraph:
    """The namespace's graph, read in one snapshot (a replica's when `reads` has one)."""
    params = {"ns": namespace}

    async def rows_of(conn: Conn) -> list[list[Any]]:
        async with conn.transaction():
            await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            cur = conn.cursor(binary=True)  # binary: several times faster for large graphs
            return [await (await cur.execute(sql, params)).fetchall()
                    for sql in (_MEMORIES, _LINKS, _CONCEPTS, _ALIASES, _CONCEPT_EDGES,
                                _MEMORY_EDGES)]

    memories, links, concepts, aliases, concept_edges, memory_edges = (
        await reads.run(rows_of))
    return build_graph(version, memories, links, concepts, aliases, concept_edges,
                       memory_edges, concept_edge_weight)


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
