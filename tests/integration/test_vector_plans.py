"""The vector leg's two plans on a real namespace: the exact scan (namespaces of at most
RECALLMESH_VECTOR_EXACT_MAX vectors) and HNSW find the same nearest memories, the exact one
never through the index, the HNSW one through it even where the planner alone would sort, and
the plan follows the namespace's size."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import psycopg
import pytest
from psycopg_pool import AsyncConnectionPool

from recallmesh.migrations.vector_schema import INDEX_NAME, vector_literal
from recallmesh.services.vector.core import (
    EXACT_SEARCHES,
    VectorRetriever,
    build_search_sql,
    plan_settings,
)
from recallmesh.stack.supervisor import Stack
from recallmesh.v1 import embedder_pb2, embedder_pb2_grpc, memory_pb2, memory_pb2_grpc
from recallmesh.wire.filters import Filters

pytestmark = pytest.mark.integration

WAIT = memory_pb2.IndexWait(wait=True, timeout_ms=60000)
CONTENTS = [
    "Lives in Lisbon with two cats", "Allergic to peanuts and shellfish",
    "Runs a half marathon every spring", "Deploys on Fridays only after QA sign-off",
    "Birthday is on the 14th of March", "Drinks oat milk in coffee",
    "Uses Postgres 16 in production", "Learning Portuguese on weekends",
    "Daughter starts school in September", "Wants weekly reports as PDF",
    "The office wifi password rotates monthly", "Reads science fiction before bed",
]
QUESTIONS = ["what pets does the user have", "which database runs in production",
             "what should I avoid cooking", "when is the birthday"]


@pytest.fixture(scope="module")
def embedder_stub(stack: Stack) -> Iterator[embedder_pb2_grpc.EmbedderServiceStub]:
    with stack.dial("embedding") as channel:
        yield embedder_pb2_grpc.EmbedderServiceStub(channel)


def plans() -> dict[str, float]:
    return {p: EXACT_SEARCHES.labels(p)._value.get() for p in ("exact", "hnsw")}


def test_exact_and_hnsw_agree_and_the_size_picks_the_plan(
        gateway: memory_pb2_grpc.MemoryServiceStub,
        embedder_stub: embedder_pb2_grpc.EmbedderServiceStub, dsn: str, ns: str) -> None:
    assert gateway.StoreBatch(memory_pb2.StoreBatchRequest(
        namespace=ns, memories=[memory_pb2.Memory(content=c) for c in CONTENTS],
        index_wait=WAIT), timeout=120).indexed
    response = embedder_stub.Embed(embedder_pb2.EmbedRequest(texts=QUESTIONS), timeout=30)
    vectors = [list(e.values) for e in response.embeddings]
    model = response.model_id

    class AnyShare(VectorRetriever):  # the session's table holds every test's memories
        def min_share(self, k: int) -> float:
            return 0.0

    async def search_all(exact_max: int) -> list[list[tuple[str, float]]]:
        async with AsyncConnectionPool(dsn, min_size=1, max_size=2, open=False) as pool:
            retriever = AnyShare(pool, len(vectors[0]), exact_max=exact_max)
            return [[(h.memory_id, round(h.similarity, 5))
                     for h in await retriever.search(ns, v, model, 5)] for v in vectors]

    before = plans()
    exact = asyncio.run(search_all(exact_max=len(CONTENTS)))
    middle = plans()
    hnsw = asyncio.run(search_all(exact_max=len(CONTENTS) - 1))
    after = plans()
    assert exact == hnsw
    assert middle["exact"] - before["exact"] == len(QUESTIONS)
    assert after["hnsw"] - middle["hnsw"] == len(QUESTIONS)

    sql, params = build_search_sql(Filters())
    params.update(ns=ns, vector=vector_literal(vectors[0]), model=model, k=5)

    def plan_of(plan: str) -> str:
        with psycopg.connect(dsn) as db, db.transaction():
            for name, value in plan_settings(plan, 200, "relaxed_order", 5):
                db.execute("SELECT set_config(%s, %s, true)", (name, value))
            return "\n".join(r[0] for r in db.execute("EXPLAIN " + sql, params))

    # On a 12-memory namespace the planner alone would sort the namespace's rows; the HNSW
    # plan takes the index all the same, the exact plan never does.
    assert INDEX_NAME in plan_of("hnsw")
    assert INDEX_NAME not in plan_of("exact")
