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
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
from prometheus_client import Histogram

from recallmesh.embedding.core import Embedded
from recallmesh.platform.errors import Unavailable

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


class Stopping(Unavailable, RuntimeError):
    """The service is stopping: UNAVAILABLE to the caller (retry elsewhere or later)."""

    def __init__(self) -> None:
        super().__init__("embedding service is stopping")


@dataclass
class _Pending:
    texts: list[str]
    kind: str
    future: asyncio.Future
    enqueued: float = field(default_factory=time.perf_counter)


class MicroBatcher:
    def __init__(
        self,
        embed: Callable[[list[str], str], Embedded],
        max_batch: int = 32,
        max_wait_s: float = 0.002,
    ) -> None:
        self._embed = embed
        self.max_batch = max_batch
        self.max_wait_s = max_wait_s
        self._queue: asyncio.Queue[_Pending] = asyncio.Queue()
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
            waiting.append(self._queue.get_nowait())
        for item in waiting:
            if not item.future.done():
                item.future.set_exception(stopping)
        self._in_flight = []
        # A model run in progress finishes in its thread; do not block the loop on it.
        self._executor.shutdown(wait=False)

    async def embed(self, texts: list[str], kind: str) -> Embedded:
        if self._closed:
            raise Stopping()
        future = asyncio.get_running_loop().create_future()
        item = _Pending(list(texts), kind, future)
        self._queue.put_nowait(item)
        try:
            return await future
        finally:
            REQUEST_SECONDS.labels(kind).observe(time.perf_counter() - item.enqueued)

    async def _collect(self) -> list[_Pending]:
        """Fill self._in_flight with the next batch (kept there so close() can answer it)."""
        batch = self._in_flight = [await self._queue.get()]
        size = len(batch[0].texts)
        deadline = time.perf_counter() + self.max_wait_s
        while size < self.max_batch:
            if self._queue.empty():
                remaining = deadline - time.perf_counter()
                if remaining <= 0:
                    break
                try:
                    async with asyncio.timeout(remaining):
                        item = await self._queue.get()
                except TimeoutError:
                    break
            else:
                item = self._queue.get_nowait()
            batch.append(item)
            size += len(item.texts)
        return batch

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            batch = [p for p in await self._collect() if not p.future.cancelled()]
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
