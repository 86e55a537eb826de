"""The half of tests/unit/test_graph.py that needs a real Postgres and real gRPC."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from typing import Any

import grpc
import numpy as np
import psycopg
import pytest

from recallmesh.services.graph.loading import float4_arrays
from recallmesh.services.indexer import jobs
from recallmesh.stack.supervisor import Stack
from recallmesh.v1 import memory_pb2, memory_pb2_grpc, retriever_pb2, retriever_pb2_grpc
from tests.helpers import expect_status, one_row, recall, store
from tests.unit.test_graph import WAIT


def concepts_of(db: psycopg.Connection, ns: str) -> dict[str, int]:
    return dict(db.execute("SELECT alias, concept_id FROM concept_aliases WHERE namespace = %s",
                           (ns,)).fetchall())


def store_wait(gateway: memory_pb2_grpc.MemoryServiceStub, ns: str, *texts: str,
               **fields: Any) -> list[str]:
    response = gateway.StoreBatch(memory_pb2.StoreBatchRequest(
        namespace=ns, memories=[memory_pb2.Memory(content=t, **fields) for t in texts],
        index_wait=WAIT), timeout=40)
    assert response.indexed
    return list(response.ids)


@pytest.mark.integration
def test_surface_forms_resolve_to_one_concept(gateway: memory_pb2_grpc.MemoryServiceStub,
                                              db: psycopg.Connection, ns: str) -> None:
    store_wait(gateway, ns, "I have been learning Svelte lately.",
               "svelte makes components small.", "We rebuilt the site in the Svelte framework.",
               "Solid is another reactive library.")
    aliases = concepts_of(db, ns)
    assert aliases["svelte"] == aliases["svelte framework"]
    assert aliases["solid"] != aliases["svelte"]


@pytest.mark.integration
def test_graph_leg_finds_two_hop_memory_with_its_path(
        graph_gateway: memory_pb2_grpc.MemoryServiceStub, ns: str) -> None:
    a, b, _ = store_wait(
        graph_gateway, ns, "Priya adopted a greyhound named Biscuit.",
        "Biscuit needs a long walk along the Dunmore canal every morning.",
        "Quarterly taxes are due in April.")
    # No query word names a concept of the second memory ("walk" would reach 'long walk', and
    # "dog" 'greyhound', in one hop): only Priya -> Biscuit leads there.
    response = recall(graph_gateway, ns, "Where does Priya go every morning?", explain=True)
    graph_leg = {h.memory.id: [c for c in h.legs if c.leg == "graph"] for h in response.hits}
    assert graph_leg[b], "the two-hop memory came through the graph leg"
    reason = graph_leg[b][0].reason
    assert "'priya'" in reason and "biscuit" in reason and reason.endswith(b[:8])
    assert not response.degraded


@pytest.mark.integration
def test_second_stage_reaches_what_the_other_legs_best_hit_links_to(
        graph_gateway: memory_pb2_grpc.MemoryServiceStub,
        gateway: memory_pb2_grpc.MemoryServiceStub, stack: Stack, ns: str) -> None:
    # The query shares words with the first memory only; the second shares no word with
    # the query, just the concept 'Marisol' with the first. Without the second stage every
    # graph path starts at a query concept; with it, the walk also starts at the best hit.
    first, second, _ = store_wait(
        graph_gateway, ns, "Marisol bought a kayak in Tromsø.",
        "Marisol hides the spare house keys under the blue flowerpot.",
        "The quarterly report is late.")
    plain = recall(graph_gateway, ns, "kayak Tromsø", explain=True)
    assert not any(c.reason.startswith("memory") for h in plain.hits for c in h.legs
                   if c.leg == "graph")
    staged = recall(graph_gateway, ns, "kayak Tromsø", explain=True,
                    fusion=memory_pb2.FusionOverrides(graph_second_stage=True))
    reasons = {h.memory.id: c.reason for h in staged.hits for c in h.legs if c.leg == "graph"}
    assert reasons[second].startswith(f"memory {first[:8]}") and "'marisol'" in reasons[second]
    status = {leg.leg: leg for leg in staged.legs}["graph"]
    assert status.state == memory_pb2.LEG_STATE_OK and "second stage" in status.detail
    assert not staged.degraded
    # A gateway without the graph leg refuses it; the graph leg refuses malformed seeds.
    detail = expect_status(grpc.StatusCode.INVALID_ARGUMENT, gateway.Recall,
                           memory_pb2.RecallRequest(namespace=ns, query="kayak", fusion=(
                               memory_pb2.FusionOverrides(graph_second_stage=True))))
    assert "graph_second_stage needs the graph leg" in detail
    with stack.dial("graph") as channel:
        leg = retriever_pb2_grpc.RetrieverServiceStub(channel)
        detail = expect_status(grpc.StatusCode.INVALID_ARGUMENT, leg.Search,
                               retriever_pb2.SearchRequest(namespace=ns, query="kayak", k=5,
                                                           seed_memory_ids=["not-a-uuid"]))
        assert "seed_memory_ids must be UUIDs" in detail


@pytest.mark.integration
def test_graph_leg_metrics(stack: Stack, graph_gateway: memory_pb2_grpc.MemoryServiceStub,
                           ns: str) -> None:
    store_wait(graph_gateway, ns, "Noor repairs vintage radios.")
    recall(graph_gateway, ns, "Noor radios")
    recall(graph_gateway, ns, "Noor radios")
    metrics = urllib.request.urlopen(
        f"http://localhost:{stack.metrics['graph']}/metrics", timeout=5).read().decode()
    assert 'recallmesh_graph_cache_total{outcome="hit"}' in metrics
    assert "recallmesh_graph_load_seconds_count" in metrics
    assert any(line.startswith("grpc_server_handled_total{") and 'grpc_method="Search"' in line
               and 'grpc_code="OK"' in line for line in metrics.splitlines())


@pytest.mark.integration
def test_deleted_superseded_and_foreign_memories_never_come_back(
        graph_gateway: memory_pb2_grpc.MemoryServiceStub,
        gateway: memory_pb2_grpc.MemoryServiceStub, ns: str) -> None:
    old, other = store_wait(gateway, ns, "Arjun's favourite editor is Emacs.",
                            "Arjun's laptop runs Debian.")
    new = gateway.Store(memory_pb2.StoreRequest(namespace=ns, index_wait=WAIT, memory=(
        memory_pb2.Memory(content="Arjun's favourite editor is now Helix.", relations=[
            memory_pb2.MemoryRelation(type=memory_pb2.RELATION_TYPE_SUPERSEDES,
                                      target_id=old)]))), timeout=40).memory.id
    assert gateway.Get(memory_pb2.GetRequest(namespace=ns, id=old)).memory.HasField("valid_to")
    store_wait(gateway, ns + "-other", "Arjun's favourite editor is Vim.")

    def graph_ids(query: str) -> set[str]:
        response = recall(graph_gateway, ns, query, explain=True,
                          fusion=memory_pb2.FusionOverrides(skip_legs=["lexical", "vector"]))
        assert [leg.state for leg in response.legs if leg.leg == "graph"] == [
            memory_pb2.LEG_STATE_OK]
        return {h.memory.id for h in response.hits}

    found = graph_ids("Arjun editor")
    assert new in found and other in found and old not in found  # superseded, and no Vim
    gateway.Delete(memory_pb2.DeleteRequest(namespace=ns, id=other))
    assert other not in graph_ids("Arjun editor")


@pytest.mark.integration
def test_changed_graph_is_reloaded_in_the_background_and_stale_hits_are_checked(
        stack: Stack, graph_gateway: memory_pb2_grpc.MemoryServiceStub,
        gateway: memory_pb2_grpc.MemoryServiceStub, ns: str) -> None:
    first, second = store_wait(gateway, ns, "Lena keeps bees on the allotment.",
                               "Lena sells the allotment honey at the Saturday market.")
    only_graph = memory_pb2.FusionOverrides(skip_legs=["lexical", "vector"])

    def graph_ids() -> set[str]:
        response = recall(graph_gateway, ns, "Lena allotment", fusion=only_graph)
        return {h.memory.id for h in response.hits}

    assert graph_ids() == {first, second}  # the first search waits for the load
    (third,) = store_wait(gateway, ns, "Lena's allotment shed needs a new roof.")
    gateway.Delete(memory_pb2.DeleteRequest(namespace=ns, id=second))
    # The graph changed twice; a search does not wait for the reload, and the deleted
    # memory is gone at once even from the stale graph.
    assert second not in graph_ids()
    deadline = time.monotonic() + 10
    while third not in (found := graph_ids()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert found == {first, third}
    metrics = urllib.request.urlopen(
        f"http://localhost:{stack.metrics['graph']}/metrics", timeout=5).read().decode()
    assert 'recallmesh_graph_cache_total{outcome="stale"}' in metrics


@pytest.mark.integration
def test_concept_vectors_load_from_binary_arrays(db: psycopg.Connection) -> None:
    rows = db.execute(
        "SELECT array_send(v) FROM (VALUES (1, ARRAY[1.5, -2.25, 3e-8]::real[]), "
        "(2, NULL), (3, ARRAY[7]::real[]), (4, ARRAY[0.1, 0.2, 0.3]::real[])) t(i, v) "
        "ORDER BY i").fetchall()
    got = float4_arrays([r[0] for r in rows])
    expected = np.asarray([[1.5, -2.25, 3e-8], [0, 0, 0], [0, 0, 0], [0.1, 0.2, 0.3]],
                          dtype=np.float32)
    assert got.dtype == np.float32 and np.array_equal(got, expected)
    assert float4_arrays([None]).shape == (1, 1)


@pytest.mark.integration
def test_relations_are_validated_and_nothing_is_half_written(
        gateway: memory_pb2_grpc.MemoryServiceStub, db: psycopg.Connection, ns: str) -> None:
    target = store(gateway, ns, "A memory to point at.")
    before = db.execute("SELECT count(*) FROM memories WHERE namespace = %s", (ns,)).fetchone()
    bad_type = memory_pb2.Memory(content="x", relations=[
        memory_pb2.MemoryRelation(type=memory_pb2.RELATION_TYPE_UNSPECIFIED, target_id=target)])
    expect_status(grpc.StatusCode.INVALID_ARGUMENT, gateway.Store,
                  memory_pb2.StoreRequest(namespace=ns, memory=bad_type))
    missing = memory_pb2.Memory(content="x", relations=[memory_pb2.MemoryRelation(
        type=memory_pb2.RELATION_TYPE_ABOUT, target_id="00000000-0000-4000-8000-000000000009")])
    details = expect_status(grpc.StatusCode.NOT_FOUND, gateway.StoreBatch,
                            memory_pb2.StoreBatchRequest(namespace=ns, memories=[
                                memory_pb2.Memory(content="fine"), missing]))
    assert "memories[1].relations[0]" in details
    foreign = memory_pb2.Memory(content="x", relations=[memory_pb2.MemoryRelation(
        type=memory_pb2.RELATION_TYPE_ABOUT, target_id=target)])
    expect_status(grpc.StatusCode.NOT_FOUND, gateway.Store,
                  memory_pb2.StoreRequest(namespace=ns + "-x", memory=foreign))
    after = db.execute("SELECT count(*) FROM memories WHERE namespace = %s", (ns,)).fetchone()
    assert before == after
    assert one_row(db.execute("SELECT count(*) FROM memory_edges WHERE namespace = %s",
                              (ns,)))[0] == 0


@pytest.mark.integration
def test_sensitive_memories_get_no_concepts(gateway: memory_pb2_grpc.MemoryServiceStub,
                                            db: psycopg.Connection, ns: str) -> None:
    (secret,) = store_wait(gateway, ns, "My bank PIN is hidden under the Zanzibar mug.",
                           sensitive=True)
    store_wait(gateway, ns, "The Zanzibar mug is blue.")
    linked = one_row(db.execute("SELECT count(*) FROM memory_concepts WHERE memory_id = %s",
                                (secret,)))[0]
    assert linked == 0
    assert "pin" not in concepts_of(db, ns) and "bank pin" not in concepts_of(db, ns)


@pytest.mark.integration
def test_memories_without_concepts_are_queued_and_get_them(
        stack: Stack, gateway: memory_pb2_grpc.MemoryServiceStub, db: psycopg.Connection,
        ns: str) -> None:
    """`recallmesh jobs concepts` (jobs.queue_for_concepts): the memories stored while
    extraction was off (their links removed here) are embedded again and get their concepts;
    a sensitive one is never queued (docs/decisions/0025)."""
    ids = store_wait(gateway, ns, "Priya learns Svelte with Lena.", "Lena plays the cello.")
    store_wait(gateway, ns, "Priya's Svelte login is owl-17.", sensitive=True)
    db.execute("DELETE FROM memory_concepts WHERE memory_id = ANY(%s::uuid[])", (ids,))
    done = subprocess.run([sys.executable, "-m", "recallmesh.cli", "jobs", "concepts", "-n", ns],
                          env={**os.environ, "RECALLMESH_DSN": stack.dsn, "COLUMNS": "200"},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "2 memories without concepts queued" in done.stdout, done
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        linked = one_row(db.execute(
            "SELECT count(DISTINCT memory_id) FROM memory_concepts "
            "WHERE memory_id = ANY(%s::uuid[])", (ids,)))[0]
        if linked == 2:
            break
        time.sleep(0.2)
    assert linked == 2
    assert jobs.queue_for_concepts(db, ns) == 0  # every ordinary memory has its concepts


@pytest.mark.integration
def test_graph_leg_outage_degrades_like_any_leg(stack: Stack,
                                                graph_gateway: memory_pb2_grpc.MemoryServiceStub,
                                                ns: str) -> None:
    store_wait(graph_gateway, ns, "Ola keeps bees on the roof.")
    healthy = recall(graph_gateway, ns, "Ola bees")
    assert not healthy.degraded
    stack.stop_service("graph")
    try:
        response = recall(graph_gateway, ns, "Ola bees")
        assert response.degraded and response.hits
        states = {leg.leg: leg.state for leg in response.legs}
        assert states["graph"] == memory_pb2.LEG_STATE_ERROR
        assert states["lexical"] == states["vector"] == memory_pb2.LEG_STATE_OK
    finally:
        stack.start_service("graph")
    time.sleep(0.6)  # the gateway's channel retries a dead peer at most every 500 ms
    assert not recall(graph_gateway, ns, "Ola bees").degraded


@pytest.mark.integration
def test_a_filter_the_graph_does_not_cache_runs_in_the_database(
        graph_gateway: memory_pb2_grpc.MemoryServiceStub, ns: str) -> None:
    # Two memories reached through 'Priya' -> 'Biscuit'; only one carries the metadata asked
    # for. The graph caches category, tags and created_at, not metadata: the leg ranks every
    # reachable memory and the database keeps those that pass.
    a, b, c = store_wait(
        graph_gateway, ns, "Priya adopted a greyhound named Biscuit.",
        "Biscuit needs a long walk along the Dunmore canal every morning.",
        "Biscuit sleeps on the blue sofa after lunch.")
    graph_gateway.Update(memory_pb2.UpdateRequest(
        namespace=ns, id=c, memory=memory_pb2.Memory(metadata={"source": "vet"}),
        update_mask={"paths": ["metadata"]}), timeout=10)
    filters = memory_pb2.RecallFilters(metadata=[memory_pb2.MetadataFilter(key="source",
                                                                           values=["vet"])])
    response = recall(graph_gateway, ns, "Where does Priya's dog sleep?", explain=True,
                      filters=filters)
    graph_hits = [h.memory.id for h in response.hits if any(x.leg == "graph" for x in h.legs)]
    assert graph_hits == [c] and [h.memory.id for h in response.hits] == [c]
    assert not response.degraded
