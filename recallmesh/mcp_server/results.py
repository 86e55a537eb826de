"""What the tools return: structured content (pydantic models, published as each tool's
output schema) and the compact text a model reads."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Literal

from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, Field

from recallmesh.client import (
    ContextResult,
    Deleted,
    History,
    Memory,
    Page,
    RecallResult,
    StoreResult,
)


class MemoryOut(BaseModel):
    id: str = Field(description="The memory's id (pass it to get_memory, update_memory, "
                                "forget, or store_memory's supersedes)")
    content: str
    category: str
    tags: list[str]
    importance: float
    sensitive: bool
    thread: str
    metadata: dict[str, str] = Field(default_factory=dict)
    pinned: bool = Field(default=False, description="Always in context, first")
    created_at: datetime | None = None
    updated_at: datetime | None = None
    valid_from: datetime | None = None
    valid_to: datetime | None = Field(
        default=None, description="When its validity ended (set when a newer memory "
                                  "superseded it); none while it is current")
    expires_at: datetime | None = Field(default=None, description="When it expires; none: "
                                                                  "never")
    deleted_at: datetime | None = Field(default=None, description="When it was deleted "
                                                                  "(list_memories with "
                                                                  "include_deleted)")
    superseded: bool = Field(default=False, description="A newer memory replaced it")
    superseded_by: str = Field(default="", description="The id of the memory that replaced "
                                                       "it, when one did")
    withheld: bool = Field(default=False, description="A sensitive memory whose text, tags "
                                                      "and metadata this server does not "
                                                      "show (empty)")


class StoredOut(BaseModel):
    memory: MemoryOut
    indexed: bool = Field(description="Searchable by meaning already (false: only by its "
                                      "words until indexing finishes, usually seconds)")
    existing: bool = Field(default=False, description="The same memory was already stored: "
                                                      "nothing new was written")


class HitOut(BaseModel):
    rank: int
    score: float
    memory: MemoryOut


class IntentOut(BaseModel):
    name: str = Field(description="The intent the query was read as, e.g. advice")
    phrase: str = Field(description="The words of the query that said it")


class TimeWindowOut(BaseModel):
    phrase: str = Field(description="The words of the query that named it, e.g. last "
                                    "saturday")
    start: datetime | None = None
    end: datetime | None = None
    boosted: int = Field(description="Candidates created inside it that were ranked higher")


class RecallOut(BaseModel):
    hits: list[HitOut] = Field(description="Best first")
    degraded: bool = Field(description="A search leg failed or timed out: results may be "
                                       "incomplete")
    intent: IntentOut | None = Field(default=None, description="How the query was routed, "
                                                               "when a rule read an intent")
    time_window: TimeWindowOut | None = Field(
        default=None, description="The time window the query named, when it named one "
                                  "(memories created inside it rank higher)")


class ForgottenOut(BaseModel):
    id: str
    purged: bool = Field(description="Removed for good, with its index entries")
    deleted_at: datetime | None = None


class ContextOut(BaseModel):
    text: str = Field(description="The block to read before answering (empty: nothing "
                                  "relevant)")
    ids: list[str] = Field(description="The memories in the text, in its order")
    pinned: list[str] = Field(default_factory=list,
                              description="Those of ids that are pinned (they come first)")
    tokens: int
    degraded: bool
    superseded_omitted: int
    sensitive_omitted: int
    over_budget_omitted: int


class PageOut(BaseModel):
    memories: list[MemoryOut] = Field(description="In the order asked for")
    next_page_token: str = Field(description="Pass it as page_token, with the same filters "
                                             "and order, for the next page; empty on the "
                                             "last page")


class CountOut(BaseModel):
    count: int = Field(description="How many memories list_memories would return")


class VersionOut(BaseModel):
    version: int = Field(description="1 = as first stored; the current state is the "
                                     "version after the last one listed")
    memory: MemoryOut = Field(description="The memory's fields as they were")
    replaced_at: datetime | None = Field(default=None,
                                         description="When the update that replaced it ran")
    replaced_by: str = Field(description="Who ran that update (an API key's name, a JWT's "
                                         "subject, or local)")
    changed: list[str] = Field(description="The fields that update changed")
    imported_by: str = Field(default="", description="Who imported this version here (empty "
                             "for one an update here kept); replaced_at and replaced_by are "
                             "then the export's")


class RelationOut(BaseModel):
    type: str = Field(description="supersedes, derived_from, references or about")
    source_id: str = Field(description="The memory that states it (e.g. the newer fact)")
    target_id: str = Field(description="The memory it names (e.g. the fact superseded)")
    direction: Literal["outgoing", "incoming"] = Field(
        description="outgoing: this memory states it (it is source_id); incoming: another "
                    "memory states it about this one (this memory is target_id)")
    created_at: datetime | None = None


class HistoryOut(BaseModel):
    memory: MemoryOut = Field(description="The memory now (a deleted one carries deleted_at)")
    versions: list[VersionOut] = Field(description="Its earlier versions, oldest first "
                                                   "(each update keeps one)")
    relations: list[RelationOut] = Field(description="Its relations both ways")


WITHHELD = "(sensitive: its text is withheld by this server's configuration)"


def memory_out(memory: Memory, now: datetime | None = None, show_sensitive: bool = True,
               *, sensitive: bool | None = None) -> MemoryOut:
    """The memory as a tool returns it; a sensitive memory's text, tags and metadata only with
    show_sensitive (the server's setting, never a tool argument). `sensitive`: withhold as if
    the memory were sensitive (an earlier version of a memory marked sensitive since)."""
    now = now or datetime.now(UTC)
    withheld = (memory.sensitive if sensitive is None else sensitive) and not show_sensitive
    return MemoryOut(
        id=memory.id, content="" if withheld else memory.content, category=memory.category,
        tags=[] if withheld else list(memory.tags), withheld=withheld,
        metadata={} if withheld else dict(memory.metadata), pinned=memory.pinned,
        importance=round(memory.importance, 4), sensitive=memory.sensitive,
        thread=memory.thread, created_at=memory.created_at, updated_at=memory.updated_at,
        valid_from=memory.valid_from, valid_to=memory.valid_to,
        expires_at=memory.expires_at, deleted_at=memory.deleted_at,
        superseded_by=memory.superseded_by,
        superseded=memory.valid_to is not None and memory.valid_to <= now)


def _result(text: str, model: BaseModel) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)],
                          structured_content=model.model_dump(mode="json"))


def _text(memory: MemoryOut) -> str:
    return WITHHELD if memory.withheld else memory.content


def _labels(memory: MemoryOut, *extra: str) -> str:
    parts = [memory.category or "uncategorised", *extra]
    if memory.superseded:
        parts.append(f"superseded by [{memory.superseded_by}]" if memory.superseded_by
                     else "superseded")
    if memory.sensitive:
        parts.append("sensitive")
    if memory.pinned:
        parts.append("pinned")
    if memory.deleted_at:
        parts.append(f"deleted {_when(memory.deleted_at)}")
    return ", ".join(parts)


def _when(moment: datetime) -> str:
    return f"{moment.astimezone(UTC):%Y-%m-%d %H:%M} UTC"


def _score(score: float) -> str:
    return f"{score:.3g}" if score < 0.1 else f"{score:.2f}"


def stored(result: StoreResult, verb: str = "Stored") -> CallToolResult:
    out = StoredOut(memory=memory_out(result.memory), indexed=result.indexed,
                    existing=result.existing)
    if result.existing:
        verb = "Already stored"
    note = "" if result.indexed else "; searchable by its words now, by meaning in a moment"
    text = f"{verb} [{out.memory.id}] {out.memory.content} ({_labels(out.memory)}{note})"
    return _result(text, out)


def recalled(result: RecallResult, query: str, show_sensitive: bool = False) -> CallToolResult:
    now = datetime.now(UTC)
    hits = [HitOut(rank=i, score=round(hit.score, 6),
                   memory=memory_out(hit.memory, now, show_sensitive))
            for i, hit in enumerate(result.hits, 1)]
    intent = (IntentOut(name=result.intent.name, phrase=result.intent.phrase)
              if result.intent is not None else None)
    window = result.time_window
    time_window = (TimeWindowOut(phrase=window.phrase, start=window.start, end=window.end,
                                 boosted=window.boosted) if window is not None else None)
    out = RecallOut(hits=hits, degraded=result.degraded, intent=intent,
                    time_window=time_window)
    lines = [f"{h.rank}. [{h.memory.id}] {_text(h.memory)} "
             f"({_labels(h.memory, f'score {_score(h.score)}')})" for h in hits]
    if not lines:
        lines = [f"No memories found for {query!r}."]
    if time_window is not None:
        span = " to ".join(_when(t) for t in (time_window.start, time_window.end)
                           if t is not None)
        lines.append(f"(the query names a time, {time_window.phrase!r}: {span}; memories "
                     "created then rank higher)")
    if result.degraded:
        lines.append("(a search leg did not answer: results may be incomplete)")
    return _result("\n".join(lines), out)


def _details(out: MemoryOut) -> list[str]:
    details = [f"category: {out.category or 'none'}", f"importance: {out.importance:g}"]
    if out.tags:
        details.append("tags: " + ", ".join(out.tags))
    if out.metadata:
        details.append("metadata: " + _metadata(out.metadata))
    if out.thread:
        details.append(f"thread: {out.thread}")
    if out.created_at:
        details.append(f"created: {_when(out.created_at)}")
    if out.valid_from:
        details.append(f"valid from: {_when(out.valid_from)}")
    if out.superseded and out.valid_to:
        by = f" by [{out.superseded_by}]" if out.superseded_by else ""
        details.append(f"superseded{by} since {_when(out.valid_to)}")
    elif out.valid_to:
        details.append(f"valid until: {_when(out.valid_to)}")
    if out.expires_at:
        details.append(f"expires: {_when(out.expires_at)}")
    if out.pinned:
        details.append("pinned")
    if out.sensitive:
        details.append("sensitive")
    if out.deleted_at:
        details.append(f"deleted: {_when(out.deleted_at)}")
    return details


def _metadata(metadata: dict[str, str]) -> str:
    return json.dumps(metadata, ensure_ascii=False, sort_keys=True)


def got(memory: Memory, show_sensitive: bool = False) -> CallToolResult:
    out = memory_out(memory, show_sensitive=show_sensitive)
    return _result(f"[{out.id}] {_text(out)}\n" + "; ".join(_details(out)), out)


def forgotten(result: Deleted) -> CallToolResult:
    out = ForgottenOut(id=result.id, purged=result.purged, deleted_at=result.deleted_at)
    return _result(f"Forgot [{out.id}]: removed for good.", out)


def context_block(result: ContextResult) -> CallToolResult:
    out = ContextOut(text=result.text, ids=result.ids,
                     pinned=[item.id for item in result.items if item.pinned],
                     tokens=result.tokens,
                     degraded=result.degraded, superseded_omitted=result.superseded_omitted,
                     sensitive_omitted=result.sensitive_omitted,
                     over_budget_omitted=result.over_budget_omitted)
    text = result.text or "No relevant memories."
    if result.sensitive_omitted:
        n = result.sensitive_omitted
        text += (f"\n({n} sensitive {'memory' if n == 1 else 'memories'} matched and "
                 f"{'was' if n == 1 else 'were'} left out: this server does not show "
                 "sensitive memories)")
    return _result(text, out)


def listed(page: Page, show_sensitive: bool = False) -> CallToolResult:
    """One page of list_memories: a line per memory with its whole text (a sensitive one's
    withheld unless the server shows it), then how to get the next page."""
    now = datetime.now(UTC)
    out = PageOut(memories=[memory_out(m, now, show_sensitive) for m in page.memories],
                  next_page_token=page.next_page_token)
    lines = [f"[{m.id}] {_text(m)} ({_labels(m, *_list_labels(m))})" for m in out.memories]
    if not lines:
        lines = ["No memories match."]
    if out.next_page_token:
        lines.append(f"More: call list_memories again with page_token "
                     f"{out.next_page_token!r} and the same filters and order.")
    return _result("\n".join(lines), out)


def _list_labels(memory: MemoryOut) -> list[str]:
    labels = []
    if memory.tags:
        labels.append("tags " + ", ".join(memory.tags))
    if memory.metadata:
        labels.append("metadata " + _metadata(memory.metadata))
    if memory.thread:
        labels.append(f"thread {memory.thread}")
    if memory.created_at:
        labels.append(f"created {_when(memory.created_at)}")
    return labels


def counted(count: int) -> CallToolResult:
    out = CountOut(count=count)
    return _result(f"{count} {'memory matches' if count == 1 else 'memories match'}.", out)


# How an earlier version's field reads in memory_history's text.
def _field_text(memory: MemoryOut, name: str) -> str:
    value = getattr(memory, name, None)
    if name == "content":
        return _text(memory)
    if name in ("tags", "metadata") and memory.withheld:
        return "(withheld)"
    if name == "tags":
        return ", ".join(memory.tags) or "none"
    if name == "metadata":
        return _metadata(memory.metadata) if memory.metadata else "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, datetime):
        return _when(value)
    if value is None:
        return "never" if name == "expires_at" else "unset"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value) or "none"


RELATION_VERBS = {"supersedes": "supersedes", "derived_from": "is derived from",
                  "references": "references", "about": "is about"}


def history(result: History, show_sensitive: bool = False) -> CallToolResult:
    """memory_history: the memory now, its earlier versions (oldest first) with what each
    update changed, and its relations both ways. A version's text is withheld (unless the
    server shows sensitive memories) when it or any later state of the memory is sensitive:
    marking a memory sensitive hides what it said before too."""
    now = datetime.now(UTC)
    current = memory_out(result.memory, now, show_sensitive)
    versions: list[VersionOut] = []
    sensitive_later = result.memory.sensitive
    for version in reversed(result.versions):
        sensitive_later = sensitive_later or version.memory.sensitive
        versions.append(VersionOut(
            version=version.version, replaced_at=version.replaced_at,
            replaced_by=version.replaced_by, changed=list(version.changed),
            imported_by=version.imported_by,
            memory=memory_out(version.memory, now, show_sensitive,
                              sensitive=sensitive_later)))
    versions.reverse()
    relations = [RelationOut(type=link.type, source_id=link.source_id,
                             target_id=link.target_id, created_at=link.created_at,
                             direction="outgoing" if link.source_id == current.id
                             else "incoming")
                 for link in result.relations]
    out = HistoryOut(memory=current, versions=versions, relations=relations)

    lines = [f"[{current.id}] {_text(current)}", "; ".join(_details(current))]
    if versions:
        lines.append(f"Earlier versions (oldest first; the current one is version "
                     f"{versions[-1].version + 1}):")
        for v in versions:
            when = f" {_when(v.replaced_at)}" if v.replaced_at else ""
            who = f" by {v.replaced_by}" if v.replaced_by else ""
            if v.imported_by:
                who += f" (imported by {v.imported_by})"
            was = "; ".join(f"{name} was {_field_text(v.memory, name)}" for name in v.changed)
            lines.append(f"- version {v.version}, replaced{when}{who}: {was}")
    else:
        lines.append("No earlier versions: it was never updated.")
    if relations:
        lines.append("Relations:")
    for r in relations:
        verb = RELATION_VERBS.get(r.type, r.type)
        if r.direction == "outgoing":
            lines.append(f"- this memory {verb} [{r.target_id}]")
        else:
            lines.append(f"- [{r.source_id}] {verb} this memory")
    return _result("\n".join(lines), out)
