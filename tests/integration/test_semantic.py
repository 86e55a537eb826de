"""Integration: semantic recall end to end — embedding service, indexer, vector leg, gateway.

Everything runs as real processes against the session's embedded Postgres;
the indexer embeds through the recording proxy (tests/recording_embedder.py).
"""

from __future__ import annotations

import re
import time
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import grpc
import psycopg
import pytest
from google.protobuf.field_mask_pb2 import FieldMask
from google.protobuf.timestamp_pb2 import Timestamp

from recallmesh.embedding_models.manifest import ModelManifest
from recallmesh.policy import DEFAULT_LEG_WEIGHTS
from recallmesh.stack.supervisor import Stack
from recallmesh.v1 import (
    embedder_pb2,
    embedder_pb2_grpc,
    memory_pb2,
    memory_pb2_grpc,
    retriever_pb2,
    retriever_pb2_grpc,
)
from tests.helpers import expect_status, one_row, recall
from tests.recording_embedder import RecordingEmbedder

pytestmark = pytest.mark.integration

WAIT = memory_pb2.IndexWait(wait=True, timeout_ms=30000)

DISTRACTORS = [
    "Lives in Lisbon with two cats",
    "Allergic to peanuts and shellfish",
    "Runs a half marathon every spring",
    "The team deploys on Fridays only after the QA sign-off",
    "Birthday is on the 14th of March",
    "Drinks oat milk in coffee",
    "Uses Postgres 16 in production",
    "Learning Portuguese on weekends",
    "Daughter starts school in September",
    "Wants weekly reports as PDF",
    "The office wifi password rotates monthly",
    "Reads science fiction before bed",
]


def ts(year: int, month: int = 1, day: int = 1) -> Timestamp:
    t = Timestamp()
    t.FromDatetime(datetime(year, month, day, tzinfo=UTC))
    return t


def store_all(gateway: memory_pb2_grpc.MemoryServiceStub, ns: str,
              memories: list[memory_pb2.Memory]) -> list[str]:
    response = gateway.StoreBatch(
        memory_pb2.StoreBatchRequest(namespace=ns, memories=memories, index_wait=WAIT), timeout=40
    )
    assert response.indexed
    return list(response.ids)


def texts(*contents: str, **fields: Any) -> list[memory_pb2.Memory]:
    return [memory_pb2.Memory(content=c, **fields) for c in contents]


@pytest.fixture(scope="module")
def embedder_stub(stack: Stack) -> Iterator[embedder_pb2_grpc.EmbedderServiceStub]:
    with stack.dial("embedding") as channel:
        yield embedder_pb2_grpc.EmbedderServiceStub(channel)


@pytest.fixture(scope="module")
def vector_leg(stack: Stack) -> Iterator[retriever_pb2_grpc.RetrieverServiceStub]:
    with stack.dial("vector") as channel:
        yield retriever_pb2_grpc.RetrieverServiceStub(channel)


def query_vector(
        embedder_stub: embedder_pb2_grpc.EmbedderServiceStub, text: str) -> tuple[list[float], str]:
    response = embedder_stub.Embed(embedder_pb2.EmbedRequest(texts=[text]), timeout=10)
    return list(response.embeddings[0].values), response.model_id


def vector_search(vector_leg: retriever_pb2_grpc.RetrieverServiceStub,
                  embedder_stub: embedder_pb2_grpc.EmbedderServiceStub, ns: str, text: str,
                  k: int = 10, **fields: Any) -> list[str]:
    vector, model = query_vector(embedder_stub, text)
    request = retriever_pb2.SearchRequest(
        namespace=ns, query=text, query_vector=vector, vector_model=model, k=k, **fields
    )
    return [c.memory_id for c in vector_leg.Search(request, timeout=10).candidates]


def vectors_of(db: psycopg.Connection, ids: list[str]) -> dict[str, str | None]:
    rows = db.execute(
        "SELECT id::text, embedding::text FROM memories WHERE id = ANY(%s::uuid[])", (ids,)
    ).fetchall()
    return dict(rows)


# ------------------------------------------------------------------ recall by meaning


def test_paraphrase_found_by_meaning_among_distractors(gateway: memory_pb2_grpc.MemoryServiceStub,
                                                       ns: str) -> None:
    [target, *_] = store_all(gateway, ns, texts("Prefers Svelte for frontend work", *DISTRACTORS))
    response = recall(gateway, ns, "what UI library do they like?", k=5, explain=True)
    assert response.hits[0].memory.id == target
    assert not response.degraded
    states = {leg.leg: leg.state for leg in response.legs}
    assert states == {"lexical": memory_pb2.LEG_STATE_OK, "vector": memory_pb2.LEG_STATE_OK}
    top = {c.leg: (c.rank, c.score) for c in response.hits[0].legs}
    assert top["vector"][0] == 1 and 0 < top["vector"][1] <= 1  # cosine similarity


