"""The indexer: turns embedding jobs (the outbox) into stored vectors.

Every write of a non-sensitive memory enqueues a job in the same transaction
(database triggers, migrations/0002). The indexer:
  1. claims due jobs with `FOR UPDATE SKIP LOCKED` and leases them (pushes
     next_attempt_at forward), so several indexers never embed the same row
     and a crashed one's jobs come back after the lease;
  2. embeds the claimed contents in one call to the embedding service,
     holding no database locks while it waits;
  3. in one transaction, takes the batch's namespaces' write locks as every
     writer does (recallmesh.shared.db.lock_for_write: a purge of the namespace
     waits, so no concept the batch links to goes from under it), locks the
     memories (always before their jobs, the same order writers use, so no
     deadlock), deletes each job only if its version is still the one
     embedded, and writes the vectors of exactly those rows. A memory edited
     meanwhile keeps its (re-versioned) job and is embedded again with its new
     content; one deleted or made sensitive meanwhile gets nothing. A write
     that fails for a reason that may be one memory's (not an outage) is split
     in halves, recursively, like a poison batch below: the others are
     written, and the memory that fails alone counts a failure of its job;
  4. on failure (embedding service down, slow, serving another model than
     the one recorded in `embedding_space`) records the error and backs the
     jobs off exponentially, capped at max_backoff_s. A batch that ran out of
     time (a slow model on a busy CPU, long texts) also halves the number of
     jobs claimed next (down to one), so the indexer cannot be stuck retrying a
     batch it can never finish in time; each batch done in time doubles it
     again, up to batch_size.
  5. poison jobs: a batch whose embedding fails with an error that may be
     one text's fault (INTERNAL, UNKNOWN, INVALID_ARGUMENT, ...: not an
     outage, a timeout or a refusal) is split in halves, recursively, so the
     other texts are embedded and written and the bad one ends up alone. The
     first text that fails alone while nothing else has succeeded in the round
     is followed by a probe text: if the probe fails too, the service fails
     every text, which is an outage, not poison. A text that failed alone
     counts one failure of its job (`failures`) and backs off like any
     failure; after max_attempts failures the job is parked (`parked_at`,
     never claimed again, not pending) with its last error, for `recallmesh
     jobs list|retry|drop`. Outages never count towards parking.
Sensitive memories never get a job; if one is found anyway, its job is
dropped and its text is never sent to the embedding service.

run_forever keeps two batches in flight: the next one is claimed and embedded
while the last one is written, one batch per step at a time, so the model is
not idle while vectors are written (docs/decisions/0025-concepts-when-the-graph-is-asked.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import psycopg
from prometheus_client import Counter, Gauge, Histogram

from recallmesh.migrations.vector_schema import vector_literal
from recallmesh.services.embedding.client import Embeddings
from recallmesh.services.indexer.concepts import ConceptWriter, Source
from recallmesh.shared.db import WRITE, lock_for_write, transaction
from recallmesh.wire.filters import not_deleted

if TYPE_CHECKING:
    from recallmesh.services.graph.extraction import Extraction

log = logging.getLogger(__name__)

NOTIFY_CHANNEL = "recallmesh_embedding_jobs"
PENDING_REFRESH_S = 1.0  # how often the pending-jobs gauge is recounted

JOBS = Counter(
    "recallmesh_indexer_jobs_total",
    "Embedding jobs finished, by outcome (indexed, superseded, dropped, failed, parked).",
    ["outcome"],
)
JOB_OUTCOMES = ("indexed", "superseded", "dropped", "failed", "parked")
BATCH_SECONDS = Histogram(
    "recallmesh_indexer_batch_seconds",
    "Claim + embed + write time of one indexer batch.",
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
PENDING = Gauge("recallmesh_indexer_pending_jobs",
                "Embedding jobs waiting, parked ones not included (all namespaces).")
PARKED = Gauge("recallmesh_indexer_parked_jobs",
               "Embedding jobs parked after max_attempts failures of their own text (all "
               "namespaces): their memories are found lexically only until `recallmesh jobs "
               "retry` or `drop`.")
CLAIM_SIZE = Gauge("recallmesh_indexer_claim_size",
                   "Jobs the indexer claims per batch now: the batch size, halved after each "
                   "batch that ran out of time and doubled back after each in time, up to 3/4 "
                   "of the last claim that ran out of time (for probe_after batches).")

_CLAIM = """
WITH due AS (
    SELECT memory_id FROM embedding_jobs
    WHERE next_attempt_at <= clock_timestamp() AND parked_at IS NULL
    ORDER BY next_attempt_at, memory_id
    LIMIT %(n)s
    FOR UPDATE SKIP LOCKED
)
UPDATE embedding_jobs j
SET next_attempt_at = clock_timestamp() + make_interval(secs => %(lease_s)s),
    attempts = j.attempts + 1
