"""gRPC adapter of the gateway: MemoryService over MemoryStore and Recaller."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

import grpc
from psycopg_pool import AsyncConnectionPool

from recallmesh.auth.authenticator import Authenticator
from recallmesh.auth.interceptors import CALLER, GatewayAuth
from recallmesh.auth.jwt_tokens import JwtVerifier
from recallmesh.auth.keys import KeyStore
from recallmesh.auth.principal import UNAUTHENTICATED_LOCAL, Principal, Scope
from recallmesh.gateway import history, listing, namespaces
from recallmesh.gateway.context_block import TokenCounter, is_temporal, pack
from recallmesh.gateway.fusion_call import FusionClient
from recallmesh.gateway.keys import KeyServicer
from recallmesh.gateway.legs import GrpcLeg, leg_failure
from recallmesh.gateway.metrics import export_recall_zeros
from recallmesh.gateway.recall import Recaller, RecallOutcome
from recallmesh.gateway.settings import GatewaySettings
from recallmesh.gateway.stages import CONTEXT_NEXT, CONTEXT_PREV, RANKER
from recallmesh.gateway.store import MemoryStore
from recallmesh.gateway.time_window import TIME_WINDOW_LEG
from recallmesh.gateway.write_keys import LOCAL, Writer
from recallmesh.migrations import latest_version
from recallmesh.services.embedding.client import EmbedderClient, Embeddings
from recallmesh.shared.db import StuckBackends, open_pool, resolve_dsn, unreachable
from recallmesh.shared.errors import InvalidArgument
from recallmesh.shared.replicas import Reads
from recallmesh.shared.settings import AuthSettings
from recallmesh.v1 import keys_pb2, keys_pb2_grpc, memory_pb2, memory_pb2_grpc
from recallmesh.wire import validation
from recallmesh.wire.enums import LEG_STATE_VALUES
from recallmesh.wire.replies import (
    ANSWER_ROOM,
    FIELD_OVERHEAD,
    fit,
    link_to_proto,
    memory_to_proto,
    record_to_proto,
    version_to_proto,
)
from recallmesh.wire.timestamps import to_proto_timestamp
from recallmesh.wire.validation import MAX_IMPORT_VERSIONS

log = logging.getLogger(__name__)

def caller_name() -> str:
    """Who is calling, as History records it: the API key's name or the JWT's subject;
    "local" when authentication is off."""
    caller = CALLER.get(None)
    if caller is None or caller.kind == "local":
        return "local"
    return caller.subject


def caller_may_read() -> bool:
    """Whether the caller holds the read scope (the interceptor has checked the namespace);
    true when authentication is off."""
    caller = CALLER.get(None)
    return caller is None or Scope.READ in caller.scopes


def caller_writer() -> Writer:
    """The caller as a writer: what memories.written_by records of it, and whether it may read
    (a write-only key is answered about its own memories only: docs/decisions/0011)."""
    caller = CALLER.get(None)
    return Writer(caller.writer if caller is not None else LOCAL.name, caller_may_read())


def caller_to_proto(caller: Principal) -> memory_pb2.Caller:
    """Who the caller is, as ListNamespaces tells it: never a secret."""
    return memory_pb2.Caller(subject=caller.subject, grants=list(caller.grants),
                             scopes=[s.value for s in Scope if s in caller.scopes],
                             kind=caller.kind)


def recall_to_proto(outcome: RecallOutcome, explain: bool) -> memory_pb2.RecallResponse:
    response = memory_pb2.RecallResponse(
        degraded=outcome.degraded, fusion=outcome.fusion, latency_ms=outcome.latency_ms,
        relevance_floor=outcome.relevance_floor,
    )
    reasons = {o.leg: o.answer.reasons for o in outcome.legs if o.answer is not None}
    for hit in outcome.hits:
        msg = response.hits.add(memory=memory_to_proto(hit.memory), score=hit.score)
        if explain:
            for c in hit.fused.contributions:
                reason = (f"stored next after hit {c.rank}" if c.leg == CONTEXT_NEXT
                          else f"stored just before hit {c.rank}" if c.leg == CONTEXT_PREV
                          else f"created inside {outcome.time_window.phrase!r} (fused rank "
                               f"{c.rank} before the boost)"
                          if c.leg == TIME_WINDOW_LEG and outcome.time_window is not None
                          else "the ranker's score; the hit's score is its relevance estimate"
                          if c.leg == RANKER
                          else reasons.get(c.leg, {}).get(hit.memory.id, ""))
                msg.legs.add(leg=c.leg, rank=c.rank, score=c.score, reason=reason)
    if outcome.time_window is not None:
        window = outcome.time_window
        response.time_window.phrase = window.phrase
        response.time_window.boosted = outcome.time_boosted
        to_proto_timestamp(window.start, response.time_window.start)
        to_proto_timestamp(window.end, response.time_window.end)
    if outcome.route is not None:
        response.intent.name = outcome.route.intent
        response.intent.phrase = outcome.route.phrase
    for leg in outcome.legs:
        response.legs.add(
            leg=leg.leg,
            state=LEG_STATE_VALUES[leg.state],
            latency_ms=leg.latency_ms,
            candidates=len(leg.candidates),
            detail=leg.detail,
            score_scale=leg.answer.score_scale if leg.answer is not None else None,
            score_floor=leg.answer.score_floor if leg.answer is not None else None,
        )
    return response


class MemoryServicer(memory_pb2_grpc.MemoryServiceServicer):
    def __init__(self, store: MemoryStore, recaller: Recaller, pages: listing.PageTokens,
                 index_wait_ms: int = 30000, token_counter: TokenCounter | None = None) -> None:
        self.store = store
        self.pages = pages
        self.recaller = recaller
        self.index_wait_ms = index_wait_ms
        self.token_counter = token_counter or TokenCounter.approximate()

    async def _indexed(
        self,
        wait_ms: int | None,
        context: grpc.aio.ServicerContext,
        ids: list[str],
        needs_index: bool,
    ) -> bool:
        """After a committed write: wait for indexing if asked; report whether it is done.

        Done means a recall finds the write: its embedding job is through and, with a read
        replica, the replicas have replayed it (read-your-writes: the write waits, so the
        recall that follows reads from any replica). wait_ms is the request's validated
        IndexWait (validated before writing)."""
        if wait_ms is None:
            return not needs_index
        timeout_s = (wait_ms or self.index_wait_ms) / 1000
        remaining = context.time_remaining()
        if remaining is not None:  # answer before the client gives up
            timeout_s = min(timeout_s, max(remaining - 0.05, 0.0))
        until = time.monotonic() + timeout_s
        if needs_index and not await self.store.wait_indexed(ids, timeout_s):
            return False
        return await self.store.visible_to_reads(max(until - time.monotonic(), 0.0))

    async def Store(
        self, request: memory_pb2.StoreRequest, context: grpc.aio.ServicerContext,
    ) -> memory_pb2.StoreResponse:
        ns = validation.namespace(request.namespace)
        if not request.HasField("memory"):
            raise InvalidArgument("memory is required")
        memory = validation.new_memory(request.memory, ns)
        wait_ms = validation.index_wait(request.index_wait, request.HasField("index_wait"))
        stored, existing = await self.store.store(ns, memory, caller_writer())
        indexed = await self._indexed(wait_ms, context, [stored.id], not stored.sensitive)
        return memory_pb2.StoreResponse(memory=memory_to_proto(stored), indexed=indexed,
                                        existing=existing)

    async def StoreBatch(
        self, request: memory_pb2.StoreBatchRequest, context: grpc.aio.ServicerContext,
    ) -> memory_pb2.StoreBatchResponse:
        ns = validation.namespace(request.namespace)
        memories = validation.new_memories(request.memories, ns)
        wait_ms = validation.index_wait(request.index_wait, request.HasField("index_wait"))
        ids, existing = await self.store.store_batch(ns, memories, caller_writer())
        needs = list(dict.fromkeys(i for i, m in zip(ids, memories, strict=True)
                                   if not m.sensitive))
        indexed = await self._indexed(wait_ms, context, needs, bool(needs))
        return memory_pb2.StoreBatchResponse(ids=ids, indexed=indexed, existing=existing)

    async def Update(
        self, request: memory_pb2.UpdateRequest, context: grpc.aio.ServicerContext,
    ) -> memory_pb2.UpdateResponse:
        ns = validation.namespace(request.namespace)
        memory_id = validation.memory_id(request.id)
        changes = validation.memory_update(request.memory, request.update_mask.paths, ns)
        wait_ms = validation.index_wait(request.index_wait, request.HasField("index_wait"))
        paths = list(dict.fromkeys(p.strip() for p in request.update_mask.paths))
        stored = await self.store.update(ns, memory_id, changes, paths, caller_name())
        pending = not stored.sensitive and await self.store.pending_index([memory_id]) > 0
        indexed = await self._indexed(wait_ms, context, [memory_id], pending)
        memory = memory_to_proto(stored)
        if not caller_may_read():  # a write-only key learns that it changed, not what it says
            memory = memory_pb2.Memory(id=memory.id, namespace=memory.namespace,
                                       created_at=memory.created_at,
                                       updated_at=memory.updated_at)
        return memory_pb2.UpdateResponse(memory=memory, indexed=indexed)

    async def Get(
        self, request: memory_pb2.GetRequest, context: grpc.aio.ServicerContext,
    ) -> memory_pb2.GetResponse:
        ns = validation.namespace(request.namespace)
        stored = await self.store.get(ns, validation.memory_id(request.id))
        return memory_pb2.GetResponse(memory=memory_to_proto(stored))

    async def Delete(
        self, request: memory_pb2.DeleteRequest, context: grpc.aio.ServicerContext,
    ) -> memory_pb2.DeleteResponse:
        ns = validation.namespace(request.namespace)
        memory_id = validation.memory_id(request.id)
        if request.purge:
            await self.store.purge(ns, memory_id)
            response = memory_pb2.DeleteResponse(id=memory_id, purged=True)
            to_proto_timestamp(datetime.now(UTC), response.deleted_at)
            return response
        deleted_at = await self.store.delete(ns, memory_id)
        response = memory_pb2.DeleteResponse(id=memory_id)
        to_proto_timestamp(deleted_at, response.deleted_at)
        return response

    async def DeleteNamespace(
        self, request: memory_pb2.DeleteNamespaceRequest, context: grpc.aio.ServicerContext,
    ) -> memory_pb2.DeleteNamespaceResponse:
        ns = validation.namespace(request.namespace)
        removed = await self.store.purge_namespace(ns)
        log.info("namespace deleted", extra={"namespace": ns, "memories": removed})
        return memory_pb2.DeleteNamespaceResponse(memories_removed=removed)

    async def Recall(
        self, request: memory_pb2.RecallRequest, context: grpc.aio.ServicerContext,
    ) -> memory_pb2.RecallResponse:
        query = validation.recall_query(request)
        outcome = await self.recaller.recall(query, context.time_remaining())
        return recall_to_proto(outcome, query.explain)

    async def Context(
        self, request: memory_pb2.ContextRequest, context: grpc.aio.ServicerContext,
    ) -> memory_pb2.ContextResponse:
        started = time.perf_counter()
        query = validation.context_query(request)
        outcome, pinned = await asyncio.gather(
            self.recaller.recall(query.recall, context.time_remaining()),
            self.store.pinned(query.recall.namespace, query.recall.filters))
        now = datetime.now(UTC)
        packed = pack([(hit.memory, hit.score) for hit in outcome.hits], query.max_tokens,
                      self.token_counter, query.recall.filters.as_of or now,
                      dated=is_temporal(query.recall.query, query.recall.reference_time or now),
                      include_sensitive=query.include_sensitive, pinned=pinned)
        response = memory_pb2.ContextResponse(
            text=packed.text, tokens=packed.tokens, tokenizer=self.token_counter.name,
            superseded_omitted=packed.superseded_omitted,
            sensitive_omitted=packed.sensitive_omitted,
            over_budget_omitted=packed.over_budget_omitted,
            degraded=outcome.degraded, dated=packed.dated)
        for item in packed.items:
            msg = response.items.add(id=item.memory.id, score=item.score, tokens=item.tokens,
                                     pinned=item.pinned)
            to_proto_timestamp(item.memory.created_at, msg.created_at)
        response.latency_ms = (time.perf_counter() - started) * 1000
        return response

    async def List(
        self, request: memory_pb2.ListRequest, context: grpc.aio.ServicerContext,
    ) -> memory_pb2.ListResponse:
        query = validation.list_query(request)
        memories, more = await listing.list_page(self.store, query, self.pages)
        return memory_pb2.ListResponse(
            memories=[memory_to_proto(m) for m in memories],
            next_page_token=self.pages.make(query, memories[-1]) if more else "")

    async def Count(
        self, request: memory_pb2.CountRequest, context: grpc.aio.ServicerContext,
    ) -> memory_pb2.CountResponse:
        return memory_pb2.CountResponse(
            count=await listing.count(self.store, validation.count_query(request)))

    async def ListNamespaces(
        self, request: memory_pb2.ListNamespacesRequest, context: grpc.aio.ServicerContext,
    ) -> memory_pb2.ListNamespacesResponse:
        query = validation.namespaces_query(request)
        # the interceptor sets the caller; without it (authentication not wired) all is open
        caller = CALLER.get(UNAUTHENTICATED_LOCAL)
        found, token = await namespaces.list_page(self.store.pool, caller.grants, query,
                                                  self.pages)
        response = memory_pb2.ListNamespacesResponse(next_page_token=token,
                                                     caller=caller_to_proto(caller))
        for summary in found:
            msg = response.namespaces.add(namespace=summary.namespace,
                                          memories=summary.memories, pinned=summary.pinned,
                                          sensitive=summary.sensitive)
            if summary.last_updated is not None:
                to_proto_timestamp(summary.last_updated, msg.last_updated)
        return response

    async def History(
        self, request: memory_pb2.HistoryRequest, context: grpc.aio.ServicerContext,
    ) -> memory_pb2.HistoryResponse:
        ns = validation.namespace(request.namespace)
        memory, versions, links = await history.history(
            self.store, ns, validation.memory_id(request.id))
        response = memory_pb2.HistoryResponse(memory=memory_to_proto(memory))
        # within MAX_RESPONSE_BYTES: the oldest relations first, then the newest versions
        kept_links, response.relations_left_out = fit(
            [link_to_proto(link) for link in links],
            ANSWER_ROOM - response.ByteSize(), newest=False)
        response.relations.extend(kept_links)
        kept, response.versions_left_out = fit(
            [version_to_proto(v) for v in versions],
            ANSWER_ROOM - response.ByteSize(), newest=True)
        response.versions.extend(kept)
        return response

    async def Export(
        self, request: memory_pb2.ExportRequest, context: grpc.aio.ServicerContext,
    ) -> memory_pb2.ExportResponse:
        query = validation.export_query(request)
        records, more = await history.export_page(self.store, query, self.pages)
        response = memory_pb2.ExportResponse()
        size = versions = 0
        for record in records:
            msg = record_to_proto(record)
            size += msg.ByteSize() + FIELD_OVERHEAD
            versions += len(msg.versions)
            if response.records and (size > ANSWER_ROOM or versions > MAX_IMPORT_VERSIONS):
                more = True  # the page ends early; the token continues after its last record
                break
            response.records.append(msg)
        if more and response.records:
            last = records[len(response.records) - 1].memory
            response.next_page_token = self.pages.make(query, last)
        return response

    async def Import(
        self, request: memory_pb2.ImportRequest, context: grpc.aio.ServicerContext,
    ) -> memory_pb2.ImportResponse:
        ns, records = validation.imported_records(request)
        imported, unchanged, written, skipped = await history.import_records(
            self.store, ns, records, caller_name(), caller_writer())
        return memory_pb2.ImportResponse(imported=imported, unchanged=unchanged,
                                         relations_written=written, relations_skipped=skipped)

    async def DeleteMatching(
        self, request: memory_pb2.DeleteMatchingRequest, context: grpc.aio.ServicerContext,
    ) -> memory_pb2.DeleteMatchingResponse:
        query, sample_size = validation.delete_matching(request)
        # The sample is memories' content: only for a key that may read them; a write-only key
        # matches the memories it wrote only (docs/decisions/0011).
        writer = caller_writer()
        matched, deleted, sample = await listing.delete_matching(
            self.store, query, sample_size if writer.may_read else 0, request.confirm,
            request.purge, writer)
        if request.confirm:
            log.info("memories deleted by filter", extra={
                "namespace": query.namespace, "memories": deleted, "purged": request.purge})
        return memory_pb2.DeleteMatchingResponse(
            matched=matched, deleted=deleted, sample=[memory_to_proto(m) for m in sample],
            purged=request.confirm and request.purge)


def _query_embedder(client: EmbedderClient) -> Callable[[str, float], Awaitable[Embeddings]]:
    async def embed_query(text: str, timeout_s: float) -> Embeddings:
        try:
            return await client.embed([text], "query", timeout_s)
        except grpc.aio.AioRpcError as exc:
            raise leg_failure(exc, "embedding service") from None

    return embed_query


def _document_embedder(client: EmbedderClient
                       ) -> Callable[[list[str], float], Awaitable[Embeddings]]:
    async def embed_documents(texts: list[str], timeout_s: float) -> Embeddings:
        try:
            return await client.embed(texts, "document", timeout_s)
        except grpc.aio.AioRpcError as exc:
            raise leg_failure(exc, "embedding service") from None

    return embed_documents


class SchemaOutOfDate(RuntimeError):
    pass


class GatewayApp:
    service_names: tuple[str, ...] = (
        memory_pb2.DESCRIPTOR.services_by_name["MemoryService"].full_name,
        keys_pb2.DESCRIPTOR.services_by_name["KeyService"].full_name,
    )
    # The public port takes smaller requests than the internal hops (docs/api.md).
    max_receive_message_bytes = validation.MAX_REQUEST_BYTES

    def __init__(self) -> None:
        self.pool: AsyncConnectionPool | None = None
        self.reads: Reads | None = None
        self.legs: list[GrpcLeg] = []
        self.embedder: EmbedderClient | None = None
        self.fusion: FusionClient | None = None
        self.servicer: MemoryServicer | None = None
        self.authenticator: Authenticator | None = None
        self.key_servicer: KeyServicer | None = None
        self.stuck = StuckBackends()

    async def start(self) -> None:
        settings = GatewaySettings.from_env()
        auth = AuthSettings.from_env()
        self.pool = await open_pool(resolve_dsn(), name="gateway")
        self.reads = await Reads.open(self.pool, "gateway")
        store = MemoryStore(self.pool, settings.namespace_ttl, self.reads)
        have, want = await store.schema_version(), latest_version()
        if have < want:
            raise SchemaOutOfDate(
                f"database schema is at version {have}, this gateway needs {want}: "
                "run `recallmesh migrate` (or `recallmesh up`) first"
            )
        self.legs = [GrpcLeg(leg.name, leg.target, leg.needs_vector) for leg in settings.legs]
        export_recall_zeros(leg.name for leg in settings.legs)
        embed_query = embed_documents = None
        if any(leg.needs_vector for leg in settings.legs):
            self.embedder = EmbedderClient(settings.embedding_target)
            embed_query = _query_embedder(self.embedder)
            embed_documents = _document_embedder(self.embedder)
        if settings.fusion_target:
            self.fusion = FusionClient(settings.fusion_target)
        recaller = Recaller(store, self.legs, settings, embed_query, self.fusion,
                            embed_documents)
        self.servicer = MemoryServicer(store, recaller, await listing.PageTokens.load(self.pool),
                                       settings.index_wait_ms,
                                       await asyncio.to_thread(TokenCounter.load))
        jwt = None
        if auth.required and auth.jwt_jwks:
            jwt = JwtVerifier(auth)
        keys = KeyStore(self.pool)
        self.authenticator = Authenticator(auth, keys, jwt)
        self.key_servicer = KeyServicer(keys, self.authenticator)
        log.info(
            "legs configured",
            extra={
                "legs": {leg.name: leg.target for leg in settings.legs},
                "embedding": settings.embedding_target if self.embedder else None,
                "fusion": settings.fusion_target or "in-process",
            },
        )

    async def ready(self) -> str:
        """Ready when the database answers, no backend of it is stuck in a wait nothing can
        end (StuckBackends: writes frozen), and at least one leg reports SERVING (a recall
        needs one leg; with some legs down it is served degraded)."""
        if reason := await unreachable(self.pool):
            return reason
        if self.pool is not None and (reason := await self.stuck.check(self.pool)):
            return reason
        serving = await asyncio.gather(*(leg.serving(0.5) for leg in self.legs))
        if self.legs and not any(serving):
            return "no retrieval leg is serving: " + ", ".join(leg.name for leg in self.legs)
        return ""

    def register(self, server: grpc.aio.Server) -> None:
        assert self.servicer is not None
        memory_pb2_grpc.add_MemoryServiceServicer_to_server(self.servicer, server)
        keys_pb2_grpc.add_KeyServiceServicer_to_server(self.key_servicer, server)

    def interceptors(self) -> list[grpc.aio.ServerInterceptor]:
        assert self.authenticator is not None
        return [GatewayAuth(self.authenticator)]

    async def stop(self) -> None:
        if self.authenticator is not None:
            await self.authenticator.close()
        for leg in self.legs:
            await leg.close()
        if self.embedder is not None:
            await self.embedder.close()
        if self.fusion is not None:
            await self.fusion.close()
        if self.reads is not None:
            await self.reads.close()
        if self.pool is not None:
            await self.pool.close()