def test_hybrid_explain_shows_both_legs(gateway: memory_pb2_grpc.MemoryServiceStub,
                                        ns: str) -> None:
    [target] = store_all(gateway, ns, texts("Maya's favourite frontend framework is Svelte"))
    store_all(gateway, ns, texts(*DISTRACTORS[:4]))
    # context propagation off: the score below is the fusion arithmetic alone
    response = recall(gateway, ns, "Svelte framework", explain=True,
                      fusion=memory_pb2.FusionOverrides(method="rrf", context_hits=0))
    hit = response.hits[0]
    assert hit.memory.id == target
    legs = [c for c in hit.legs if c.leg != "ranker"]
    assert {c.leg for c in legs} == {"lexical", "vector"}
    assert all(c.rank == 1 for c in legs)
    # RRF (k=60, both legs rank 1, the default weights lexical + vector) + the exact bonus
    # (5% of the best possible, an AND match), then the importance prior at the default
    # importance 0.5: * (0.7 + 0.3 * 0.5).
    best = (DEFAULT_LEG_WEIGHTS["lexical"] + DEFAULT_LEG_WEIGHTS["vector"]) / 61
    ranker = next(c for c in hit.legs if c.leg == "ranker")  # the hit's score is its estimate
    assert (ranker.rank, ranker.score) == (1, pytest.approx((best + 0.05 * best) * 0.85))
    assert 0 < hit.score < 1
    assert response.fusion == "rrf (service)"


# ------------------------------------------------------------------ vector leg contract


def test_vector_leg_honours_namespace_and_filters(
        vector_leg: retriever_pb2_grpc.RetrieverServiceStub,
        embedder_stub: embedder_pb2_grpc.EmbedderServiceStub,
        gateway: memory_pb2_grpc.MemoryServiceStub, ns: str) -> None:
    other_ns = ns + "-other"
    store_all(gateway, other_ns, texts("Prefers Svelte for frontend work"))
    old, tagged, plain = store_all(gateway, ns, [
        memory_pb2.Memory(content="Prefers Svelte for frontend work", category="preference",
                          created_at=ts(2023)),
        memory_pb2.Memory(content="Likes React for UI work", category="preference",
                          tags=["ui"], created_at=ts(2025)),
        memory_pb2.Memory(content="Enjoys Vue for web interfaces", category="note",
                          created_at=ts(2025)),
    ])
    query = "which UI framework?"
    assert set(vector_search(vector_leg, embedder_stub, ns, query)) == {old, tagged, plain}
    assert vector_search(vector_leg, embedder_stub, ns, query, k=1)[0] in {old, tagged, plain}
    by_category = vector_search(vector_leg, embedder_stub, ns, query,
                                filters=memory_pb2.RecallFilters(categories=["preference"]))
    assert set(by_category) == {old, tagged}
    by_tag = vector_search(vector_leg, embedder_stub, ns, query,
                           filters=memory_pb2.RecallFilters(tags=["ui"]))
    assert by_tag == [tagged]
    recent = vector_search(vector_leg, embedder_stub, ns, query,
                           filters=memory_pb2.RecallFilters(created_after=ts(2024)))
    assert set(recent) == {tagged, plain}
    # Deterministic: the same search twice gives the same order.
    assert vector_search(vector_leg, embedder_stub, ns, query) == vector_search(
        vector_leg, embedder_stub, ns, query)


def test_vector_leg_only_compares_vectors_of_the_same_model(
        vector_leg: retriever_pb2_grpc.RetrieverServiceStub,
        embedder_stub: embedder_pb2_grpc.EmbedderServiceStub,
        gateway: memory_pb2_grpc.MemoryServiceStub, ns: str) -> None:
    store_all(gateway, ns, texts("Prefers Svelte for frontend work"))
    vector, _ = query_vector(embedder_stub, "svelte")
    request = retriever_pb2.SearchRequest(namespace=ns, query="svelte", query_vector=vector,
                                          vector_model="some-other-model", k=10)
    assert list(vector_leg.Search(request, timeout=10).candidates) == []