FROM due
WHERE j.memory_id = due.memory_id
RETURNING j.memory_id::text
"""

# Read after the claim, in a statement of its own: one fresh snapshot, so each
# job's version and its memory's content belong together. (Read inside the
# claim, a concurrent edit could pair the new version with the old text.)
_READ_CLAIMED = """
SELECT j.memory_id::text, j.version, m.content, (m.is_sensitive OR m.deleted_at IS NOT NULL),
       m.namespace, m.tags, m.created_at
FROM embedding_jobs j JOIN memories m ON m.id = j.memory_id
WHERE j.memory_id = ANY(%(ids)s::uuid[])
"""

_LOCK_MEMORIES = "SELECT id FROM memories WHERE id = ANY(%(ids)s::uuid[]) ORDER BY id FOR UPDATE"

_COMPLETE = f"""
WITH done AS (
    DELETE FROM embedding_jobs j
    USING unnest(%(ids)s::uuid[], %(versions)s::bigint[]) AS c(id, version)
    WHERE j.memory_id = c.id AND j.version = c.version
    RETURNING j.memory_id
)
UPDATE memories m
SET embedding = v.embedding::halfvec, embedding_model = %(model)s
FROM unnest(%(ids)s::uuid[], %(vectors)s::text[]) AS v(id, embedding)
WHERE m.id = v.id AND m.id IN (SELECT memory_id FROM done)
  AND NOT m.is_sensitive AND {not_deleted("m")}
RETURNING m.id::text
"""

_DROP = """
DELETE FROM embedding_jobs j
USING unnest(%(ids)s::uuid[], %(versions)s::bigint[]) AS c(id, version)
WHERE j.memory_id = c.id AND j.version = c.version
"""

_BACKOFF = ("clock_timestamp() + make_interval(secs => least(%(max_s)s, "
            "%(base_s)s * power(2, least(greatest(j.attempts - 1, 0), 30))))")

# A failure that is not the jobs' fault (outage, timeout, model mismatch): back off only.
_FAIL = f"""
UPDATE embedding_jobs j
SET next_attempt_at = {_BACKOFF},
    last_error = %(error)s
FROM unnest(%(ids)s::uuid[], %(versions)s::bigint[]) AS c(id, version)
WHERE j.memory_id = c.id AND j.version = c.version AND j.parked_at IS NULL
"""

# The job's own text failed: count it, back off, and park the job at max_attempts.
_POISONED = f"""
UPDATE embedding_jobs j
SET failures = j.failures + 1,
    last_error = c.error,
    parked_at = CASE WHEN j.failures + 1 >= %(max_attempts)s THEN clock_timestamp() END,
    next_attempt_at = CASE WHEN j.failures + 1 >= %(max_attempts)s THEN 'infinity'
                           ELSE {_BACKOFF} END
FROM unnest(%(ids)s::uuid[], %(versions)s::bigint[], %(errors)s::text[])
     AS c(id, version, error)
