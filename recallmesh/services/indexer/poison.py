"""Embedding a batch's texts, and telling a text at fault (poison) from an outage.

A batch whose embedding fails with an error that may be one text's fault (INTERNAL,
UNKNOWN, INVALID_ARGUMENT, ...: not an outage, a timeout or a refusal) is split in halves,
recursively, so the other texts are embedded and the bad one ends up alone. The first text
that fails alone while nothing else has succeeded in the round is followed by a probe text:
if the probe fails too, the service fails every text, which is an outage, not poison. A text
that failed alone counts one failure of its job; after max_attempts failures the job is
parked (recallmesh/services/indexer/queue.py records both). Outages (the embedding service
down, slow, or serving another model than the one recorded in `embedding_space`) never
count towards parking: their jobs back off and are retried.

All the calls of one round, the split ones included, share one budget (embed_budget_s), so
a split round cannot outlast the claim's lease.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import psycopg

from recallmesh.services.embedding.client import Embeddings

EmbedFn = Callable[[list[str]], Awaitable[Embeddings]]

# A text embedded right after a text failed alone, when nothing else had succeeded in the
# round: if it fails too, the service fails every text (an outage), and nothing is poison.
PROBE_TEXT = "recallmesh indexer probe: is the embedding service working?"

# gRPC codes that say the service (or the path to it) failed, never the text.
_OUTAGE_CODES = frozenset({
    "UNAVAILABLE", "DEADLINE_EXCEEDED", "RESOURCE_EXHAUSTED", "CANCELLED", "ABORTED",
    "UNAUTHENTICATED", "PERMISSION_DENIED", "UNIMPLEMENTED",
})


class ModelMismatch(RuntimeError):
    pass


@dataclass
class Round:
    """What one round of (split) embedding calls achieved, by index into its texts."""

    vectors: dict[int, list[float]] = field(default_factory=dict)
    models: set[tuple[str, int]] = field(default_factory=set)
    poisoned: dict[int, str] = field(default_factory=dict)  # failed alone: the text's fault
    error: BaseException | None = None  # an outage: what is left is retried later
    probed: bool = False


async def embed_round(embed: EmbedFn, budget_s: float, texts: list[str],
                      outcome: Round) -> None:
    """Embed texts into outcome, splitting on failure; never raises (an outage or the
    budget running out is recorded in outcome.error, what was embedded is kept)."""
    try:
        async with asyncio.timeout(budget_s):
            await _split(embed, list(range(len(texts))), texts, outcome)
    except Exception as exc:
        if isinstance(exc, TimeoutError) and not str(exc):
            exc = TimeoutError("embedding the batch took longer than the timeout")
        outcome.error = exc


async def embed_names(embed: EmbedFn, budget_s: float, names: list[str]) -> Embeddings:
    """Embed new concept names the same way: a name that fails alone gets no vector
    (its concept is created unembedded, never merged by similarity); an outage raises."""
    outcome = Round()
    async with asyncio.timeout(budget_s):
        await _split(embed, list(range(len(names))), names, outcome)
    if len(outcome.models) > 1:
        raise RuntimeError("the embedding model changed within one batch")
    model_id, dimension = next(iter(outcome.models), ("", 0))
    vectors: list[Any] = [outcome.vectors.get(i) for i in range(len(names))]
    return Embeddings(model_id, dimension, vectors)


async def _split(embed: EmbedFn, idx: list[int], texts: list[str], outcome: Round) -> None:
    """Embed texts[idx]; on an error that may be a text's fault, bisect down to single
    texts and record those that fail alone as poisoned. Outages raise."""
    try:
        embedded = await embed([texts[i] for i in idx])
    except Exception as exc:
        if outage(exc):
            raise
        if len(idx) > 1:
            mid = len(idx) // 2
            await _split(embed, idx[:mid], texts, outcome)
            await _split(embed, idx[mid:], texts, outcome)
            return
        if not outcome.vectors and not outcome.probed:
            # Nothing succeeded yet: is it this text, or does every text fail?
            try:
                await embed([PROBE_TEXT])
            except Exception:
                raise exc from None  # every text fails: an outage, not poison
            outcome.probed = True
        outcome.poisoned[idx[0]] = describe(exc)
        return
    if len(embedded.vectors) != len(idx):
        raise RuntimeError(f"the embedding service returned {len(embedded.vectors)} "
                           f"vectors for {len(idx)} texts")
    outcome.models.add((embedded.model_id, embedded.dimension))
    outcome.vectors.update(zip(idx, embedded.vectors, strict=True))


def outage(exc: BaseException) -> bool:
    """The failure says the service (or the way to it) failed, not the text: never split,
    never counted against a job."""
    if isinstance(exc, TimeoutError | ModelMismatch | asyncio.CancelledError):
        return True
    code = getattr(exc, "code", None)
    return callable(code) and getattr(code(), "name", "") in _OUTAGE_CODES


def write_outage(exc: BaseException) -> bool:
    """A failed write that says the database (or the model) is the trouble, not a memory:
    retried whole, never split. Connection loss, timeouts, deadlocks, a pool without a
    connection: psycopg.OperationalError; a standby after a failover: ReadOnlySqlTransaction;
    a model switch: ModelMismatch."""
    return isinstance(exc, psycopg.OperationalError | psycopg.errors.ReadOnlySqlTransaction
                      | ModelMismatch | asyncio.CancelledError | TimeoutError)


def timed_out(exc: BaseException) -> bool:
    """The embedding call ran past its deadline (not: the service refused or is down)."""
    if isinstance(exc, TimeoutError):
        return True
    code = getattr(exc, "code", None)
    return callable(code) and getattr(code(), "name", "") == "DEADLINE_EXCEEDED"


def describe(exc: BaseException) -> str:
    code = getattr(exc, "code", None)
    details = getattr(exc, "details", None)
    if callable(code) and callable(details):  # grpc.aio.AioRpcError
        return f"embedding service: {code().name}: {details()}"
    return f"{type(exc).__name__}: {exc}"