def test_query_vector_scale_does_not_matter(
        vector_leg: retriever_pb2_grpc.RetrieverServiceStub,
        embedder_stub: embedder_pb2_grpc.EmbedderServiceStub,
        gateway: memory_pb2_grpc.MemoryServiceStub, ns: str) -> None:
    [memory_id] = store_all(gateway, ns, texts("Prefers Svelte for frontend work"))
    vector, model = query_vector(embedder_stub, "svelte")
    for scale in (70000.0, 1e-12):  # beyond halfvec's range / below its precision
        request = retriever_pb2.SearchRequest(namespace=ns, query="svelte", k=5,
                                              query_vector=[x * scale for x in vector],
                                              vector_model=model)
        [hit] = vector_leg.Search(request, timeout=10).candidates
        assert hit.memory_id == memory_id and 0 < hit.score <= 1.0001


DIM = ModelManifest.load().dimension  # the stored column's width (the served model's)


@pytest.mark.parametrize("vector, model, message", [
    ([0.1] * (DIM - 1), "m", f"{DIM - 1} dimensions"),
    ([0.0] * DIM, "m", "zero vector"),
    ([1e-300] * DIM, "m", "zero vector"),
    ([float("nan")] + [0.1] * (DIM - 1), "m", "finite"),
    ([], "m", "needs query_vector"),
    ([0.1] * DIM, "", "needs vector_model"),
])
def test_bad_query_vectors_are_invalid_argument(
        vector_leg: retriever_pb2_grpc.RetrieverServiceStub, ns: str, vector: list[float],
        model: str, message: str) -> None:
    details = expect_status(
        grpc.StatusCode.INVALID_ARGUMENT, vector_leg.Search,
        retriever_pb2.SearchRequest(namespace=ns, query="q", query_vector=vector,
                                    vector_model=model, k=5))
    assert message in details


# ------------------------------------------------------------------ write path


def test_store_waits_for_index_and_reports_it(gateway: memory_pb2_grpc.MemoryServiceStub, ns: str,
                                              db: psycopg.Connection) -> None:
    response = gateway.Store(memory_pb2.StoreRequest(
        namespace=ns, memory=memory_pb2.Memory(content="Keeps a sourdough starter"),
        index_wait=WAIT), timeout=40)
    assert response.indexed
    assert vectors_of(db, [response.memory.id])[response.memory.id] is not None
    secret = gateway.Store(memory_pb2.StoreRequest(
        namespace=ns, memory=memory_pb2.Memory(content="PIN is 4711", sensitive=True)),
        timeout=10)
    assert secret.indexed  # nothing to index, ever


def test_sensitive_memories_never_reach_the_embedder(gateway: memory_pb2_grpc.MemoryServiceStub,
                                                     ns: str, db: psycopg.Connection,
                                                     recorder: RecordingEmbedder) -> None:
    secret_texts = [f"Sensitive {ns}: bank password hunter{i}" for i in range(3)]
    memories = [memory_pb2.Memory(content=t, sensitive=True) for t in secret_texts]
    memories.append(memory_pb2.Memory(content=f"Public {ns}: likes jazz"))
    ids = store_all(gateway, ns, memories)
    vectors = vectors_of(db, ids)
    assert [vectors[i] is None for i in ids] == [True, True, True, False]
    assert one_row(db.execute(
        "SELECT count(*) FROM embedding_jobs WHERE memory_id = ANY(%s::uuid[])", (ids,)))[0] == 0
    # Still found, lexically (top of the lexical list; plain RRF may tie it with the
    # vector leg's best, which is the known weakness the fusion issue addresses).
    response = recall(gateway, ns, "bank password hunter1", explain=True)
    found = {h.memory.id: {c.leg: c.rank for c in h.legs if c.leg != "ranker"}
             for h in response.hits}
    assert found[ids[1]] == {"lexical": 1}
    # Turning a memory sensitive drops its vector in the same transaction...
    public = ids[3]
    gateway.Update(memory_pb2.UpdateRequest(
        namespace=ns, id=public, memory=memory_pb2.Memory(sensitive=True),
        update_mask=FieldMask(paths=["sensitive"])), timeout=10)
    assert vectors_of(db, [public])[public] is None
    # ...and a content change of a sensitive memory enqueues nothing.
    gateway.Update(memory_pb2.UpdateRequest(
        namespace=ns, id=public, memory=memory_pb2.Memory(content=f"Sensitive {ns}: new text"),
        update_mask=FieldMask(paths=["content"])), timeout=10)
    assert one_row(db.execute("SELECT count(*) FROM embedding_jobs WHERE memory_id = %s",
                              (public,)))[0] == 0
    # The recorder saw the public text only, and never any sensitive one (session-wide).
    assert f"Public {ns}: likes jazz" in recorder.documents
    assert not any(t in recorder.documents for t in secret_texts)
    assert recorder.violations == []


