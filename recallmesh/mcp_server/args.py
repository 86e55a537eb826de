"""The MCP tools' argument types: each a type with its limits and the description a model
reads in the tool's schema (the filters' own are in filters.py)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

Category = Literal["fact", "preference", "decision", "note"]

MemoryId = Annotated[str, Field(
    description="The memory's id: the UUID shown in [brackets] by recall and store_memory",
    min_length=1, max_length=64)]
Content = Annotated[str, Field(
    description="One self-contained fact, preference or decision, written to make sense "
                "on its own later: name the people and things it is about (\"Maya's team "
                "deploys on Fridays\", not \"they deploy then\"). One fact per memory.",
    min_length=1, max_length=16000)]
CategoryArg = Annotated[Category, Field(
    description="fact: something true about the user, a person or a project; preference: "
                "what the user likes, dislikes or wants done a certain way; decision: "
                "something agreed or chosen (and why); note: anything else worth keeping")]
Tags = Annotated[list[str], Field(
    description="A few short lowercase topic words, e.g. [\"frontend\", \"maya\"] (at most "
                "32); recall can filter by them", max_length=32)]
Importance = Annotated[float, Field(
    description="0..1: 0.5 for ordinary memories, 0.8 or more for what must not be "
                "forgotten (allergies, hard constraints, deadlines), 0.2 for trivia",
    ge=0.0, le=1.0)]
Sensitive = Annotated[bool, Field(
    description="True for secrets, credentials, health, finances or anything private: "
                "never embedded, found only by its exact words, its text withheld from "
                "recall and context unless the server is configured to show it")]
Thread = Annotated[str, Field(
    description="Optional: the conversation or session it came from", max_length=256)]
Metadata = Annotated[dict[str, str], Field(
    description="Free-form key/value strings (at most 64 entries), e.g. {\"source\": "
                "\"email\", \"project\": \"atlas\"}; list_memories, count_memories, recall "
                "and context can filter by them", max_length=64)]
Pinned = Annotated[bool, Field(
    description="True only for the few memories that belong in every answer (who the user "
                "is, standing instructions): always in context, first, whatever the question")]
Supersedes = Annotated[list[str], Field(
    description="Ids of memories this one replaces, when a fact changed (\"Maya moved from "
                "Berlin to Lisbon\": pass the Berlin memory's id). They stay as history; "
                "recall ranks this one first", max_length=32)]
Query = Annotated[str, Field(
    description="What you want to know, in natural language (the user's question works "
                "well); matched by meaning and by words", min_length=1, max_length=4096)]