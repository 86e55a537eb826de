"""The asyncio client: `AsyncClient`."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

import grpc
from typing_extensions import Unpack

from recallmesh.client import _wire
from recallmesh.client._base import ClientBase
from recallmesh.client.errors import from_rpc_error
from recallmesh.client.types import (
    BatchResult,
    Caller,
    ContextResult,
    Deleted,
    DeleteMatchingResult,
    History,
    ImportResult,
    Memory,
    NamespaceList,
    NamespaceSummary,
    NewMemory,
    Page,
    RecallResult,
    StoreResult,
)
from recallmesh.v1 import memory_pb2_grpc
from recallmesh.wire.channel import dial
from recallmesh.wire.validation import MAX_PAGE_SIZE

T = TypeVar("T")


class AsyncClient(ClientBase):
    """An asyncio client of the gateway's MemoryService (one per event loop).

    >>> client = AsyncClient("localhost:50051", namespace="my-agent")  # doctest: +SKIP
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._channel = dial(self.target, self._options, tls=self._tls, token=self._token)
        self._stub = memory_pb2_grpc.MemoryServiceStub(self._channel)

    async def _call(self, method: str, request: Any, parse: Callable[[Any], T],
                    timeout: float) -> T:
        try:
            reply = await getattr(self._stub, method)(request, timeout=timeout)
        except grpc.RpcError as exc:
            raise from_rpc_error(exc) from None
        return parse(reply)

    async def store(self, content: str, *, namespace: str | None = None,
                    wait_indexed: bool | float = False, timeout: float | None = None,
                    **fields: Unpack[_wire.MemoryFields]) -> StoreResult:
        """Store one memory. wait_indexed: True waits (server default, 30 s) or a number of
        seconds waits at most that long until the vector leg can find it."""
        request = _wire.store_request(self._ns(namespace), content, fields, wait_indexed)
        deadline = self._timeout(timeout, wait_indexed)
        return await self._call("Store", request, _wire.store_result, deadline)

    async def store_batch(self, memories: Iterable[NewMemory | str], *,
                          namespace: str | None = None, wait_indexed: bool | float = False,
                          timeout: float | None = None) -> BatchResult:
        """Store up to 1,000 memories atomically (all or none)."""
        request = _wire.store_batch_request(self._ns(namespace), memories, wait_indexed)
        deadline = self._timeout(timeout, wait_indexed)
        return await self._call("StoreBatch", request, _wire.batch_result, deadline)

    async def update(self, memory_id: str, *, namespace: str | None = None,
                     wait_indexed: bool | float = False, timeout: float | None = None,
                     **fields: Unpack[_wire.UpdateFields]) -> StoreResult:
        """Change the given fields of a memory (a content change re-embeds it)."""
        request = _wire.update_request(self._ns(namespace), memory_id, fields, wait_indexed)
        deadline = self._timeout(timeout, wait_indexed)
        return await self._call("Update", request, _wire.store_result, deadline)

    async def get(self, memory_id: str, *, namespace: str | None = None,
                  timeout: float | None = None) -> Memory:
        request = _wire.memory_pb2.GetRequest(namespace=self._ns(namespace), id=memory_id)
        return await self._call("Get", request, _wire.get_result, self._timeout(timeout))

    async def delete(self, memory_id: str, *, purge: bool = False, namespace: str | None = None,
                     timeout: float | None = None) -> Deleted:
        """Delete a memory: gone from get and recall at once; purge=True removes it and what
        was derived from it (see `forget`)."""
        request = _wire.memory_pb2.DeleteRequest(namespace=self._ns(namespace), id=memory_id,
                                                 purge=purge)
        return await self._call("Delete", request, _wire.deleted_result, self._timeout(timeout))

    async def delete_namespace(self, *, namespace: str | None = None,
                               timeout: float | None = None) -> int:
        """Remove a namespace and every memory in it, for good (needs the admin scope); how
        many memories were removed."""
        request = _wire.memory_pb2.DeleteNamespaceRequest(namespace=self._ns(namespace))
        return await self._call("DeleteNamespace", request, _wire.namespace_deleted,
                                self._timeout(timeout))

    async def forget(self, memory_id: str, *, namespace: str | None = None,
                     timeout: float | None = None) -> Deleted:
        """Remove a memory for good: its row, vector, concept links and postings (purge)."""
        return await self.delete(memory_id, purge=True, namespace=namespace, timeout=timeout)

    async def recall(self, query: str, *, namespace: str | None = None,
                     timeout: float | None = None,
                     **options: Unpack[_wire.RecallOptions]) -> RecallResult:
        """The memories most relevant to `query`, best first."""
        request = _wire.recall_request(self._ns(namespace), query, options)
        return await self._call("Recall", request, _wire.recall_result, self._timeout(timeout))

    async def context(self, query: str, *, namespace: str | None = None,
                      timeout: float | None = None,
                      **options: Unpack[_wire.ContextOptions]) -> ContextResult:
        """The best memories for `query` as a block of text within max_tokens, to put before
        a prompt."""
        request = _wire.context_request(self._ns(namespace), query, options)
        return await self._call("Context", request, _wire.context_result, self._timeout(timeout))

    async def list(self, *, namespace: str | None = None, page_size: int = 0, page_token: str = "",
             timeout: float | None = None, **options: Unpack[_wire.ListOptions]) -> Page:
        """One page of the namespace's memories that pass the filters (newest first by
        default); give page.next_page_token back for the next one."""
        request = _wire.list_request(self._ns(namespace), page_size, page_token, options)
        return await self._call("List", request, _wire.page_result, self._timeout(timeout))

    async def iter_memories(self, *, namespace: str | None = None, page_size: int = 0,
                      timeout: float | None = None,
                      **options: Unpack[_wire.ListOptions]) -> AsyncIterator[Memory]:
        """Every memory `list` would return, page after page."""
        token = ""
        while True:
            page = await self.list(namespace=namespace, page_size=page_size, page_token=token,
                                   timeout=timeout, **options)
            for memory in page.memories:
                yield memory
            if not (token := page.next_page_token):
                return

    async def count(self, *, namespace: str | None = None, timeout: float | None = None,
              **options: Unpack[_wire.ListOptions]) -> int:
        """How many memories `list` would return."""
        request = _wire.count_request(self._ns(namespace), options)
        return await self._call("Count", request, _wire.count_result, self._timeout(timeout))

    async def namespaces(self, *, prefix: str = "", timeout: float | None = None
                         ) -> NamespaceList:
        """Every namespace this credential may see (its grants) that holds memories, with
        its counts, page after page (only those starting with `prefix` when given), and who
        the gateway takes the caller to be. Needs the read scope."""
        pages: list[tuple[list[NamespaceSummary], Caller, str]] = []
        token = ""
        while True:
            request = _wire.memory_pb2.ListNamespacesRequest(
                prefix=prefix, page_size=MAX_PAGE_SIZE, page_token=token)
            pages.append(await self._call("ListNamespaces", request,
                                          _wire.namespaces_result, self._timeout(timeout)))
            if not (token := pages[-1][2]):
                return _wire.namespace_list(pages)

    async def history(self, memory_id: str, *, namespace: str | None = None,
                timeout: float | None = None) -> History:
        """A memory's earlier versions (each update keeps one) and its relations both ways."""
        request = _wire.memory_pb2.HistoryRequest(namespace=self._ns(namespace), id=memory_id)
        return await self._call("History", request, _wire.history_result, self._timeout(timeout))

    async def export(self, *, namespace: str | None = None, page_size: int = 0,
               timeout: float | None = None,
               **filters: Unpack[_wire.FilterOptions]) -> AsyncIterator[dict[str, Any]]:
        """The namespace's live memories, oldest first, as JSON objects with their relations
        and versions (one JSONL line each); `import_records` writes them back exactly."""
        token = ""
        while True:
            request = _wire.export_request(self._ns(namespace), page_size, token, filters)
            records, token = await self._call("Export", request, _wire.export_result,
                                        self._timeout(timeout))
            for record in records:
                yield record
            if not token:
                return

    async def import_records(self, records: Sequence[Mapping[str, Any]], *,
                       namespace: str | None = None,
                       timeout: float | None = None) -> ImportResult:
        """Write exported records back exactly: first every memory, then every relation (so
        a relation never waits for a target later in the file). Importing twice changes
        nothing. Each request is built in a worker thread: a thousand records are parsed
        without holding up the event loop."""
        ns = self._ns(namespace)
        parts = [await self._call("Import", request, _wire.import_result,
                                  self._timeout(timeout))
                 async for request in _off_loop(_wire.import_requests(ns, records,
                                                                      relations=False))]
        first = len(parts)
        parts += [await self._call("Import", request, _wire.import_result,
                                   self._timeout(timeout))
                  async for request in _off_loop(_wire.import_requests(ns, records,
                                                                       relations=True))
                  if any(r.relations for r in request.records)]
        return _wire.import_total(parts, first)

    async def delete_matching(self, *, confirm: bool = False, purge: bool = False,
                        sample_size: int = 0, namespace: str | None = None,
                        timeout: float | None = None,
                        **filters: Unpack[_wire.FilterOptions]) -> DeleteMatchingResult:
        """Delete every live memory that passes the filters (at least one is required). A dry
        run unless confirm=True: `matched` and `sample` say what would go."""
        request = _wire.delete_matching_request(self._ns(namespace), confirm, purge,
                                                sample_size, filters)
        return await self._call("DeleteMatching", request, _wire.delete_matching_result,
                          self._timeout(timeout))

    async def close(self) -> None:
        await self._channel.close()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


async def _off_loop(items: Iterable[T]) -> AsyncIterator[T]:
    """Each item of a blocking iterator, computed in a worker thread."""
    iterator = iter(items)
    done = object()
    while (item := await asyncio.to_thread(next, iterator, done)) is not done:
        yield item  # type: ignore[misc]