def secrets_counted(stack: Stack) -> dict[str, float]:
    text = urllib.request.urlopen(f"http://localhost:{stack.metrics['gateway']}/metrics",
                                  timeout=5).read().decode()
    return {m.group(1): float(m.group(2)) for m in re.finditer(
        r'^recallmesh_secrets_total\{outcome="(\w+)"\} (\S+)$', text, re.MULTILINE)}


def test_a_secret_is_kept_only_for_a_question_that_asks_for_it_in_meaning(
        stack: Stack, gateway: memory_pb2_grpc.MemoryServiceStub, ns: str) -> None:
    """Docs/decisions/0023: a question about a subject only the secret names ("bike") is
    answered by the ordinary memory that speaks of it in other words ("bicycle"), and the
    secret is withheld; a question that asks for what it guards gets it first. When the
    meaning cannot be read (the request skips the vector leg) the secret is withheld."""
    bicycle, lock, _, _, wifi = store_all(gateway, ns, [
        memory_pb2.Memory(content="Ana leaves her bicycle in the hallway."),
        memory_pb2.Memory(content="Ana's bike lock combination is 4-1-7-2.", sensitive=True),
        memory_pb2.Memory(content="Ana works as a nurse at St Mary's."),
        memory_pb2.Memory(content="Tom's flat has fast fibre internet."),
        memory_pb2.Memory(content="Tom's wifi password is river-Nest-12.", sensitive=True),
    ])
    before = secrets_counted(stack)

    def ids(query: str, **fields: Any) -> list[str]:
        return [h.memory.id for h in recall(gateway, ns, query, **fields).hits]

    harmless = ids("Where does Ana keep her bike?")
    assert lock not in harmless and bicycle in harmless[:3]
    assert wifi not in ids("How fast is Tom's wifi?")
    assert ids("What opens Ana's bike lock?")[0] == lock
    assert ids("What is Tom's wifi password?")[0] == wifi
    assert wifi not in ids("What is Tom's wifi password?", fusion=memory_pb2.FusionOverrides(
        skip_legs=["vector"]))
    after = secrets_counted(stack)
    change = {k: after.get(k, 0.0) - before.get(k, 0.0) for k in after}
    assert change["offered"] >= 2 and change["withheld"] >= 2 and change["unread"] >= 1, change


def test_update_reembeds_and_delete_removes_from_vector_leg(
        gateway: memory_pb2_grpc.MemoryServiceStub,
        vector_leg: retriever_pb2_grpc.RetrieverServiceStub,
        embedder_stub: embedder_pb2_grpc.EmbedderServiceStub, ns: str,
        db: psycopg.Connection) -> None:
    [memory_id] = store_all(gateway, ns, texts("Prefers Svelte for frontend work"))
    before = vectors_of(db, [memory_id])[memory_id]
    response = gateway.Update(memory_pb2.UpdateRequest(
        namespace=ns, id=memory_id,
        memory=memory_pb2.Memory(content="Grows tomatoes on the balcony"),
        update_mask=FieldMask(paths=["content"]), index_wait=WAIT), timeout=40)
    assert response.indexed and response.memory.content == "Grows tomatoes on the balcony"
    after = vectors_of(db, [memory_id])[memory_id]
    assert after is not None and after != before
    assert vector_search(vector_leg, embedder_stub, ns, "gardening vegetables") == [memory_id]
    # A metadata-only change keeps the vector.
    gateway.Update(memory_pb2.UpdateRequest(
        namespace=ns, id=memory_id, memory=memory_pb2.Memory(category="hobby"),
        update_mask=FieldMask(paths=["category"])), timeout=10)
    assert vectors_of(db, [memory_id])[memory_id] == after
    gateway.Delete(memory_pb2.DeleteRequest(namespace=ns, id=memory_id), timeout=10)
    assert vectors_of(db, [memory_id])[memory_id] is None
    assert vector_search(vector_leg, embedder_stub, ns, "gardening vegetables") == []