WHERE j.memory_id = c.id AND j.version = c.version AND j.parked_at IS NULL
RETURNING j.memory_id::text, j.parked_at IS NOT NULL, j.failures
"""

# A text embedded right after a text failed alone, when nothing else had succeeded in the
# round: if it fails too, the service fails every text (an outage), and nothing is poison.
PROBE_TEXT = "recallmesh indexer probe: is the embedding service working?"

# gRPC codes that say the service (or the path to it) failed, never the text.
_OUTAGE_CODES = frozenset({
    "UNAVAILABLE", "DEADLINE_EXCEEDED", "RESOURCE_EXHAUSTED", "CANCELLED", "ABORTED",
    "UNAUTHENTICATED", "PERMISSION_DENIED", "UNIMPLEMENTED",
})


def backoff_s(failures: int, base_s: float, max_s: float) -> float:
    """Exponential backoff after `failures` consecutive failures, capped (the SQL in _FAIL
    applies the same rule per job, exponent capped at 30 there too)."""
    delay: float = min(max_s, base_s * 2 ** min(max(failures - 1, 0), 30))
    return delay


class ModelMismatch(RuntimeError):
    pass


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


@dataclass
class _Round:
    """What one round of (split) embedding calls achieved, by index into its texts."""

    vectors: dict[int, list[float]] = field(default_factory=dict)
    models: set[tuple[str, int]] = field(default_factory=set)
    poisoned: dict[int, str] = field(default_factory=dict)  # failed alone: the text's fault
    error: BaseException | None = None  # an outage: what is left is retried later
    probed: bool = False


@dataclass
class _Claimed:
    """A claimed batch between its embedding turn and its write turn."""

    asked: int
    claimed: int
    dropped: int
    work: list[tuple[str, int, str]]  # (memory id, job version, content)
    sources: list[Source]
    namespaces: dict[str, str]  # memory id -> namespace
    outcome: _Round = field(default_factory=_Round)
    extractions: list[Extraction] | None = None


EmbedFn = Callable[[list[str]], Awaitable[Embeddings]]


def export_job_zeros() -> None:
    """recallmesh_indexer_jobs_total at zero for every outcome, from the start: the alert
    RecallmeshEmbeddingBacklogStuck and the dashboard read its increase, and a labelled counter
    is otherwise exported only from its first increment (which rate() cannot see)."""
    for outcome in JOB_OUTCOMES:
        JOBS.labels(outcome)


class Indexer:
    def __init__(
        self,
        pool: Any,
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
        self.batch_size = batch_size
        self.claim_size = batch_size  # halved after a timeout, grows back after successes
        self.last_claim = batch_size  # what the last batch asked for
        # The last claim that ran out of time: the claim grows back only to 3/4 of it, so a
        # size that cannot finish in time is not tried again batch after batch (doubling back
        # to it made every other batch fail and threw its work away). After `probe_after`
        # batches in time it is forgotten, and the claim may grow to the batch size again.
        self.too_big: int | None = None
        self.probe_after = probe_after
        self.in_time = 0  # batches done in time since the last timeout
        CLAIM_SIZE.set(batch_size)
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

    async def _claim_and_embed(self) -> BatchResult | _Claimed:
        """Claim due jobs, drop those of sensitive or deleted memories, embed the rest (and
        extract their concepts), and size the next claim by whether this one was in time."""
        asked = self.last_claim = self.claim_size
        async with self.pool.connection() as conn:
            cur = await conn.execute(_CLAIM, {"n": asked, "lease_s": self.lease_s})
            claimed_ids = [r[0] for r in await cur.fetchall()]
            if not claimed_ids:
                return BatchResult(0, asked=asked)
            cur = await conn.execute(_READ_CLAIMED, {"ids": claimed_ids})
            claimed = await cur.fetchall()  # jobs deleted meanwhile are simply gone
        if not claimed:
            return BatchResult(len(claimed_ids), asked=asked)
        skip = [(r[0], r[1]) for r in claimed if r[3]]
        work = [(r[0], r[1], r[2]) for r in claimed if not r[3]]
        sources = [Source(r[0], r[4], r[2], tuple(r[5]), r[6]) for r in claimed if not r[3]]
        if skip:
            async with self.pool.connection() as conn:
                await conn.execute(
                    _DROP, {"ids": [s[0] for s in skip], "versions": [s[1] for s in skip]}
                )
            JOBS.labels("dropped").inc(len(skip))
        if not work:
            return BatchResult(len(claimed), dropped=len(skip), asked=asked)
        batch = _Claimed(asked, len(claimed), len(skip), work, sources,
                         {r[0]: r[4] for r in claimed})
        texts = [w[2] for w in work]
        outcome = batch.outcome
        if self.concepts is None:
            await self._embed_round(texts, outcome)
        else:  # extract concepts (CPU, a thread) while the embedding service works
            _, extracted = await asyncio.gather(
                self._embed_round(texts, outcome), self.concepts.extract(sources),
                return_exceptions=True)
            if isinstance(extracted, BaseException):  # nothing is written: retry all
                outcome.error, outcome.vectors, outcome.poisoned = extracted, {}, {}
            else:
                batch.extractions = extracted
        self._size_next_claim(asked, outcome.error)
        return batch

    def _size_next_claim(self, asked: int, error: BaseException | None) -> None:
        """A batch that ran out of time halves the next claim; one in time doubles it back,
        up to 3/4 of the last claim that ran out of time (forgotten after probe_after batches
        in time) or the batch size."""
        if error is not None:
            if _timed_out(error):
                self.too_big, self.in_time = asked, 0
                if self.claim_size > 1:
                    self.claim_size = max(1, self.claim_size // 2)
                    CLAIM_SIZE.set(self.claim_size)
            return
        self.in_time += 1
        if self.too_big is not None and self.in_time >= self.probe_after:
            self.too_big = None
        cap = self.batch_size if self.too_big is None else max(1, self.too_big * 3 // 4)
        grown = min(cap, self.claim_size * 2)
        if grown > self.claim_size:
            self.claim_size = grown
            CLAIM_SIZE.set(self.claim_size)

    async def _write_batch(self, batch: _Claimed) -> BatchResult:
        """Write what the batch embedded; back off, count and park what it did not."""
        work, outcome = batch.work, batch.outcome
        written = 0
        done = sorted(outcome.vectors)
        try:
            if done:
                written = await self._write(work, batch.sources, batch.extractions, outcome,
                                            done)
                done = [i for i in done if i not in outcome.poisoned]  # failed alone
        except Exception as exc:  # the write failed (model mismatch, database): retry all
            outcome.error, outcome.poisoned, done, written = exc, {}, [], 0
        error = _describe(outcome.error) if outcome.error is not None else ""
        poisoned = sorted(outcome.poisoned)
        settled = set(done) | set(outcome.poisoned)
        retry = [i for i in range(len(work)) if i not in settled]
        parked = await self._record_failures(work, batch.namespaces, outcome, poisoned, retry,
                                             error)
        failed = len(poisoned) + len(retry)
        if failed:
            JOBS.labels("failed").inc(failed)
        if done:
            JOBS.labels("indexed").inc(written)
            JOBS.labels("superseded").inc(len(done) - written)
        if outcome.error is not None:
            log.warning("embedding batch failed; will retry", extra={
                "jobs": len(retry), "embedded": written, "error": error,
                "next_claim": self.claim_size})
        return BatchResult(
            batch.claimed, indexed=written, superseded=len(done) - written,
            dropped=batch.dropped, failed=failed, error=error, poisoned=len(poisoned),
            parked=parked, asked=batch.asked)

    async def _write(self, work: list[tuple[str, int, str]], sources: list[Source],
                     extractions: list[Any] | None, outcome: _Round, done: list[int]) -> int:
        """Write the vectors of the embedded jobs (and their concepts); how many were written.
        A write that fails for a reason that may be a memory's own is split in halves,
        recursively; a memory whose write fails alone is recorded in outcome.poisoned."""
        if len(outcome.models) != 1:
            raise RuntimeError("the embedding model changed within one batch")
        (model_id, _), = outcome.models
        prepared = None
        if self.concepts is not None and extractions is not None:
            prepared = await self.concepts.prepare(
                self.pool, [sources[i] for i in done], [extractions[i] for i in done],
                self._embed_names)

        async def split(idx: list[int]) -> int:
            try:
                return await self._write_rows(work, sources, prepared, outcome, idx, model_id)
            except Exception as exc:
                if _write_outage(exc):
                    raise
                if len(idx) > 1:
                    mid = len(idx) // 2
                    return await split(idx[:mid]) + await split(idx[mid:])
                outcome.poisoned[idx[0]] = f"writing its vector failed: {_describe(exc)}"
                return 0

        return await split(done)

    async def _write_rows(self, work: list[tuple[str, int, str]], sources: list[Source],
                          prepared: Any, outcome: _Round, done: list[int], model_id: str
                          ) -> int:
        """One transaction writing the vectors (and concepts) of work[done]."""
        ids = [work[i][0] for i in done]
        async with transaction(self.pool, WRITE) as conn:
            await lock_for_write(conn, {sources[i].namespace for i in done})
            # Vectors of another model than the live one must never be stored
            # (e.g. an embedding service not yet restarted after a model switch).
            cur = await conn.execute("SELECT model_id FROM embedding_space FOR SHARE")
            live = await cur.fetchone()
            if live is None or live[0] != model_id:
                raise ModelMismatch(
                    f"embedding service serves {model_id!r}, the database "
                    f"holds vectors of {live[0] if live else None!r}"
                )
            await conn.execute(_LOCK_MEMORIES, {"ids": ids})
            cur = await conn.execute(
                _COMPLETE,
                {
                    "ids": ids,
                    "versions": [work[i][1] for i in done],
                    "vectors": [vector_literal(outcome.vectors[i]) for i in done],
                    "model": model_id,
                },
            )
            written_ids = {r[0] for r in await cur.fetchall()}
            if self.concepts is not None and prepared is not None:  # prepared only with concepts
                await self.concepts.write(conn, prepared, written_ids)
        return len(written_ids)

    async def _record_failures(self, work: list[tuple[str, int, str]],
                               namespaces: dict[str, str], outcome: _Round,
                               poisoned: list[int], retry: list[int], error: str) -> int:
        """Back off the jobs left; count the poisoned ones' failures and park those at
        max_attempts. Returns how many were parked."""
        if not poisoned and not retry:
            return 0
        backoff = {"base_s": self.base_backoff_s, "max_s": self.max_backoff_s}
        parked = 0
        async with self.pool.connection() as conn:
            if retry:
                await conn.execute(_FAIL, {
                    "ids": [work[i][0] for i in retry], "versions": [work[i][1] for i in retry],
                    "error": error[:1000], **backoff})
            if poisoned:
                cur = await conn.execute(_POISONED, {
                    "ids": [work[i][0] for i in poisoned],
                    "versions": [work[i][1] for i in poisoned],
                    "errors": [outcome.poisoned[i][:1000] for i in poisoned],
                    "max_attempts": self.max_attempts, **backoff})
                errors = {work[i][0]: outcome.poisoned[i] for i in poisoned}
                for memory_id, now_parked, failures in await cur.fetchall():
                    where = {"memory_id": memory_id, "namespace": namespaces.get(memory_id, ""),
                             "failures": failures, "error": errors.get(memory_id, "")}
                    if now_parked:
                        parked += 1
                        log.error("embedding job parked after %d failures of its text",
                                  failures, extra=where)
                    else:
                        log.warning("embedding failed for one text; will retry", extra={
                            **where, "max_attempts": self.max_attempts})
        if parked:
            JOBS.labels("parked").inc(parked)
        return parked

    async def _embed_round(self, texts: list[str], outcome: _Round) -> None:
        """Embed texts into outcome, splitting on failure; never raises (an outage or the
        budget running out is recorded in outcome.error, what was embedded is kept)."""
        try:
            async with asyncio.timeout(self.embed_budget_s):
                await self._split(list(range(len(texts))), texts, outcome)
        except Exception as exc:
            if isinstance(exc, TimeoutError) and not str(exc):
                exc = TimeoutError("embedding the batch took longer than the timeout")
            outcome.error = exc

    async def _split(self, idx: list[int], texts: list[str], outcome: _Round) -> None:
        """Embed texts[idx]; on an error that may be a text's fault, bisect down to single
        texts and record those that fail alone as poisoned. Outages raise."""
        try:
            embedded = await self.embed_documents([texts[i] for i in idx])
        except Exception as exc:
            if _outage(exc):
                raise
            if len(idx) > 1:
                mid = len(idx) // 2
                await self._split(idx[:mid], texts, outcome)
                await self._split(idx[mid:], texts, outcome)
                return
            if not outcome.vectors and not outcome.probed:
                # Nothing succeeded yet: is it this text, or does every text fail?
                try:
                    await self.embed_documents([PROBE_TEXT])
                except Exception:
                    raise exc from None  # every text fails: an outage, not poison
                outcome.probed = True
            outcome.poisoned[idx[0]] = _describe(exc)
            return
        if len(embedded.vectors) != len(idx):
            raise RuntimeError(f"the embedding service returned {len(embedded.vectors)} "
                               f"vectors for {len(idx)} texts")
        outcome.models.add((embedded.model_id, embedded.dimension))
        outcome.vectors.update(zip(idx, embedded.vectors, strict=True))

    async def _embed_names(self, names: list[str]) -> Embeddings:
        """Embed new concept names the same way: a name that fails alone gets no vector
        (its concept is created unembedded, never merged by similarity); an outage raises."""
        outcome = _Round()
        async with asyncio.timeout(self.embed_budget_s):
            await self._split(list(range(len(names))), names, outcome)
        if len(outcome.models) > 1:
            raise RuntimeError("the embedding model changed within one batch")
        model_id, dimension = next(iter(outcome.models), ("", 0))
        vectors: list[Any] = [outcome.vectors.get(i) for i in range(len(names))]
        return Embeddings(model_id, dimension, vectors)

    async def pending(self) -> int:
        """Jobs waiting (parked ones not included); refreshes the pending and parked gauges."""
        async with self.pool.connection() as conn:
            cur = await conn.execute(
                "SELECT count(*) FILTER (WHERE parked_at IS NULL), "
                "count(*) FILTER (WHERE parked_at IS NOT NULL) FROM embedding_jobs")
            waiting, parked = await cur.fetchone()
        PENDING.set(int(waiting))
        PARKED.set(int(parked))
        return int(waiting)


def _outage(exc: BaseException) -> bool:
    """The failure says the service (or the way to it) failed, not the text: never split,
    never counted against a job."""
    if isinstance(exc, TimeoutError | ModelMismatch | asyncio.CancelledError):
        return True
    code = getattr(exc, "code", None)
    return callable(code) and getattr(code(), "name", "") in _OUTAGE_CODES


def _write_outage(exc: BaseException) -> bool:
    """A failed write that says the database (or the model) is the trouble, not a memory:
    retried whole, never split. Connection loss, timeouts, deadlocks, a pool without a
    connection: psycopg.OperationalError; a standby after a failover: ReadOnlySqlTransaction;
    a model switch: ModelMismatch."""
    return isinstance(exc, psycopg.OperationalError | psycopg.errors.ReadOnlySqlTransaction
                      | ModelMismatch | asyncio.CancelledError | TimeoutError)


def _timed_out(exc: BaseException) -> bool:
    """The embedding call ran past its deadline (not: the service refused or is down)."""
    if isinstance(exc, TimeoutError):
        return True
    code = getattr(exc, "code", None)
    return callable(code) and getattr(code(), "name", "") == "DEADLINE_EXCEEDED"


def _describe(exc: BaseException) -> str:
    code = getattr(exc, "code", None)
    details = getattr(exc, "details", None)
    if callable(code) and callable(details):  # grpc.aio.AioRpcError
        return f"embedding service: {code().name}: {details()}"
    return f"{type(exc).__name__}: {exc}"


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
