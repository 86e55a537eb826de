"""Dynamic micro-batching: concurrent Embed calls share one model run.

Requests queue up; one worker takes everything already waiting and runs the model once in a
background thread (onnxruntime uses its own intra-op threads). While a batch runs, new
requests queue and are coalesced into the next one, so under load batches grow by
themselves. The document lane also waits up to `max_wait_s` for more while its batch holds
fewer than `max_batch` texts (an indexer's writes come in bursts, and one run of many texts
costs less than many runs). The query lane never waits: a recall's query is one text on the
critical path of the recall, a lone one gains nothing from waiting, and concurrent ones
coalesce while the run before them is in progress
(docs/decisions/0026-the-hops-around-the-vector.md).

Queries and documents have a lane each (queue, worker, model thread), and the two lanes
may run the model at the same time (an onnxruntime session serves concurrent runs). A
recall waits for its query vector under a budget of a few hundred milliseconds, while the
indexer's documents have seconds and are retried: in one shared queue a burst of writes
put every recall's query behind seconds of documents (a document run of 64 texts takes
seconds on 2 cores). In its own lane a query shares the cores with a document run instead
of waiting for its end.

A failed model run fails no caller for another caller's text: when a run that
coalesced several requests fails, each of them is run again on its own, and
only the requests whose own run fails get the error (a poison text, e.g. one
the model cannot handle, then fails its own caller only).

Admission is bounded twice, and a refused request is refused at once (ResourceExhausted),
since it would only wait behind work the model cannot finish in time:
- by size: a request that would raise its lane's queue beyond `max_queue_texts` texts (a
  lone request larger than that is still taken when nothing waits);
- by time: a request whose texts would take more than half its caller's deadline (the rest
  is the caller's own work once it has the vectors), by the model time of the texts ahead
  of it in its lane (the rest of the run in progress and the queued texts) plus its own,
  estimated from the lane's recent runs (seconds per text). A
  recall's query is then refused in microseconds instead of waiting out its budget, and
  the recall answers from its other legs at once.
A request whose deadline passes while it waits all the same is dropped unembedded
(DeadlineExceeded): nobody is waiting for its vectors any more.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
from prometheus_client import Counter, Gauge, Histogram

from recallmesh.services.embedding.core import KINDS, Embedded
from recallmesh.shared.errors import DeadlineExceeded, ResourceExhausted, Unavailable

BATCH_TEXTS = Histogram(
    "recallmesh_embedding_batch_texts",
    "Texts per model run after coalescing concurrent requests.",
    buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512),
)
REQUEST_SECONDS = Histogram(
    "recallmesh_embedding_request_seconds",
    "Time from an Embed request entering the batcher to its vectors being ready.",
    ["kind"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)

MODEL_SECONDS = Counter(
    "recallmesh_embedding_model_seconds_total",
    "Seconds the model ran, by lane (kind). A lane runs one batch at a time, so the rate of "
    "this counter is the share of time its model thread was busy (1: saturated).",
    ["kind"],
)
QUEUED_TEXTS = Gauge(
    "recallmesh_embedding_queued_texts",
    "Texts waiting in the micro-batcher's queue for a model run.",
)
EXPIRED = Counter(
    "recallmesh_embedding_expired_total",
    "Embed requests dropped unembedded because their deadline passed while they waited.",
)


class Stopping(Unavailable, RuntimeError):
    """The service is stopping: UNAVAILABLE to the caller (retry elsewhere or later)."""

    def __init__(self) -> None:
        super().__init__("embedding service is stopping")


@dataclass
class _Pending:
    texts: list[str]
    kind: str
    future: asyncio.Future[Embedded]
    deadline: float | None = None  # time.perf_counter() after which nobody waits for it
    enqueued: float = field(default_factory=time.perf_counter)
    cost_s: float = 0.0  # estimated model time of its texts when it was queued


INITIAL_S_PER_TEXT = 0.005  # before a lane has timed a run: admit, learn from the first runs
# The share of a caller's deadline its texts may spend queued and embedded. The caller has
# work left once it has the vectors (the vector leg searches, the gateway fuses and
# hydrates): a query embedded just before the deadline is work thrown away, and admitting
# up to the whole deadline kept the lane full of such queries under load.
DEADLINE_SHARE = 0.5


class _Lane:
    """One kind's queue, worker and model thread."""

    def __init__(self, kind: str, batcher: MicroBatcher) -> None:
        self.kind = kind
        self.batcher = batcher
        self.queue: deque[_Pending] = deque()
        self.queued_texts = 0
        self.queued_s = 0.0  # estimated model time of the queued texts
        self.arrived = asyncio.Event()  # set while something is queued
        self.s_per_text = INITIAL_S_PER_TEXT  # moving average (written by the model thread)
        self.running_until = 0.0  # perf_counter when the run in progress should end
        self.in_flight: list[_Pending] = []  # taken from the queue, not yet answered
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"embed-{kind}")
        self.worker: asyncio.Task[None] | None = None
        # how long a batch that is not full waits for more (the module docstring says why)
        self.wait_s = 0.0 if kind == "query" else batcher.max_wait_s

    def wait_estimate_s(self) -> float:
        """Model time a request queued now would wait: the rest of the run in progress and
        the queued texts."""
        running = (max(self.running_until - time.perf_counter(), 0.0)
                   if self.in_flight else 0.0)
        return running + self.queued_s

    def admit(self, texts: list[str], timeout_s: float | None) -> _Pending:
        """Queue a request, or refuse it at once (ResourceExhausted)."""
        limit = self.batcher.max_queue_texts
        if self.queued_texts and self.queued_texts + len(texts) > limit:
            raise ResourceExhausted(
                f"embedding queue full ({self.queued_texts} texts waiting, at most "
                f"{limit}), retry", reason="embedding_queue")
        cost = len(texts) * self.s_per_text
        if timeout_s is not None and (self.queued_texts or self.in_flight):
            wait = self.wait_estimate_s()
            if wait + cost > timeout_s * DEADLINE_SHARE:
                raise ResourceExhausted(
                    f"embedding queue busy: about {wait * 1000:.0f} ms of model time ahead, "
                    f"more than half the call's {timeout_s * 1000:.0f} ms, retry",
                    reason="embedding_deadline")
        item = _Pending(list(texts), self.kind,
                        asyncio.get_running_loop().create_future(), cost_s=cost)
        if timeout_s is not None:
            item.deadline = item.enqueued + timeout_s
        self.queue.append(item)
        self.queued_texts += len(item.texts)
        self.queued_s += cost
        self.batcher.queued_changed()
        self.arrived.set()
        return item

    def take(self) -> _Pending:
        item = self.queue.popleft()
        self.queued_texts -= len(item.texts)
        self.queued_s = max(self.queued_s - item.cost_s, 0.0)
        self.batcher.queued_changed()
        if not self.queue:
            self.arrived.clear()
        return item

    async def collect(self) -> list[_Pending]:
        """Fill self.in_flight with the next batch (kept there so close() can answer it)."""
        while not self.queue:
            await self.arrived.wait()
        batch = self.in_flight = [self.take()]
        size = len(batch[0].texts)
        deadline = time.perf_counter() + self.wait_s
        while size < self.batcher.max_batch:
            if not self.queue:
                remaining = deadline - time.perf_counter()
                if remaining <= 0:
                    break
                try:
                    async with asyncio.timeout(remaining):
                        await self.arrived.wait()
                except TimeoutError:
                    break
                continue
            item = self.take()
            batch.append(item)
            size += len(item.texts)
        return batch

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            collected = await self.collect()
            now = time.perf_counter()
            batch = self.in_flight = [p for p in collected if _wanted(p, now)]
            if not batch:
                self.in_flight = []
                continue
            self.running_until = now + sum(len(p.texts) for p in batch) * self.s_per_text
            try:
                results = await loop.run_in_executor(self.executor, self.embed_batch, batch)
            except Exception as exc:  # deliver the failure to every waiting caller
                for p in batch:
                    if not p.future.done():
                        p.future.set_exception(exc)
                self.in_flight = []
                continue
            for p, result in zip(batch, results, strict=True):
                if p.future.done():
                    continue
                if isinstance(result, Exception):
                    p.future.set_exception(result)
                else:
                    p.future.set_result(result)
            self.in_flight = []

    def _run_model(self, texts: list[str]) -> Embedded:
        """One model run, its time counted in recallmesh_embedding_model_seconds_total."""
        started = time.perf_counter()
        try:
            return self.batcher.model(texts, self.kind)
        finally:
            MODEL_SECONDS.labels(self.kind).inc(time.perf_counter() - started)

    def embed_batch(self, batch: list[_Pending]) -> list[Embedded | Exception]:
        """Runs in the lane's model thread: one model call, split back per request. If a call
        that served several requests fails, each request is run alone: only those whose own
        texts fail get an exception (in their place of the list)."""
        embed = self._run_model
        texts = [t for p in batch for t in p.texts]
        BATCH_TEXTS.observe(len(texts))
        started = time.perf_counter()
        try:
            embedded = embed(texts)
        except Exception as exc:
            if len(batch) == 1:
                return [exc]
            results: list[Embedded | Exception] = []
            for p in batch:  # isolate the request(s) the failure belongs to
                try:
                    results.append(embed(p.texts))
                except Exception as own:
                    results.append(own)
            return results
        per_text = (time.perf_counter() - started) / max(len(texts), 1)
        self.s_per_text += 0.2 * (per_text - self.s_per_text)
        out: list[Embedded | Exception] = []
        offset = 0
        for p in batch:
            n = len(p.texts)
            out.append(Embedded(np.ascontiguousarray(embedded.vectors[offset : offset + n]),
                                embedded.truncated[offset : offset + n]))
            offset += n
        return out


