"""The indexer's loop: batches drained while jobs are due, a wait for work between them.

run_forever keeps two batches in flight: the next one is claimed and embedded while the last
one is written, one batch per step at a time, so the model is not idle while vectors are
written (docs/decisions/0025-concepts-when-the-graph-is-asked.md). Its loops share one wait
for work (one LISTEN connection, on NOTIFY_CHANNEL, which the job triggers notify), and each
backs off on its own failures.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable

from recallmesh.services.indexer.core import BatchResult, Indexer
from recallmesh.services.indexer.queue import backoff_s

# Every log line of the indexer under one logger name, whichever of its modules writes it.
log = logging.getLogger("recallmesh.services.indexer.core")

NOTIFY_CHANNEL = "recallmesh_embedding_jobs"
PENDING_REFRESH_S = 1.0  # how often the pending-jobs gauge is recounted
IN_FLIGHT = 2  # batches at once: one embedding while the one before it is written


async def run_forever(
    indexer: Indexer,
    wait_for_work: Callable[[float], Awaitable[None]],
    stop: asyncio.Event,
    poll_s: float = 1.0,
    in_flight: int = IN_FLIGHT,
) -> None:
    """Drain due jobs in `in_flight` loops over one indexer, so the embedding service works on
    the next batch while the last one is written (Indexer.run_once's turns); when no full batch
    is due, sleep until notified or poll_s passes. Each loop backs off on its failures."""
    wait = _SharedWait(wait_for_work)
    await asyncio.gather(*(_drain(indexer, wait, stop, poll_s, counts=i == 0)
                           for i in range(max(1, in_flight))))


async def _drain(indexer: Indexer, wait_for_work: Callable[[float], Awaitable[None]],
                 stop: asyncio.Event, poll_s: float, counts: bool) -> None:
    failures = 0
    last_count = 0.0
    while not stop.is_set():
        if counts and time.monotonic() - last_count >= PENDING_REFRESH_S:  # in outages too
            last_count = time.monotonic()
            with contextlib.suppress(Exception):
                await indexer.pending()
        try:
            result = await indexer.run_once()
        except Exception:  # database unavailable: keep the process, retry later
            log.exception("indexer batch crashed")
            result = BatchResult(0, error="crash")
        if result.error:
            failures += 1
            delay = backoff_s(failures, indexer.base_backoff_s, indexer.max_backoff_s)
            await _sleep_or_stop(stop, delay)
            continue
        failures = 0
        if result.claimed >= result.asked > 0:
            continue  # a full batch: more is probably due right now
        if stop.is_set():
            break
        try:
            await wait_for_work(poll_s)
        except Exception:  # the loop must outlive any one failure
            log.exception("waiting for work failed")
            await _sleep_or_stop(stop, poll_s)


class _SharedWait:
    """Several loops waiting for work through one wait_for_work (one LISTEN connection): the
    first to wait calls it, the others return when it does (or after their own timeout)."""

    def __init__(self, wait_for_work: Callable[[float], Awaitable[None]]) -> None:
        self._wait = wait_for_work
        self._round: asyncio.Event | None = None  # set when the waiting call returns

    async def __call__(self, timeout_s: float) -> None:
        if self._round is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._round.wait(), timeout_s)
            return
        self._round = done = asyncio.Event()
        try:
            await self._wait(timeout_s)
        finally:
            self._round = None
            done.set()


async def _sleep_or_stop(stop: asyncio.Event, delay: float) -> None:
    try:
        await asyncio.wait_for(stop.wait(), delay)
    except TimeoutError:
        pass
