"""The indexer process: health-checked like every service, runs the job loop in the background.

It has no RPCs of its own (its gRPC server carries only health + reflection).
New jobs wake it through LISTEN/NOTIFY; a poll interval covers missed
notifications and retries that come due.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

import grpc
import psycopg
from psycopg_pool import AsyncConnectionPool

from recallmesh.services.embedding.client import EmbedderClient, Embeddings
from recallmesh.services.graph.extraction import make_extractor
from recallmesh.services.indexer.concepts import ConceptWriter
from recallmesh.services.indexer.core import Indexer
from recallmesh.services.indexer.expiry import run_sweeper
from recallmesh.services.indexer.loop import NOTIFY_CHANNEL, run_forever
from recallmesh.services.indexer.metrics import export_job_zeros
from recallmesh.services.indexer.settings import IndexerSettings
from recallmesh.shared.db import WRITE, open_pool, resolve_dsn, unreachable
from recallmesh.shared.settings import ConfigError

log = logging.getLogger(__name__)

STOP_GRACE_S = 3.0


class IndexerApp:
    service_names: tuple[str, ...] = ()

    def __init__(self) -> None:
        self.pool: AsyncConnectionPool | None = None
        self.client: EmbedderClient | None = None
        self.listener: psycopg.AsyncConnection | None = None
        self.task: asyncio.Task[None] | None = None
        self.sweeper: asyncio.Task[None] | None = None
        self.stop_event = asyncio.Event()
        self.dsn = ""

    async def start(self) -> None:
        settings = IndexerSettings.from_env()
        export_job_zeros()
        self.dsn = resolve_dsn()
        self.pool = await open_pool(self.dsn, name="indexer", query_class=WRITE)
        self.client = EmbedderClient(settings.embedding_target)
        client = self.client

        max_texts: list[int] = []  # learnt from ModelInfo; forgotten after a failed batch

        async def embed_documents(texts: list[str]) -> Embeddings:
            """Embed texts in calls the embedding service accepts, all within
            embed_timeout_s (the claim's lease is twice that; a batch split after a failure
            shares one such budget across its calls, see Indexer.embed_budget_s)."""
            deadline = time.monotonic() + settings.embed_timeout_s

            def remaining() -> float:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError("embedding the batch took longer than the timeout")
                return left

            try:
                if not max_texts:
                    info = await client.model_info(remaining())
                    max_texts.append(max(1, info.max_texts_per_call))
                step = max_texts[0]
                parts = [
                    await client.embed(texts[i : i + step], "document", remaining())
                    for i in range(0, len(texts), step)
                ]
            except Exception:
                max_texts.clear()  # the service may have restarted with other limits
                raise
            if len({(p.model_id, p.dimension) for p in parts}) != 1:
                raise RuntimeError("the embedding model changed within one batch")
            vectors = [v for p in parts for v in p.vectors]
            return Embeddings(parts[0].model_id, parts[0].dimension, vectors)

        try:
            extractor = make_extractor(settings.concept_extractor)
        except ValueError as exc:
            raise ConfigError(f"RECALLMESH_CONCEPT_EXTRACTOR: {exc}") from None
        indexer = Indexer(
            self.pool,
            embed_documents,
            batch_size=settings.batch_size,
            lease_s=settings.embed_timeout_s * 2,
            embed_budget_s=settings.embed_timeout_s,
            base_backoff_s=settings.base_backoff_s,
            max_backoff_s=settings.max_backoff_s,
            max_attempts=settings.max_attempts,
            concepts=(None if extractor.name == "none"
                      else ConceptWriter(extractor, settings.concept_merge_threshold,
                                         cache_bytes=settings.concept_cache_mb << 20)),
        )
        self.task = asyncio.get_running_loop().create_task(
            run_forever(indexer, self._wait_for_work, self.stop_event, settings.poll_s)
        )
        if settings.expiry_sweep_s > 0:
            self.sweeper = asyncio.get_running_loop().create_task(
                run_sweeper(self.pool, self.stop_event, settings.expiry_sweep_s))
        log.info("indexer started", extra={"embedding_target": settings.embedding_target,
                                           "batch_size": settings.batch_size,
                                           "max_attempts": settings.max_attempts,
                                           "expiry_sweep_s": settings.expiry_sweep_s})

    async def _listen(self) -> psycopg.AsyncConnection:
        if self.listener is None or self.listener.closed:
            self.listener = await psycopg.AsyncConnection.connect(
                self.dsn, autocommit=True, application_name="recallmesh-indexer-listen"
            )
            await self.listener.execute(f"LISTEN {NOTIFY_CHANNEL}")
        return self.listener

    async def _wait_for_work(self, timeout_s: float) -> None:
        """Return on a job notification, after timeout_s, or at stop."""
        try:
            conn = await self._listen()
            async for _ in conn.notifies(timeout=timeout_s, stop_after=1):
                pass
        except psycopg.Error as exc:  # lost connection: fall back to polling
            log.warning("LISTEN connection failed: %s", exc)
            if self.listener is not None:
                await self.listener.close()
            self.listener = None
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stop_event.wait(), timeout_s)

    async def ready(self) -> str:
        return await unreachable(self.pool)

    def register(self, server: grpc.aio.Server) -> None:
        pass

    async def stop(self) -> None:
        self.stop_event.set()
        if self.sweeper is not None:  # a batch in flight is one short transaction
            try:
                await asyncio.wait_for(asyncio.shield(self.sweeper), STOP_GRACE_S)
            except TimeoutError:
                self.sweeper.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self.sweeper
        if self.task is not None:
            # Let the batches in flight finish (their vectors are written, their jobs
            # dropped); a batch cut short would only wait out its lease.
            try:
                await asyncio.wait_for(asyncio.shield(self.task), STOP_GRACE_S)
            except TimeoutError:
                self.task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self.task
            except Exception:  # the loop died earlier: still close everything below
                log.exception("indexer loop had failed")
        if self.listener is not None:
            await self.listener.close()
        if self.client is not None:
            await self.client.close()
        if self.pool is not None:
            await self.pool.close()
