"""Context before a prompt: pack recalled memories into a token budget (plain Python).

The gateway's Context RPC recalls, then `pack` turns the hits into the block an agent puts
before its prompt:

- current facts only: a memory whose validity ended (valid_to passed; SUPERSEDES sets it) is
  left out, its replacement speaks for it;
- sensitive memories only when the caller asks for them (a prompt may be logged or sent to
  a model provider);
- most relevant first, one line per memory, greedily while the budget holds (a memory too long
  for what is left is skipped and a shorter, less relevant one may still fit);
- the creation date on each line when the query asks about time (`is_temporal`).

Tokens are counted by a `TokenCounter`: the embedding model's own tokenizer when its files are
in the model cache, else a stated approximation (4 characters per token).
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from recallmesh.embedding_models.manifest import ModelManifest
from recallmesh.gateway import time_window
from recallmesh.wire.memory_fields import StoredMemory

log = logging.getLogger(__name__)

HEADING = "Relevant memories (most relevant first):"
APPROXIMATION = "approximation:4-chars-per-token"

# Words that ask about time; a relative time phrase the recall's time window reads
# ("last Saturday", "two weeks ago") counts too.
_TEMPORAL = re.compile(
    r"\b(when|what (date|day|year|month|time)|which (date|day|year|month)|how long|ago|"
    r"since|until|before|after|earlier|later|latest|recent(ly)?|yesterday|today|tomorrow|"
    r"last|next|first|date|dates|year|month|week|weekend)\b", re.IGNORECASE)


def is_temporal(query: str, reference: datetime) -> bool:
    """Whether the query asks about time, so the block shows each memory's date."""
    return bool(_TEMPORAL.search(query)) or time_window.resolve(query, reference) is not None


@dataclass(frozen=True)
class TokenCounter:
    """Counts the tokens of a text; `name` says how (reported to the caller)."""

    name: str
    count: Callable[[str], int]

    @classmethod
    def approximate(cls) -> TokenCounter:
        return cls(APPROXIMATION, lambda text: math.ceil(len(text) / 4))

    @classmethod
    def load(cls) -> TokenCounter:
        """The embedding model's tokenizer (no special tokens, no truncation) when the model
        manifest resolves, else the approximation."""
        try:
            from tokenizers import Tokenizer  # the model's own tokenizer: loaded when used

            manifest = ModelManifest.load()
            tokenizer = Tokenizer.from_file(str(manifest.tokenizer))
        except Exception as exc:  # no model files here (e.g. a gateway-only image)
            log.info("context: counting tokens by approximation (%s)", exc)
            return cls.approximate()
        tokenizer.no_truncation()
        tokenizer.no_padding()
        return cls(f"tokenizer:{manifest.model_id}",
                   lambda text: len(tokenizer.encode(text, add_special_tokens=False).ids))


@dataclass(frozen=True)
class PackedItem:
    memory: StoredMemory
    score: float
    tokens: int
    pinned: bool = False


@dataclass(frozen=True)
class Packed:
    text: str
    items: list[PackedItem]
    tokens: int
    dated: bool
    superseded_omitted: int = 0
    sensitive_omitted: int = 0
    over_budget_omitted: int = 0


def line_for(memory: StoredMemory, dated: bool) -> str:
    """One memory's line: "- [2026-03-01] content (category)"; whitespace folded to spaces."""
    content = " ".join(memory.content.split())
    date = f"[{memory.created_at.date().isoformat()}] " if dated else ""
    category = f" ({memory.category})" if memory.category else ""
    return f"- {date}{content}{category}"


def pack(
    hits: Sequence[tuple[StoredMemory, float]],
    max_tokens: int,
    counter: TokenCounter,
    now: datetime,
    dated: bool,
    include_sensitive: bool = False,
    pinned: Sequence[StoredMemory] = (),
) -> Packed:
    """The hits (best first, with their scores) packed into at most `max_tokens` tokens, the
    pinned memories first (a pinned memory that is also a hit is packed once, first, with its
    recall score; one that is not has score 0)."""
    superseded = sensitive = over = 0
    heading_tokens = counter.count(HEADING)
    used = heading_tokens
    lines: list[str] = []
    items: list[PackedItem] = []
    scores = {m.id: s for m, s in hits}
    held = {m.id for m in pinned}
    ordered = [(m, scores.get(m.id, 0.0), True) for m in pinned]
    ordered += [(m, s, False) for m, s in hits if m.id not in held]
    for memory, score, is_pinned in ordered:
        if memory.valid_to is not None and memory.valid_to <= now:
            superseded += 1
            continue
        if memory.sensitive and not include_sensitive:
            sensitive += 1
            continue
        line = line_for(memory, dated)
        # a line costs its own tokens plus the newline before it (counted as one token)
        cost = counter.count(line) + 1
        if used + cost > max_tokens:
            over += 1
            continue
        used += cost
        lines.append(line)
        items.append(PackedItem(memory, score, cost, is_pinned))
    if not items:
        return Packed("", [], 0, dated, superseded, sensitive, over)
    return Packed("\n".join([HEADING, *lines]), items, used, dated, superseded, sensitive, over)
