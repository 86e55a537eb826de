"""The embedding micro-batcher's bounded queue: beyond `max_queue_texts` waiting texts a
request is refused at once (RESOURCE_EXHAUSTED), and a request whose deadline passes while it
waits is dropped, never embedded."""

from __future__ import annotations

import asyncio
import threading
import time

import numpy as np
import pytest
from prometheus_client import REGISTRY

from recallmesh.services.embedding.batching import MicroBatcher
from recallmesh.services.embedding.core import Embedded
from recallmesh.shared.errors import DeadlineExceeded, ResourceExhausted


def expired() -> float:
    return REGISTRY.get_sample_value("recallmesh_embedding_expired_total") or 0.0


class GatedModel:
    """Blocks every model run until the test opens the gate; records what it embedded."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.running = threading.Event()
        self.embedded: list[str] = []

    def __call__(self, texts: list[str], kind: str) -> Embedded:
        self.running.set()
        self.gate.wait(10)
        self.embedded.extend(texts)
        return Embedded(np.ones((len(texts), 2), dtype=np.float32), [False] * len(texts))


async def busy(batcher: MicroBatcher, model: GatedModel) -> asyncio.Future[Embedded]:
    """A first request that occupies the model, so that later ones queue."""
    first = asyncio.ensure_future(batcher.embed(["first"], "query"))
    await asyncio.get_running_loop().run_in_executor(None, model.running.wait, 5)
    return first


async def test_a_full_queue_refuses_at_once_and_recovers() -> None:
    model = GatedModel()
    batcher = MicroBatcher(model, max_batch=8, max_wait_s=0.0, max_queue_texts=4)
    batcher.start()
    try:
        first = await busy(batcher, model)
        queued = [asyncio.ensure_future(batcher.embed([f"q{i}a", f"q{i}b"], "query"))
                  for i in range(2)]
        await asyncio.sleep(0.05)  # 4 texts wait
        started = time.monotonic()
        with pytest.raises(ResourceExhausted) as info:
            await batcher.embed(["one more"], "query")
        assert time.monotonic() - started < 0.1
        assert info.value.reason == "embedding_queue"
        assert "4 texts waiting" in info.value.message
        model.gate.set()
        results = await asyncio.wait_for(asyncio.gather(first, *queued), 5)
        assert [len(r.vectors) for r in results] == [1, 2, 2]
        assert len((await batcher.embed(["after"], "query")).vectors) == 1  # room again
        assert "one more" not in model.embedded
    finally:
        model.gate.set()
        await batcher.close()


async def test_a_lone_request_larger_than_the_bound_is_taken_when_nothing_waits() -> None:
    model = GatedModel()
    model.gate.set()
    batcher = MicroBatcher(model, max_batch=64, max_wait_s=0.0, max_queue_texts=4)
    batcher.start()
    try:
        result = await batcher.embed([f"t{i}" for i in range(10)], "document")
        assert len(result.vectors) == 10
    finally:
        await batcher.close()


async def test_a_request_whose_deadline_passed_while_queued_is_dropped_not_embedded() -> None:
    model = GatedModel()
    batcher = MicroBatcher(model, max_batch=8, max_wait_s=0.0, max_queue_texts=64)
    batcher.start()
    before = expired()
    try:
        first = await busy(batcher, model)
        late = asyncio.ensure_future(batcher.embed(["too late"], "query", timeout_s=0.05))
        patient = asyncio.ensure_future(batcher.embed(["in time"], "query", timeout_s=10))
        await asyncio.sleep(0.2)  # the first deadline passes while the model is busy
        model.gate.set()
        with pytest.raises(DeadlineExceeded):
            await asyncio.wait_for(late, 5)
        assert len((await asyncio.wait_for(patient, 5)).vectors) == 1
        await first
    finally:
        model.gate.set()
        await batcher.close()
    assert "too late" not in model.embedded
    assert "in time" in model.embedded
    assert expired() - before == 1


class DocumentGatedModel(GatedModel):
    """Blocks document runs until the gate opens; queries run at once."""

    def __call__(self, texts: list[str], kind: str) -> Embedded:
        if kind == "query":
            self.embedded.extend(texts)
            return Embedded(np.ones((len(texts), 2), dtype=np.float32), [False] * len(texts))
        return super().__call__(texts, kind)


async def test_a_query_is_not_held_behind_a_document_run() -> None:
    """A recall waits for its query vector under a budget of a few hundred milliseconds; the
    indexer's documents have seconds: a burst of writes must not queue recalls behind it."""
    model = DocumentGatedModel()
    batcher = MicroBatcher(model, max_batch=2, max_wait_s=0.0, max_queue_texts=64)
    batcher.start()
    try:
        docs = [asyncio.ensure_future(batcher.embed([f"d{i}"], "document")) for i in range(4)]
        await asyncio.get_running_loop().run_in_executor(None, model.running.wait, 5)
        query = await asyncio.wait_for(batcher.embed(["q"], "query", timeout_s=1.0), 2)
        assert len(query.vectors) == 1
        assert model.embedded == ["q"]  # the documents are still in their run
        assert not any(d.done() for d in docs)
        model.gate.set()
        await asyncio.wait_for(asyncio.gather(*docs), 5)
        assert sorted(model.embedded) == ["d0", "d1", "d2", "d3", "q"]
    finally:
        model.gate.set()
        await batcher.close()


