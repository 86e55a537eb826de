"""recallmesh in LangChain (langchain-core; the `langchain` extra, docs/integrations.md):

- `RecallmeshRetriever`: a retriever over Recall: each hit a Document whose metadata holds
  the memory's fields (id, category, tags, metadata, times, ...) and its score, the
  estimated probability that it is relevant; filters, k and the relevance floor per
  retriever. No hit clears the floor: no documents.
- `RecallmeshChatMessageHistory`: a conversation's messages as memories of one thread (the
  session id), in order, each with its role: what `RunnableWithMessageHistory` reads and
  appends to.
- `recallmesh_context`: a runnable that turns a question into the Context block (the memories
  a prompt needs, within a token budget), to put in a prompt beside the question.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.documents import Document
from langchain_core.messages import BaseMessage, message_to_dict, messages_from_dict
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable, RunnableLambda
from pydantic import ConfigDict

from recallmesh.client import AsyncClient, Client, Hit, NewMemory
from recallmesh.integrations import memory_metadata

ROLE = "langchain_role"  # the metadata key a stored message keeps its type in
TURN = "langchain_turn"  # ... and its place in the conversation (zero-padded, sortable)


def hit_document(hit: Hit) -> Document:
    return Document(page_content=hit.memory.content, id=hit.memory.id,
                    metadata=memory_metadata(hit.memory, hit.score))


class RecallmeshRetriever(BaseRetriever):
    """LangChain's retriever over recallmesh's Recall. `client` is a Client (sync and, in a
    worker thread, async calls) or an AsyncClient (async calls only)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    client: Client | AsyncClient
    namespace: str | None = None
    k: int = 10
    filters: dict[str, Any] = {}
    min_score: float | None = None

    def _options(self) -> dict[str, Any]:
        options: dict[str, Any] = {"namespace": self.namespace, "k": self.k, **self.filters}
        if self.min_score is not None:
            options["min_score"] = self.min_score
        return options

    def _get_relevant_documents(self, query: str, *,
                                run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        if not isinstance(self.client, Client):
            raise TypeError("an AsyncClient retrieves asynchronously: use ainvoke")
        return [hit_document(h) for h in self.client.recall(query, **self._options()).hits]

    async def _aget_relevant_documents(
            self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        if isinstance(self.client, AsyncClient):
            result = await self.client.recall(query, **self._options())
        else:
            result = await asyncio.to_thread(self.client.recall, query, **self._options())
        return [hit_document(h) for h in result.hits]


class RecallmeshChatMessageHistory(BaseChatMessageHistory):
    """A conversation kept in recallmesh: each message a memory of the thread `session_id`
    (category `note` unless given), its role and turn in the memory's metadata. The messages
    are memories like any other: recall finds them, the console lists them, and `clear`
    removes them for good (purge)."""

    def __init__(self, client: Client, session_id: str, *, namespace: str | None = None,
                 category: str = "note") -> None:
        if not session_id.strip():
            raise ValueError("session_id must not be blank")
        self.client = client
        self.session_id = session_id
        self.namespace = namespace
        self.category = category

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        stored = list(self.client.iter_memories(namespace=self.namespace,
                                                threads=[self.session_id]))
        stored = [m for m in stored if ROLE in m.metadata]
        stored.sort(key=lambda m: m.metadata.get(TURN, ""))
        return messages_from_dict([{"type": m.metadata[ROLE],
                                    "data": {"content": m.content, "type": m.metadata[ROLE]}}
                                   for m in stored])

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        turn = self.client.count(namespace=self.namespace, threads=[self.session_id])
        batch = []
        for i, message in enumerate(messages):
            kind = message_to_dict(message)["type"]
            text = message.content if isinstance(message.content, str) else str(message.content)
            batch.append(NewMemory(text, category=self.category, thread=self.session_id,
                                   metadata={ROLE: kind, TURN: f"{turn + i:08d}"}))
        if batch:
            self.client.store_batch(batch, namespace=self.namespace)

    def clear(self) -> None:
        self.client.delete_matching(confirm=True, purge=True, namespace=self.namespace,
                                    threads=[self.session_id])


def recallmesh_context(client: Client, *, namespace: str | None = None, key: str = "question",
                       max_tokens: int = 800, **options: Any) -> Runnable[Any, str]:
    """A runnable from a question (a string, or a mapping holding it under `key`) to the
    Context block for it ("" when no memory fits), e.g. `{"context": recallmesh_context(c),
    "question": RunnablePassthrough()} | prompt | model`."""

    def question(value: Any) -> str:
        return value if isinstance(value, str) else str(value[key])

    def context(value: Any) -> str:
        return client.context(question(value), namespace=namespace, max_tokens=max_tokens,
                              **options).text

    async def acontext(value: Any) -> str:
        return await asyncio.to_thread(context, value)

    return RunnableLambda(context, afunc=acontext, name="recallmesh_context")
