"""Dynamic micro-batching: concurrent Embed calls share one model run.

Requests queue up, one queue per kind; one worker takes everything already waiting of one
kind, waits up to `max_wait_s` for more while the batch holds fewer than `max_batch` texts,
and runs the model once in a single background thread (onnxruntime uses its own intra-op
threads). While a batch runs, new requests queue and are coalesced into the next one, so
under load batches grow by themselves and an idle service adds at most `max_wait_s` to a lone
request.

Queries go first: the worker takes waiting query texts before any document texts. A recall
waits for its query vector under a budget of a few hundred milliseconds, while the indexer's
documents have seconds and are retried; without this, a burst of writes put every recall's
query behind seconds of documents.

A failed model run fails no caller for another caller's text: when a run that
coalesced several requests fails, each of them is run again on its own, and
only the requests whose own run fails get the error (a poison text, e.g. one
the model cannot handle, then fails its own caller only).

Admission is bounded twice, and a refused request is refused at once (ResourceExhausted),
since it would only wait behind work the model cannot finish in time:
- by size: a request that would raise the queue beyond `max_queue_texts` texts (a lone
  request larger than that is still taken when nothing waits);
- by time: a request whose caller would wait longer than its deadline, by the model time
  of the texts ahead of it (the run in progress and the queued texts of its kind or a kind
  that goes first) plus its own, estimated from recent runs (seconds per text, by kind).
  A recall's query is then refused in microseconds instead of waiting out its budget, and
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

from recallmesh.embedding.core import KINDS, Embedded
from recallmesh.platform.errors import DeadlineExceeded, ResourceExhausted, Unavailable

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
    future: asyncio.Future
    deadline: float | None = None  # time.perf_counter() after which nobody waits for it
    enqueued: float = field(default_factory=time.perf_counter)
    cost_s: float = 0.0  # estimated model time of its texts when it was queued


# The order in which the worker serves the kinds (queries first: a recall waits for them).
PRIORITY = ("query", "document")
assert set(PRIORITY) == set(KINDS)
INITIAL_S_PER_TEXT = 0.005  # before any run has been timed: admit, learn from the first runs


class MicroBatcher:
    def __init__(
        self,
        embed: Callable[[list[str], str], Embedded],
        max_batch: int = 32,
        max_wait_s: float = 0.002,
        max_queue_texts: int = 256,
    ) -> None:
        self._embed = embed
        self.max_batch = max_batch
        self.max_wait_s = max_wait_s
        self.max_queue_texts = max_queue_texts
        self._queues: dict[str, deque[_Pending]] = {kind: deque() for kind in PRIORITY}
        self._queued_s = dict.fromkeys(PRIORITY, 0.0)  # estimated model time queued, by kind
        self._queued_texts = 0  # texts in the queues
        self._arrived = asyncio.Event()  # set while something is queued
        # moving average of one text's model time, by kind (written by the model thread)
        self.s_per_text = dict.fromkeys(PRIORITY, INITIAL_S_PER_TEXT)
        self._running_until = 0.0  # perf_counter when the model run in progress should end
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="embed")
        self._worker: asyncio.Task | None = None
        self._in_flight: list[_Pending] = []  # taken from the queue, not yet answered
        self._closed = False

    def start(self) -> None:
        self._worker = asyncio.get_running_loop().create_task(self._run())

    async def close(self) -> None:
        """Stop the worker; every caller still waiting gets an error, none hangs."""
        self._closed = True
        if self._worker is not None:
            self._worker.cancel()
            try:
                await self._worker
            except asyncio.CancelledError:
                pass
        stopping = Stopping()
        waiting = list(self._in_flight)
        for kind in PRIORITY:
            while self._queues[kind]:
                waiting.append(self._take(kind))
        for item in waiting:
            if not item.future.done():
                item.future.set_exception(stopping)
        self._in_flight = []
        # A model run in progress finishes in its thread; do not block the loop on it.
        self._executor.shutdown(wait=False)

    def wait_estimate_s(self, kind: str) -> float:
        """Model time a request of `kind` queued now would wait: the rest of the run in
        progress and the queued texts of its kind and of the kinds served before it."""
        ahead = PRIORITY[: PRIORITY.index(kind) + 1]
        running = max(self._running_until - time.perf_counter(), 0.0) if self._in_flight else 0.0
        return running + sum(self._queued_s[k] for k in ahead)

    async def embed(self, texts: list[str], kind: str, timeout_s: float | None = None
                    ) -> Embedded:
        """The texts' vectors; `timeout_s`: how long the caller waits (refused at once when
        the work ahead would not let it finish in time; dropped unembedded if it is still
        queued then). ResourceExhausted when the queue is full or too long for the deadline."""
        if self._closed:
            raise Stopping()
        if kind not in self._queues:
            raise ValueError(f"unknown kind {kind!r}")
        if self._queued_texts and self._queued_texts + len(texts) > self.max_queue_texts:
            raise ResourceExhausted(
                f"embedding queue full ({self._queued_texts} texts waiting, at most "
                f"{self.max_queue_texts}), retry", reason="embedding_queue")
        cost = len(texts) * self.s_per_text[kind]
        if timeout_s is not None and (self._queued_texts or self._in_flight):
            wait = self.wait_estimate_s(kind)
            if wait + cost > timeout_s:
                raise ResourceExhausted(
                    f"embedding queue busy: about {wait * 1000:.0f} ms of model time ahead, "
                    f"more than the call's {timeout_s * 1000:.0f} ms allow, retry",
                    reason="embedding_deadline")
        future = asyncio.get_running_loop().create_future()
        item = _Pending(list(texts), kind, future, cost_s=cost)
        if timeout_s is not None:
            item.deadline = item.enqueued + timeout_s
        self._queues[kind].append(item)
        self._queued_texts += len(item.texts)
        self._queued_s[kind] += cost
        QUEUED_TEXTS.set(self._queued_texts)
        self._arrived.set()
        try:
            return await future
        finally:
            REQUEST_SECONDS.labels(kind).observe(time.perf_counter() - item.enqueued)

    def _take(self, kind: str) -> _Pending:
        item = self._queues[kind].popleft()
        self._queued_texts -= len(item.texts)
        self._queued_s[kind] = max(self._queued_s[kind] - item.cost_s, 0.0)
        QUEUED_TEXTS.set(self._queued_texts)
        if not any(self._queues.values()):
            self._arrived.clear()
        return item

    def _first_kind(self) -> str | None:
        return next((kind for kind in PRIORITY if self._queues[kind]), None)

    async def _collect(self) -> list[_Pending]:
        """Fill self._in_flight with the next batch, all of one kind, queries first (kept
        there so close() can answer it)."""
        while (kind := self._first_kind()) is None:
            await self._arrived.wait()
        batch = self._in_flight = [self._take(kind)]
        size = len(batch[0].texts)
        deadline = time.perf_counter() + self.max_wait_s
        while size < self.max_batch:
            if not self._queues[kind]:
                if any(self._queues.values()):  # another kind waits: run what we have
                    break
                remaining = deadline - time.perf_counter()
                if remaining <= 0:
                    break
                try:
                    async with asyncio.timeout(remaining):
                        await self._arrived.wait()
                except TimeoutError:
                    break
                continue
            item = self._take(kind)
            batch.append(item)
            size += len(item.texts)
        return batch

    def _wanted(self, item: _Pending, now: float) -> bool:
        """Whether anybody still waits for the item's vectors (a caller whose deadline passed
        is told so, and its texts are not embedded)."""
        if item.future.done():  # cancelled: the call went away
            return False
        if item.deadline is not None and item.deadline <= now:
            EXPIRED.inc()
            item.future.set_exception(
                DeadlineExceeded("the deadline passed while the texts waited to be embedded"))
            return False
        return True

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            collected = await self._collect()
            now = time.perf_counter()
            batch = self._in_flight = [p for p in collected if self._wanted(p, now)]
            if not batch:
                self._in_flight = []
                continue
            self._running_until = now + sum(
                len(p.texts) * self.s_per_text[p.kind] for p in batch)
            try:
                results = await loop.run_in_executor(self._executor, self._embed_batch, batch)
            except Exception as exc:  # deliver the failure to every waiting caller
                for p in batch:
                    if not p.future.done():
                        p.future.set_exception(exc)
                self._in_flight = []
                continue
            for p, result in zip(batch, results, strict=True):
                if p.future.done():
                    continue
                if isinstance(result, Exception):
                    p.future.set_exception(result)
                else:
                    p.future.set_result(result)
            self._in_flight = []

    def _embed_batch(self, batch: list[_Pending]) -> list[Embedded | Exception]:
        """Runs in the worker thread: one model call per kind, split back per request. If a
        call that served several requests fails, each request is run alone: only those whose
        own texts fail get an exception (in their place of the list)."""
        results: list[Embedded | Exception | None] = [None] * len(batch)
        for kind in sorted({p.kind for p in batch}):
            members = [i for i, p in enumerate(batch) if p.kind == kind]
            texts = [t for i in members for t in batch[i].texts]
            BATCH_TEXTS.observe(len(texts))
            started = time.perf_counter()
            try:
                embedded = self._embed(texts, kind)
                per_text = (time.perf_counter() - started) / max(len(texts), 1)
                self.s_per_text[kind] += 0.2 * (per_text - self.s_per_text[kind])
            except Exception as exc:
                if len(members) == 1:
                    results[members[0]] = exc
                    continue
                for i in members:  # isolate the request(s) the failure belongs to
                    try:
                        results[i] = self._embed(batch[i].texts, kind)
                    except Exception as own:
                        results[i] = own
                continue
            offset = 0
            for i in members:
                n = len(batch[i].texts)
                vectors = embedded.vectors[offset : offset + n]
                results[i] = Embedded(
                    np.ascontiguousarray(vectors), embedded.truncated[offset : offset + n]
                )
                offset += n
        return [r for r in results if r is not None]
