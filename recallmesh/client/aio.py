"""The asyncio client: `AsyncClient`."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import grpc
from typing_extensions import Unpack

from recallmesh.client import _wire
from recallmesh.client._base import ClientBase
from recallmesh.client.errors import from_rpc_error
from recallmesh.client.types import (
    BatchResult,
    ContextResult,
    Deleted,
    Memory,
    NewMemory,
    RecallResult,
    StoreResult,
)
from recallmesh.v1 import memory_pb2_grpc
from recallmesh.wire.channel import dial

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

    async def close(self) -> None:
        await self._channel.close()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
