"""Hydration: the first k live candidates of the fused list, read from Postgres in fused
order, and, in the same round trip when context propagation runs, the memories stored right
after / just before the best of them."""

from __future__ import annotations

import logging

from recallmesh.gateway.metrics import CONTEXT_EXPANSIONS
from recallmesh.gateway.store import MemoryStore
from recallmesh.wire.fusion import FusedCandidate
from recallmesh.wire.memory_fields import StoredMemory
from recallmesh.wire.validation import RecallQuery

log = logging.getLogger(__name__)

Adjacent = tuple[dict[str, StoredMemory], dict[str, StoredMemory]]


async def hydrate_top(
    store: MemoryStore, q: RecallQuery, fused: list[FusedCandidate], context_hits: int = 0,
) -> tuple[list[FusedCandidate], dict[str, StoredMemory], Adjacent | None]:
    """The first k live candidates, in fused order, and (with context_hits) the memories
    stored next after / just before each of the first context_hits candidates, read in the
    same round trip (None when not asked or the read failed: then the hits are hydrated alone
    and keep their fused order). Neighbours are along the hit's thread only.

    A leg may return ids that were deleted since it looked (or never existed): hydration
    drops them, so it reads a window of 2k and, only in the rare case that leaves fewer than
    k live hits, the next window.
    """
    top: list[FusedCandidate] = []
    memories: dict[str, StoredMemory] = {}
    adjacent = None
    start, window = 0, 2 * q.k
    while len(top) < q.k and start < len(fused):
        chunk = fused[start : start + window]
        ids = [c.memory_id for c in chunk]
        found = None
        if start == 0 and context_hits > 0:
            try:
                found, after, before = await store.hydrate_adjacent(
                    q.namespace, ids, ids[:context_hits], q.filters)
                adjacent = (after, before)
            except Exception:  # an optional refinement must not fail the recall
                log.exception("context lookup failed; hits returned in fused order")
                CONTEXT_EXPANSIONS.labels("failed").inc()
        if found is None:
            found = await store.hydrate(q.namespace, ids)
        memories.update(found)
        top.extend(c for c in chunk if c.memory_id in found)
        start += window
    return top[: q.k], memories, adjacent
