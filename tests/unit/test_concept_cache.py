"""The indexer's cache of concept name vectors (ConceptWriter._known_vectors) stays within its
byte and namespace bounds, reads only concepts newer than what it holds, and reports its size
in recallmesh_indexer_concept_cache_bytes."""

from __future__ import annotations

from typing import Any, cast

import numpy as np
from prometheus_client import REGISTRY

from recallmesh.services.indexer.concepts import ConceptWriter
from recallmesh.shared.db import Conn

DIM = 4
ROW_BYTES = DIM * 4


def as_conn(fake: FakeConcepts) -> Conn:
    """The fake as the connection type the cache reads through (it answers that one query)."""
    return cast(Conn, fake)


class FakeConcepts:
    """Answers the cache's one query from a dict namespace -> concept count (ids 1..n)."""

    def __init__(self, counts: dict[str, int]) -> None:
        self.counts = counts
        self.read: list[tuple[str, int]] = []  # (namespace, rows returned)

    async def execute(self, sql: str, params: tuple[str, str, int]) -> Any:
        ns, _, after = params
        rows = [(i, [float(i)] * DIM) for i in range(after + 1, self.counts[ns] + 1)]
        self.read.append((ns, len(rows)))

        class Cursor:
            async def fetchall(self) -> list[tuple[int, list[float]]]:
                return rows
        return Cursor()


def gauge() -> float:
    value = REGISTRY.get_sample_value("recallmesh_indexer_concept_cache_bytes")
    assert value is not None
    return value


async def test_the_cache_grows_incrementally_and_stays_within_its_bounds() -> None:
    writer = ConceptWriter(extractor=None,  # type: ignore[arg-type]  # the cache extracts nothing
                           cache_namespaces=2, cache_bytes=100 * ROW_BYTES)
    conn = FakeConcepts({"a": 40, "b": 50, "c": 30, "big": 101})
    ids, matrix = await writer._known_vectors(as_conn(conn), "a", "m")
    assert ids == list(range(1, 41)) and matrix.shape == (40, DIM)
    conn.counts["a"] = 45
    ids, matrix = await writer._known_vectors(as_conn(conn), "a", "m")
    assert conn.read[-1] == ("a", 5)  # only the new ones are read
    assert ids == list(range(1, 46)) and np.array_equal(matrix[:, 0], np.arange(1, 46))
    assert gauge() == 45 * ROW_BYTES

    await writer._known_vectors(as_conn(conn), "b", "m")  # 95 rows: fits
    await writer._known_vectors(as_conn(conn), "c", "m")  # 125 rows and 3 namespaces: a goes
    assert set(writer._vectors) == {("b", "m"), ("c", "m")}
    assert gauge() == 80 * ROW_BYTES

    # bigger than the bound alone
    ids, matrix = await writer._known_vectors(as_conn(conn), "big", "m")
    assert len(ids) == 101  # answered in full, not cached
    assert ("big", "m") not in writer._vectors
    assert gauge() <= 100 * ROW_BYTES
    await writer._known_vectors(as_conn(conn), "big", "m")
    assert conn.read[-1] == ("big", 101)  # read whole again