def _wanted(item: _Pending, now: float) -> bool:
    """Whether anybody still waits for the item's vectors (a caller whose deadline passed is
    told so, and its texts are not embedded)."""
    if item.future.done():  # cancelled: the call went away
        return False
    if item.deadline is not None and item.deadline <= now:
        EXPIRED.inc()
        item.future.set_exception(
            DeadlineExceeded("the deadline passed while the texts waited to be embedded"))
        return False
    return True


class MicroBatcher:
    def __init__(
        self,
        embed: Callable[[list[str], str], Embedded],
        max_batch: int = 32,
        max_wait_s: float = 0.002,
        max_queue_texts: int = 256,
    ) -> None:
        self.model = embed
        self.max_batch = max_batch
        self.max_wait_s = max_wait_s
        self.max_queue_texts = max_queue_texts
        self.lanes = {kind: _Lane(kind, self) for kind in KINDS}
        self._closed = False

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        for lane in self.lanes.values():
            lane.worker = loop.create_task(lane.run())

    def queued_changed(self) -> None:
        QUEUED_TEXTS.set(sum(lane.queued_texts for lane in self.lanes.values()))

    async def close(self) -> None:
        """Stop the workers; every caller still waiting gets an error, none hangs."""
        self._closed = True
        stopping = Stopping()
        for lane in self.lanes.values():
            if lane.worker is not None:
                lane.worker.cancel()
                try:
                    await lane.worker
                except asyncio.CancelledError:
                    pass
            waiting = list(lane.in_flight)
            while lane.queue:
                waiting.append(lane.take())
            for item in waiting:
                if not item.future.done():
                    item.future.set_exception(stopping)
            lane.in_flight = []
            # A model run in progress finishes in its thread; do not block the loop on it.
            lane.executor.shutdown(wait=False)

    def wait_estimate_s(self, kind: str) -> float:
        return self.lanes[kind].wait_estimate_s()

    async def embed(self, texts: list[str], kind: str, timeout_s: float | None = None
                    ) -> Embedded:
        """The texts' vectors; `timeout_s`: how long the caller waits (refused at once when
        the work ahead in its lane would not let it finish in time; dropped unembedded if it
        is still queued then). ResourceExhausted when the lane's queue is full or too long
        for the deadline."""
        if self._closed:
            raise Stopping()
        if kind not in self.lanes:
            raise ValueError(f"unknown kind {kind!r}")
        item = self.lanes[kind].admit(texts, timeout_s)
        try:
            return await item.future
        finally:
            REQUEST_SECONDS.labels(kind).observe(time.perf_counter() - item.enqueued)
