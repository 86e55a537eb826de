"""recallmesh inside the agent frameworks, over the typed client (recallmesh.client):
LangChain (`langchain.py`: a retriever, a chat-message history, a Context runnable; the
`langchain` extra) and LlamaIndex (`llamaindex.py`: a retriever; the `llamaindex` extra).
docs/integrations.md."""

from __future__ import annotations

from dataclasses import fields
from datetime import datetime
from typing import Any

from recallmesh.client import Memory


def memory_metadata(memory: Memory, score: float | None = None) -> dict[str, Any]:
    """A memory's fields but its content, as a framework's document metadata holds them
    (JSON values: times as ISO 8601, tags as a list), with the recall's score when given.
    Every field of Memory is here, so a new field reaches the frameworks with it."""
    out: dict[str, Any] = {}
    for f in fields(Memory):
        if f.name == "content":
            continue
        value = getattr(memory, f.name)
        if isinstance(value, datetime):
            value = value.isoformat()
        elif isinstance(value, tuple):
            value = list(value)
        elif isinstance(value, dict):
            value = dict(value)
        out[f.name] = value
    if score is not None:
        out["score"] = score
    return out
