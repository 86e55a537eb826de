"""The duplicate rule and who a write's answer may tell of what (MemoryStore's writes,
recallmesh/gateway/store_writes.py, ask these).

A write that says what a live, current memory of the namespace already says (the same
`content_key`: content after normalising case and white space, thread, category, tags,
metadata, sensitivity and validity) stores nothing and answers that memory, marked existing;
so does a repeat inside one batch. A write with relations, or with an expiry of its own, is
always stored (its relations are new; it asks for its own lifetime).

Every memory records who wrote it (`written_by`). A writer without the read scope is answered
about the memories it wrote only: the duplicate rule and a retry's answer look at those alone,
so no answer tells it what another writer stored (docs/decisions/0011-hostile-input-rules.md).
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from dataclasses import dataclass
from typing import Any

from recallmesh.shared.db import Conn
from recallmesh.shared.errors import AlreadyExists
from recallmesh.wire.filters import live
from recallmesh.wire.memory_fields import COLUMNS, UPDATABLE, NewMemory, StoredMemory
from recallmesh.wire.real import as_real

LIVE = live()


@dataclass(frozen=True)
class Writer:
    """Who writes: what memories.written_by records (Principal.writer), and whether the
    caller may read. Without read, a write is answered about the writer's own memories only."""

    name: str = "local"
    may_read: bool = True

    def told_of(self, written_by: str | None) -> bool:
        """Whether an answer may tell this writer of a memory `written_by` wrote (the rule
        _SEEN_BY_WRITER says in SQL)."""
        return self.may_read or written_by == self.name


# Internal writers (the demo loader, the tests' helpers, authentication off): may read.
LOCAL = Writer()
# The condition a writer's answers add: every memory if it may read, else its own
# (parameters: may_read, name; Writer.told_of in Python).
_SEEN_BY_WRITER = "(%s OR written_by = %s)"

def normalised_content(content: str) -> str:
    """A memory's content as the duplicate rule compares it: NFKC, casefolded, runs of white
    space as one space."""
    return " ".join(unicodedata.normalize("NFKC", content).casefold().split())


def content_key(memory: Any) -> str:
    """What a write says, as a digest (a NewMemory or a StoredMemory): its content with case
    and white space normalised (NFKC, casefold, runs of space as one), thread, category, tags,
    metadata, sensitivity and validity window; not when it was recorded (a fact said again
    later is the same fact). Equal keys: the same memory."""
    said = [normalised_content(memory.content), memory.thread, memory.category, sorted(memory.tags),
            sorted(memory.metadata.items()), bool(memory.sensitive),
            memory.valid_from.isoformat() if memory.valid_from else None,
            memory.valid_to.isoformat() if memory.valid_to else None]
    return hashlib.sha256(json.dumps(said, ensure_ascii=False).encode()).hexdigest()


# The live, current memories (validity not ended) of a namespace holding these keys, that the
# writer may be told of: the oldest one per key.
_SAME_KEYS = f"""
SELECT DISTINCT ON (content_key) content_key, {COLUMNS} FROM memories
WHERE namespace = %s AND content_key = ANY(%s) AND {LIVE}
  AND (valid_to IS NULL OR valid_to > clock_timestamp()) AND {_SEEN_BY_WRITER}
ORDER BY content_key, created_at, id
"""

def keyed(memory: NewMemory) -> bool:
    """Whether a write may be answered by a memory that already says the same: not when it
    brings relations or an expiry of its own (see the module's docstring)."""
    return not memory.relations and memory.expires_at is None


async def same_said(conn: Conn, ns: str, memories: list[NewMemory], writer: Writer
                     ) -> dict[str, StoredMemory]:
    """content_key -> the live, current memory of `ns` that already says it (one the writer
    wrote, when it may not read), for the writes without relations (a write with relations is
    always new)."""
    keys = [content_key(m) for m in memories if keyed(m)]
    if not keys:
        return {}
    cur = await conn.execute(_SAME_KEYS, (ns, keys, writer.may_read, writer.name))
    return {row[0]: StoredMemory.from_row(row[1:]) for row in await cur.fetchall()}


def same_write(stored: StoredMemory, memory: NewMemory, relations: set[tuple[str, str]]) -> bool:
    """Whether `stored` (and its relations) is what writing `memory` stores: every field the
    write sets; created_at and expires_at only when the write gave them (else the server chose
    them); importance as the column holds it."""
    for name in (*UPDATABLE, "created_at"):
        want, have = getattr(memory, name), getattr(stored, name)
        if want is None and name in ("created_at", "expires_at"):
            continue
        if name == "importance":
            want, have = as_real(want), as_real(have)
        if want != have:
            return False
    return relations == set(memory.relations)


async def stored_before(conn: Conn, ns: str, memory: NewMemory, writer: Writer) -> StoredMemory:
    """The memory a retried write (its client-supplied id already stored) stored before.

    The same id with another write, in another namespace, deleted or expired, or (for a writer
    that may not read) written by another, is ALREADY_EXISTS, with one wording for all, so the
    answer never tells whether or where another tenant holds it, nor what another writer
    stored under it."""
    cur = await conn.execute(
        f"SELECT {COLUMNS} FROM memories WHERE id = %s AND namespace = %s AND {LIVE} "
        f"AND {_SEEN_BY_WRITER}", (memory.id, ns, writer.may_read, writer.name))
    row = await cur.fetchone()
    if row is not None:
        stored = StoredMemory.from_row(row)
        cur = await conn.execute(
            "SELECT rel_type, dst::text FROM memory_edges WHERE namespace = %s AND src = %s",
            (ns, memory.id))
        if same_write(stored, memory, {(r[0], r[1]) for r in await cur.fetchall()}):
            return stored
    raise AlreadyExists(f"memory {memory.id} already exists with other content")

