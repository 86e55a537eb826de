"""recallmesh in LlamaIndex (llama-index-core; the `llamaindex` extra, docs/integrations.md):
`RecallmeshRetriever`, a retriever over Recall: each hit a NodeWithScore whose TextNode has
the memory's id, content and fields (metadata) and whose score is the estimated probability
that it is relevant. No hit clears the relevance floor: no nodes."""

from __future__ import annotations

import asyncio
from typing import Any

from llama_index.core.callbacks import CallbackManager
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from recallmesh.client import AsyncClient, Client, Hit
from recallmesh.integrations import memory_metadata


def hit_node(hit: Hit) -> NodeWithScore:
    return NodeWithScore(node=TextNode(id_=hit.memory.id, text=hit.memory.content,
                                       metadata=memory_metadata(hit.memory)),
                         score=hit.score)


class RecallmeshRetriever(BaseRetriever):
    """LlamaIndex's retriever over recallmesh's Recall. `client` is a Client (sync and, in
    a worker thread, async retrieval) or an AsyncClient (async retrieval only)."""

    def __init__(self, client: Client | AsyncClient, *, namespace: str | None = None,
                 k: int = 10, filters: dict[str, Any] | None = None,
                 min_score: float | None = None,
                 callback_manager: CallbackManager | None = None) -> None:
        super().__init__(callback_manager=callback_manager)
        self.client = client
        self.options: dict[str, Any] = {"namespace": namespace, "k": k, **(filters or {})}
        if min_score is not None:
            self.options["min_score"] = min_score

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        if not isinstance(self.client, Client):
            raise TypeError("an AsyncClient retrieves asynchronously: use aretrieve")
        result = self.client.recall(query_bundle.query_str, **self.options)
        return [hit_node(h) for h in result.hits]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        if isinstance(self.client, AsyncClient):
            result = await self.client.recall(query_bundle.query_str, **self.options)
        else:
            result = await asyncio.to_thread(self.client.recall, query_bundle.query_str,
                                             **self.options)
        return [hit_node(h) for h in result.hits]