async def test_a_request_the_queue_could_not_serve_within_its_deadline_is_refused_at_once() -> None:
    model = GatedModel()
    batcher = MicroBatcher(model, max_batch=1, max_wait_s=0.0, max_queue_texts=256)
    batcher.lanes["query"].s_per_text = 0.1
    batcher.lanes["document"].s_per_text = 0.5
    batcher.start()
    try:
        first = await busy(batcher, model)
        queued = [asyncio.ensure_future(batcher.embed([f"q{i}"], "query")) for i in range(5)]
        docs = [asyncio.ensure_future(batcher.embed([f"d{i}"], "document")) for i in range(4)]
        await asyncio.sleep(0.02)
        assert 0.5 <= batcher.wait_estimate_s("query") <= 0.61  # 5 queries, not the documents
        assert batcher.wait_estimate_s("document") >= 1.5  # 3 queued behind a running one
        started = time.monotonic()
        with pytest.raises(ResourceExhausted) as info:
            await batcher.embed(["hurried"], "query", timeout_s=1.0)  # 0.6 s > half
        assert time.monotonic() - started < 0.1
        assert info.value.reason == "embedding_deadline"
        assert "more than half the call's 1000 ms" in info.value.message
        with pytest.raises(ResourceExhausted):
            await batcher.embed(["doc in a hurry"], "document", timeout_s=3.0)
        patient = asyncio.ensure_future(batcher.embed(["patient"], "query", timeout_s=10))
        model.gate.set()
        await asyncio.wait_for(asyncio.gather(first, patient, *queued, *docs), 5)
        assert "hurried" not in model.embedded and "patient" in model.embedded
        # an idle lane takes a request whatever its estimate
        batcher.lanes["query"].s_per_text = 5.0
        assert len((await batcher.embed(["alone"], "query", timeout_s=2.0)).vectors) == 1
    finally:
        model.gate.set()
        await batcher.close()


async def test_a_lane_counts_its_model_time_once_per_run() -> None:
    """recallmesh_embedding_model_seconds_total: two requests coalesced into one run add that
    run's time once (the requests' own times overlap; their sum is not how busy the model
    was)."""
    runs = []

    def model(texts: list[str], kind: str) -> Embedded:
        runs.append(len(texts))
        time.sleep(0.2)
        return Embedded(np.zeros((len(texts), 4), dtype=np.float32), [False] * len(texts))

    def ran() -> float:
        return REGISTRY.get_sample_value("recallmesh_embedding_model_seconds_total",
                                         {"kind": "document"}) or 0.0

    batcher = MicroBatcher(model, max_batch=8, max_wait_s=0.05, max_queue_texts=64)
    batcher.start()
    before = ran()
    try:
        await asyncio.gather(batcher.embed(["a"], "document"), batcher.embed(["b"], "document"))
    finally:
        await batcher.close()
    assert runs == [2]
    assert 0.2 <= ran() - before < 0.4  # one run's time, not the two requests' summed