def test_bad_updates_are_rejected_without_writing(gateway: memory_pb2_grpc.MemoryServiceStub,
                                                  ns: str, db: psycopg.Connection) -> None:
    [memory_id] = store_all(gateway, ns, texts("Original text"))
    cases = [
        (FieldMask(paths=[]), memory_pb2.Memory(), "at least one field"),
        (FieldMask(paths=["namespace"]), memory_pb2.Memory(), "cannot update namespace"),
        (FieldMask(paths=["content"]), memory_pb2.Memory(content="  "), "must not be empty"),
        (FieldMask(paths=["importance"]), memory_pb2.Memory(importance=2), "within [0, 1]"),
        (FieldMask(paths=["valid_to"]), memory_pb2.Memory(valid_to=ts(2000)), None),
    ]
    gateway.Update(memory_pb2.UpdateRequest(
        namespace=ns, id=memory_id, memory=memory_pb2.Memory(valid_from=ts(2020)),
        update_mask=FieldMask(paths=["valid_from"])), timeout=10)
    for mask, memory, message in cases:
        details = expect_status(grpc.StatusCode.INVALID_ARGUMENT, gateway.Update,
                                memory_pb2.UpdateRequest(namespace=ns, id=memory_id,
                                                         memory=memory, update_mask=mask))
        if message:
            assert message in details
    row = one_row(db.execute("SELECT content, importance, valid_to FROM memories WHERE id = %s",
                             (memory_id,)))
    assert row == ("Original text", 0.5, None)
    expect_status(grpc.StatusCode.NOT_FOUND, gateway.Update, memory_pb2.UpdateRequest(
        namespace=ns + "x", id=memory_id, memory=memory_pb2.Memory(category="c"),
        update_mask=FieldMask(paths=["category"])))


def test_embedding_service_down_loses_nothing(stack: Stack,
                                              gateway: memory_pb2_grpc.MemoryServiceStub, ns: str,
                                              db: psycopg.Connection) -> None:
    """Stop the model, store 50, restart it: all 50 get exactly one vector, nothing duplicated."""
    stack.stop_service("embedding")
    try:
        ids = []
        for i in range(5):
            response = gateway.StoreBatch(memory_pb2.StoreBatchRequest(
                namespace=ns,
                memories=texts(*(f"outage memory {i}-{j} about topic {i * 10 + j}"
                                 for j in range(10))),
                index_wait=memory_pb2.IndexWait(wait=True, timeout_ms=300)), timeout=10)
            assert not response.indexed  # stored, but the model is down
            ids.extend(response.ids)
        # Recall still answers, lexically, and says the vector leg failed.
        response = recall(gateway, ns, "outage memory topic 7")
        assert response.degraded and response.hits
        vector = next(leg for leg in response.legs if leg.leg == "vector")
        assert vector.state == memory_pb2.LEG_STATE_ERROR and "embedding" in vector.detail
        # The indexer keeps trying and records why it fails; nothing is dropped.
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            jobs = one_row(db.execute(
                "SELECT count(*), min(attempts), bool_and(last_error IS NOT NULL) "
                "FROM embedding_jobs WHERE memory_id = ANY(%s::uuid[])", (ids,)))
            if jobs[1] >= 1 and jobs[2]:
                break
            time.sleep(0.1)
        assert jobs == (50, jobs[1], True) and jobs[1] >= 1
    finally:
        stack.start_service("embedding")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        done = one_row(db.execute("SELECT count(*) FROM memories WHERE id = ANY(%s::uuid[]) "
                                  "AND embedding IS NOT NULL", (ids,)))[0]
        if done == 50:
            break
        time.sleep(0.2)
    assert done == 50
    assert one_row(db.execute("SELECT count(*) FROM memories WHERE namespace = %s",
                              (ns,)))[0] == 50
    assert one_row(db.execute(
        "SELECT count(*) FROM embedding_jobs WHERE memory_id = ANY(%s::uuid[])", (ids,)))[0] == 0
    response = recall(gateway, ns, "outage memory topic 7")
    assert not response.degraded


def test_importance_sort_orders_the_fused_pool_by_importance(
        gateway: memory_pb2_grpc.MemoryServiceStub, ns: str) -> None:
    low, high, mid = store_all(gateway, ns, [
        memory_pb2.Memory(content="Prefers Svelte for frontend work", importance=0.1),
        memory_pb2.Memory(content="Uses React at the day job", importance=0.9),
        memory_pb2.Memory(content="Tried Vue once for a side project", importance=0.5),
    ])
    # every candidate, the relevance floor off: the order, not the floor, is under test
    response = recall(gateway, ns, "frontend framework", sort_by=memory_pb2.SORT_BY_IMPORTANCE,
                      fusion=memory_pb2.FusionOverrides(min_score=0.0))
    assert [h.memory.id for h in response.hits] == [high, mid, low]
