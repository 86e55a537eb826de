"""recallmesh inside LangChain and LlamaIndex (recallmesh.integrations), with the real
packages against the session's real stack; no model is called (a retriever's pipeline is
checked up to the prompt it builds)."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnablePassthrough
from llama_index.core.postprocessor import SimilarityPostprocessor
from llama_index.core.schema import QueryBundle

from recallmesh.client import AsyncClient
from recallmesh.integrations import langchain as lc
from recallmesh.integrations import llamaindex as li
from recallmesh.stack.supervisor import Stack

pytestmark = pytest.mark.integration

ALLERGY = "Maya is allergic to peanuts and carries an EpiPen"
EDITOR = "Maya writes code in Helix with a dark theme"
TRAIN = "The team takes the 7:42 train to Porto on Fridays"
EDITOR_QUESTION = "Which code editor does Maya use?"


@pytest.fixture(scope="module")
def loaded(stack: Stack) -> tuple[str, dict[str, str]]:
    ns = f"frameworks-{uuid.uuid4().hex[:8]}"
    ids = {}
    with stack.client(namespace=ns) as client:
        for name, content, fields in (
                ("allergy", ALLERGY, {"category": "fact", "tags": ["health", "maya"]}),
                ("editor", EDITOR, {"category": "preference", "tags": ["tools", "maya"]}),
                ("train", TRAIN, {"category": "fact", "tags": ["travel"],
                                  "metadata": {"source": "calendar"}})):
            ids[name] = client.store(content, wait_indexed=True, **fields).memory.id
    return ns, ids


def test_a_langchain_retriever_returns_documents_with_fields_and_scores(
        stack: Stack, loaded: tuple[str, dict[str, str]]) -> None:
    ns, ids = loaded
    with stack.client(namespace=ns) as client:
        retriever = lc.RecallmeshRetriever(client=client, k=3)
        docs = retriever.invoke("what can Maya not eat?")
        assert docs[0].page_content == ALLERGY and docs[0].id == ids["allergy"]
        meta = docs[0].metadata
        assert meta["id"] == ids["allergy"] and meta["category"] == "fact"
        assert meta["tags"] == ["health", "maya"] and 0 < meta["score"] <= 1
        assert meta["created_at"].startswith("20") and "content" not in meta
        # filters per retriever: only the travel memories
        travel = lc.RecallmeshRetriever(client=client, filters={"tags": ["travel"]})
        assert [d.id for d in travel.invoke("what does Maya eat?")] in ([], [ids["train"]])
        # nothing above the floor: no documents
        strict = lc.RecallmeshRetriever(client=client, min_score=0.999)
        assert strict.invoke("the tides of Saturn's moons") == []


def test_a_langchain_pipeline_puts_the_memories_in_its_prompt(
        stack: Stack, loaded: tuple[str, dict[str, str]]) -> None:
    ns, _ = loaded
    prompt = ChatPromptTemplate.from_messages([
        ("system", "Answer from these memories:\n{memories}\n\nContext:\n{context}"),
        ("human", "{question}")])
    with stack.client(namespace=ns) as client:
        retriever = lc.RecallmeshRetriever(client=client, k=2)
        chain = {
            "memories": retriever | (lambda docs: "\n".join(d.page_content for d in docs)),
            "context": lc.recallmesh_context(client),
            "question": RunnablePassthrough(),
        } | prompt
        value = chain.invoke("Which editor does Maya use?")
    system, human = value.to_messages()
    assert EDITOR in system.content and human.content == "Which editor does Maya use?"
    assert system.content.count(EDITOR) == 2  # once from the retriever, once in Context


def test_a_langchain_retriever_runs_asynchronously_on_either_client(
        stack: Stack, loaded: tuple[str, dict[str, str]]) -> None:
    ns, ids = loaded

    async def run() -> tuple[list[str], list[str]]:
        async with AsyncClient(stack.endpoints["gateway"], namespace=ns,
                               api_key=stack.api_key, tls=stack.tls) as aclient:
            on_async = await lc.RecallmeshRetriever(client=aclient).ainvoke(EDITOR_QUESTION)
        with stack.client(namespace=ns) as client:
            on_sync = await lc.RecallmeshRetriever(client=client).ainvoke(EDITOR_QUESTION)
        return [d.id or "" for d in on_async], [d.id or "" for d in on_sync]

    on_async, on_sync = asyncio.run(run())
    assert on_async[0] == on_sync[0] == ids["editor"]


def test_the_langchain_chat_history_keeps_a_conversation_in_order(stack: Stack) -> None:
    ns = f"chat-{uuid.uuid4().hex[:8]}"
    with stack.client(namespace=ns) as client:
        history = lc.RecallmeshChatMessageHistory(client, "session-1")
        other = lc.RecallmeshChatMessageHistory(client, "session-2")
        history.add_messages([SystemMessage("You are terse."), HumanMessage("Hi, I'm Maya")])
        history.add_ai_message("Hello Maya")
        history.add_user_message("Hi, I'm Maya")  # said again: a message of its own
        other.add_user_message("Another conversation")
        got = history.messages
        assert [type(m) for m in got] == [SystemMessage, HumanMessage, AIMessage, HumanMessage]
        assert [m.content for m in got] == ["You are terse.", "Hi, I'm Maya", "Hello Maya",
                                            "Hi, I'm Maya"]
        # the messages are memories: recall finds them
        assert any("Maya" in h.memory.content for h in client.recall("who is Maya?").hits)
        history.clear()
        assert history.messages == []
        assert [m.content for m in other.messages] == ["Another conversation"]


def test_a_llamaindex_retriever_returns_nodes_with_scores_in_a_pipeline(
        stack: Stack, loaded: tuple[str, dict[str, str]]) -> None:
    ns, ids = loaded
    with stack.client(namespace=ns) as client:
        retriever = li.RecallmeshRetriever(client, k=3)
        nodes = retriever.retrieve("what can Maya not eat?")
        assert nodes[0].node.node_id == ids["allergy"] and nodes[0].node.get_content() == ALLERGY
        assert nodes[0].node.metadata["tags"] == ["health", "maya"]
        best = nodes[0].score
        assert best is not None and 0 < best <= 1
        # a LlamaIndex postprocessor over recallmesh's scores (no model needed)
        kept = SimilarityPostprocessor(similarity_cutoff=best).postprocess_nodes(
            nodes, query_bundle=QueryBundle("what can Maya not eat?"))
        assert [n.node.node_id for n in kept] == [ids["allergy"]]
        calendar = li.RecallmeshRetriever(client, filters={"metadata": {"source": "calendar"}})
        assert {n.node.node_id for n in calendar.retrieve("the train to Porto")} == {ids["train"]}
        assert asyncio.run(retriever.aretrieve(EDITOR_QUESTION))[0].node.node_id == ids["editor"]
