"""The indexer: turns embedding jobs (the outbox) into stored vectors.

One batch (Indexer.run_once) is
  1. claimed: due jobs are leased, those of sensitive or deleted memories dropped
     (recallmesh/services/indexer/queue.py);
  2. embedded in one call to the embedding service, holding no database locks while it
     waits, split on a failure that may be one text's fault so the others are embedded
     (recallmesh/services/indexer/poison.py), its memories' concepts extracted meanwhile;
  3. written in one transaction, only for the jobs whose version is still the one embedded
     (queue.py); what was not written is backed off, and a job whose own text failed counts
     a failure and is parked after max_attempts (queue.py).
A batch that ran out of time shrinks the next claim (recallmesh/services/indexer/sizing.py).

A batch has two turns, an embedding turn (1, 2) and a write turn (3), each held by one batch
at a time: the loop (recallmesh/services/indexer/loop.py) keeps two batches in flight, so the
next one is claimed and embedded while the last one is written and the model is not idle
while vectors are written (docs/decisions/0025-concepts-when-the-graph-is-asked.md).
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass

from psycopg_pool import AsyncConnectionPool

from recallmesh.services.embedding.client import Embeddings
from recallmesh.services.indexer import queue
from recallmesh.services.indexer.concepts import ConceptWriter
from recallmesh.services.indexer.metrics import BATCH_SECONDS, JOBS, PARKED, PENDING
from recallmesh.services.indexer.poison import EmbedFn, describe, embed_names, embed_round
from recallmesh.services.indexer.queue import Backoff, Claimed
from recallmesh.services.indexer.sizing import ClaimSizer

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BatchResult:
    claimed: int
    indexed: int = 0
    superseded: int = 0  # changed, deleted or made sensitive while being embedded
    dropped: int = 0  # sensitive / deleted rows that had a job
    failed: int = 0  # jobs retried later (outage) or failed on their own text (poisoned)
    error: str = ""  # an outage: the loop backs off ("" when only poison failed)
    poisoned: int = 0  # jobs whose own text failed (included in failed)
    parked: int = 0  # of those, parked now (max_attempts reached)
    asked: int = 0  # how many jobs the claim asked for (a full batch: claimed == asked)


class Indexer:
    def __init__(
        self,
        pool: AsyncConnectionPool,
        embed_documents: EmbedFn,
        batch_size: int = 64,
        lease_s: float = 60.0,
        base_backoff_s: float = 0.5,
        max_backoff_s: float = 30.0,
        concepts: ConceptWriter | None = None,
        probe_after: int = 50,
        max_attempts: int = 5,
        embed_budget_s: float | None = None,
    ) -> None:
        self.pool = pool
        self.max_attempts = max_attempts
        # All embedding calls of one round's texts (the split ones included) share this
        # budget, and so do the calls for new concept names: 2 x budget <= the lease.
        self.embed_budget_s = lease_s / 2 if embed_budget_s is None else embed_budget_s
        self.concepts = concepts
        self.embed_documents = embed_documents
        self.sizing = ClaimSizer(batch_size, probe_after)
        self.lease_s = lease_s
        self.base_backoff_s = base_backoff_s
        self.max_backoff_s = max_backoff_s
        # run_once's two turns (see there): the next batch embeds while this one is written.
        self._embedding_turn = asyncio.Lock()
        self._write_turn = asyncio.Lock()

    async def run_once(self) -> BatchResult:
        """Claim, embed and write one batch of due jobs. Two calls at once overlap: one batch
        is claimed and embedded (the embedding turn) while the one before it is written (the
        write turn); each turn is taken by one batch at a time, so the embedding service gets
        one batch at a time and a batch is written whole before the next begins its write."""
        async with self._embedding_turn:
            started = time.perf_counter()
            try:
                batch = await self._claim_and_embed()
            finally:
                spent = time.perf_counter() - started
        if isinstance(batch, BatchResult):  # nothing to write
            BATCH_SECONDS.observe(spent)
            return batch
        async with self._write_turn:
            started = time.perf_counter()
            try:
                return await self._write_batch(batch)
            finally:
                BATCH_SECONDS.observe(spent + time.perf_counter() - started)

    async def _claim_and_embed(self) -> BatchResult | Claimed:
        """Claim due jobs, drop those of sensitive or deleted memories, embed the rest (and
        extract their concepts), and size the next claim by whether this one was in time."""
        asked = self.sizing.next_claim()
        batch = await queue.claim(self.pool, asked, self.lease_s)
        if not batch.work:
            return BatchResult(batch.claimed, dropped=batch.dropped, asked=asked)
        texts = [w[2] for w in batch.work]
        outcome = batch.outcome
        embedding = embed_round(self.embed_documents, self.embed_budget_s, texts, outcome)
        if self.concepts is None:
            await embedding
        else:  # extract concepts (CPU, a thread) while the embedding service works
            _, extracted = await asyncio.gather(
                embedding, self.concepts.extract(batch.sources), return_exceptions=True)
            if isinstance(extracted, BaseException):  # nothing is written: retry all
                outcome.error, outcome.vectors, outcome.poisoned = extracted, {}, {}
            else:
                batch.extractions = extracted
        self.sizing.done(asked, outcome.error)
        return batch

    async def _write_batch(self, batch: Claimed) -> BatchResult:
        """Write what the batch embedded; back off, count and park what it did not."""
        work, outcome = batch.work, batch.outcome
        written = 0
        done = sorted(outcome.vectors)
        try:
            if done:
                written = await self._write(batch, done)
                done = [i for i in done if i not in outcome.poisoned]  # failed alone
        except Exception as exc:  # the write failed (model mismatch, database): retry all
            outcome.error, outcome.poisoned, done, written = exc, {}, [], 0
        error = describe(outcome.error) if outcome.error is not None else ""
        poisoned = sorted(outcome.poisoned)
        settled = set(done) | set(outcome.poisoned)
        retry = [i for i in range(len(work)) if i not in settled]
        parked = await queue.record_failures(
            self.pool, batch, poisoned, retry, error,
            Backoff(self.base_backoff_s, self.max_backoff_s, self.max_attempts))
        failed = len(poisoned) + len(retry)
        if failed:
            JOBS.labels("failed").inc(failed)
        if done:
            JOBS.labels("indexed").inc(written)
            JOBS.labels("superseded").inc(len(done) - written)
        if outcome.error is not None:
            log.warning("embedding batch failed; will retry", extra={
                "jobs": len(retry), "embedded": written, "error": error,
                "next_claim": self.sizing.claim_size})
        return BatchResult(
            batch.claimed, indexed=written, superseded=len(done) - written,
            dropped=batch.dropped, failed=failed, error=error, poisoned=len(poisoned),
            parked=parked, asked=batch.asked)

    async def _write(self, batch: Claimed, done: list[int]) -> int:
        """Write the vectors of the embedded jobs (and their concepts, whose new names are
        embedded first); how many were written."""
        outcome = batch.outcome
        if len(outcome.models) != 1:
            raise RuntimeError("the embedding model changed within one batch")
        (model_id, _), = outcome.models
        prepared = None
        if self.concepts is not None and batch.extractions is not None:
            prepared = await self.concepts.prepare(
                self.pool, [batch.sources[i] for i in done],
                [batch.extractions[i] for i in done], self._embed_names)
        return await queue.write(self.pool, self.concepts, batch, prepared, done, model_id)

    async def _embed_names(self, names: list[str]) -> Embeddings:
        """Embed new concept names under the round's budget (poison.embed_names)."""
        return await embed_names(self.embed_documents, self.embed_budget_s, names)

    async def pending(self) -> int:
        """Jobs waiting (parked ones not included); refreshes the pending and parked gauges."""
        waiting, parked = await queue.count_jobs(self.pool)
        PENDING.set(waiting)
        PARKED.set(parked)
        return waiting
