"""What the tools return: structured content (pydantic models, published as each tool's
output schema) and the compact text a model reads."""

from __future__ import annotations

from datetime import UTC, datetime

from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, Field

from recallmesh.client import ContextResult, Deleted, Memory, RecallResult, StoreResult


class MemoryOut(BaseModel):
    id: str = Field(description="The memory's id (pass it to get_memory, update_memory, "
                                "forget, or store_memory's supersedes)")
    content: str
    category: str
    tags: list[str]
    importance: float
    sensitive: bool
    thread: str
    created_at: datetime | None = None
    updated_at: datetime | None = None
    valid_to: datetime | None = Field(
        default=None, description="When its validity ended (set when a newer memory "
                                  "superseded it); none while it is current")
    superseded: bool = Field(default=False, description="A newer memory replaced it")
    superseded_by: str = Field(default="", description="The id of the memory that replaced "
                                                       "it, when one did")
    withheld: bool = Field(default=False, description="A sensitive memory whose text this "
                                                      "server does not show (content empty)")


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


class RecallOut(BaseModel):
    hits: list[HitOut] = Field(description="Best first")
    degraded: bool = Field(description="A search leg failed or timed out: results may be "
                                       "incomplete")


class ForgottenOut(BaseModel):
    id: str
    purged: bool = Field(description="Removed for good, with its index entries")
    deleted_at: datetime | None = None


class ContextOut(BaseModel):
    text: str = Field(description="The block to read before answering (empty: nothing "
                                  "relevant)")
    ids: list[str] = Field(description="The memories in the text, in its order")
    tokens: int
    degraded: bool
    superseded_omitted: int
    sensitive_omitted: int
    over_budget_omitted: int


WITHHELD = "(sensitive: its text is withheld by this server's configuration)"


def memory_out(memory: Memory, now: datetime | None = None,
               show_sensitive: bool = True) -> MemoryOut:
    """The memory as a tool returns it; a sensitive memory's text only with show_sensitive
    (the server's setting, never a tool argument)."""
    now = now or datetime.now(UTC)
    withheld = memory.sensitive and not show_sensitive
    return MemoryOut(
        id=memory.id, content="" if withheld else memory.content, category=memory.category,
        tags=[] if withheld else list(memory.tags), withheld=withheld,
        importance=round(memory.importance, 4), sensitive=memory.sensitive,
        thread=memory.thread, created_at=memory.created_at, updated_at=memory.updated_at,
        valid_to=memory.valid_to, superseded_by=memory.superseded_by,
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
    return ", ".join(parts)


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
    out = RecallOut(hits=hits, degraded=result.degraded)
    lines = [f"{h.rank}. [{h.memory.id}] {_text(h.memory)} "
             f"({_labels(h.memory, f'score {_score(h.score)}')})" for h in hits]
    if not lines:
        lines = [f"No memories found for {query!r}."]
    if result.degraded:
        lines.append("(a search leg did not answer: results may be incomplete)")
    return _result("\n".join(lines), out)


def got(memory: Memory, show_sensitive: bool = False) -> CallToolResult:
    out = memory_out(memory, show_sensitive=show_sensitive)
    details = [f"category: {out.category or 'none'}", f"importance: {out.importance:g}"]
    if out.tags:
        details.append("tags: " + ", ".join(out.tags))
    if out.thread:
        details.append(f"thread: {out.thread}")
    if out.created_at:
        details.append(f"created: {out.created_at:%Y-%m-%d %H:%M} UTC")
    if out.superseded and out.valid_to:
        by = f" by [{out.superseded_by}]" if out.superseded_by else ""
        details.append(f"superseded{by} since {out.valid_to:%Y-%m-%d %H:%M} UTC")
    if out.sensitive:
        details.append("sensitive")
    return _result(f"[{out.id}] {_text(out)}\n" + "; ".join(details), out)


def forgotten(result: Deleted) -> CallToolResult:
    out = ForgottenOut(id=result.id, purged=result.purged, deleted_at=result.deleted_at)
    return _result(f"Forgot [{out.id}]: removed for good.", out)


def context_block(result: ContextResult) -> CallToolResult:
    out = ContextOut(text=result.text, ids=result.ids, tokens=result.tokens,
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
