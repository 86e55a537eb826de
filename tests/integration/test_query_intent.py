"""The half of tests/unit/test_query_intent.py that needs a real Postgres and real gRPC."""

from __future__ import annotations

import pytest

from recallmesh.v1 import memory_pb2, memory_pb2_grpc
from tests.helpers import recall


@pytest.mark.integration
def test_the_response_names_the_intent_and_the_vector_leg_leads(
        gateway: memory_pb2_grpc.MemoryServiceStub, ns: str) -> None:
    ids = list(gateway.StoreBatch(memory_pb2.StoreBatchRequest(
        namespace=ns, memories=[
            memory_pb2.Memory(content="I have been growing tomatoes and basil on my balcony"),
            memory_pb2.Memory(content="Garden tips from the newsletter: any tips welcome"),
        ], index_wait=memory_pb2.IndexWait(wait=True, timeout_ms=30000)), timeout=60).ids)
    question = "What should I plant next? Any tips for my garden?"
    routed = recall(gateway, ns, question, explain=True)
    assert (routed.intent.name, routed.intent.phrase) == ("advice", "should i")
    assert not routed.degraded
    plain = recall(gateway, ns, question, explain=True,
                   fusion=memory_pb2.FusionOverrides(intent_routing=False))
    assert not plain.HasField("intent")
    assert {h.memory.id for h in routed.hits} == set(ids)  # lexical hits stay in the pool
    fact = recall(gateway, ns, "Which herbs grow on the balcony?")
    assert not fact.HasField("intent")
