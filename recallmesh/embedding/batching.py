"""Dynamic micro-batching: concurrent Embed calls share one model run.

Requests queue up; one worker takes everything already waiting, waits up to
`max_wait_s` for more while the batch holds fewer than `max_batch` texts, and
runs the model once per text kind in a single background thread (onnxruntime
uses its own intra-op threads). While a batch runs, new requests queue and
are coalesced into the next one, so under load batches grow by themselves and
an idle service adds at most `max_wait_s` to a lone request.

A failed model run fails no caller for another caller's text: when a run that
coalesced several requests fails, each of them is run again on its own, and
only the requests whose own run fails get the error (a poison text, e.g. one
the model cannot handle, then fails its own caller only).

The queue is bounded: a request that would raise it beyond `max_queue_texts` texts is refused
at once (ResourceExhausted; a lone request larger than that is still taken when nothing
waits), since it would only wait behind work the model cannot finish in time. A request
whose deadline passes while it waits is dropped unembedded (DeadlineExceeded): nobody is
waiting for its vectors any more.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
from prometheus_client import Counter, Gauge, Histogram

from recallmesh.embedding.core import Embedded
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
        self._queue: asyncio.Queue[_Pending] = asyncio.Queue()
        self._queued_texts = 0  # texts in self._queue
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
        while not self._queue.empty():
            waiting.append(self._take())
        for item in waiting:
            if not item.future.done():
                item.future.set_exception(stopping)
        self._in_flight = []
        # A model run in progress finishes in its thread; do not block the loop on it.
        self._executor.shutdown(wait=False)

    async def embed(self, texts: list[str], kind: str, timeout_s: float | None = None
                    ) -> Embedded:
        """The texts' vectors; `timeout_s`: how long the caller waits (dropped unembedded if
        it is still queued then). ResourceExhausted when the queue is full."""
        if self._closed:
            raise Stopping()
        if self._queued_texts and self._queued_texts + len(texts) > self.max_queue_texts:
            raise ResourceExhausted(
                f"embedding queue full ({self._queued_texts} texts waiting, at most "
                f"{self.max_queue_texts}), retry", reason="embedding_queue")
        future = asyncio.get_running_loop().create_future()
        item = _Pending(list(texts), kind, future)
        if timeout_s is not None:
            item.deadline = item.enqueued + timeout_s
        self._queue.put_nowait(item)
        self._queued_texts += len(item.texts)
        QUEUED_TEXTS.set(self._queued_texts)
        try:
            return await future
        finally:
            REQUEST_SECONDS.labels(kind).observe(time.perf_counter() - item.enqueued)

    def _taken(self, item: _Pending) -> _Pending:
        self._queued_texts -= len(item.texts)
        QUEUED_TEXTS.set(self._queued_texts)
        return item

    def _take(self) -> _Pending:
        return self._taken(self._queue.get_nowait())

    async def _next(self) -> _Pending:
        return self._taken(await self._queue.get())

    async def _collect(self) -> list[_Pending]:
        """Fill self._in_flight with the next batch (kept there so close() can answer it)."""
        batch = self._in_flight = [await self._next()]
        size = len(batch[0].texts)
        deadline = time.perf_counter() + self.max_wait_s
        while size < self.max_batch:
            if self._queue.empty():
                remaining = deadline - time.perf_counter()
                if remaining <= 0:
                    break
                try:
                    async with asyncio.timeout(remaining):
                        item = await self._next()
                except TimeoutError:
                    break
            else:
                item = self._take()
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
                continue
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
            try:
                embedded = self._embed(texts, kind)
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
