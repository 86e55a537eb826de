"""The Context core: recalled memories packed into a token budget (gateway/context_block.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from recallmesh.embedding_models.manifest import DEFAULT_MODEL
from recallmesh.gateway.context_block import HEADING, TokenCounter, is_temporal, line_for, pack
from recallmesh.wire.memory_fields import StoredMemory
from tests.models import suite_manifest

NOW = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
APPROX = TokenCounter.approximate()
WORDS = TokenCounter("words", lambda text: len(text.split()))


def memory(content: str, i: int = 0, category: str = "", sensitive: bool = False,
           valid_to: datetime | None = None) -> StoredMemory:
    return StoredMemory(id=f"00000000-0000-4000-8000-{i:012d}", namespace="ns", content=content,
                        category=category, tags=(), importance=0.5, sensitive=sensitive,
                        created_at=NOW - timedelta(days=i), updated_at=NOW, valid_from=None,
                        valid_to=valid_to, metadata={})


def test_best_first_one_line_each_with_the_heading() -> None:
    hits = [(memory("Maya prefers Svelte", 1, category="preference"), 0.9),
            (memory("The office is in Lyon", 2), 0.4)]
    packed = pack(hits, 1000, WORDS, NOW, dated=False)
    assert packed.text == "\n".join([HEADING, "- Maya prefers Svelte (preference)",
                                     "- The office is in Lyon"])
    assert [i.memory.id for i in packed.items] == [hits[0][0].id, hits[1][0].id]
    assert packed.tokens == WORDS.count(HEADING) + (5 + 1) + (6 + 1)  # words + newline


def test_dates_shown_only_when_dated() -> None:
    m = memory("Moved to Berlin", 3)
    assert line_for(m, dated=True) == "- [2026-11-23] Moved to Berlin"
    assert line_for(m, dated=False) == "- Moved to Berlin"


def test_superseded_and_sensitive_left_out_and_counted() -> None:
    old = memory("Favourite editor is Vim", 1, valid_to=NOW - timedelta(hours=1))
    new = memory("Favourite editor is VS Code", 2)
    secret = memory("Bank PIN hint: lighthouse", 3, sensitive=True)
    packed = pack([(old, 1.0), (new, 0.9), (secret, 0.8)], 1000, WORDS, NOW, dated=False)
    assert [i.memory.id for i in packed.items] == [new.id]
    assert (packed.superseded_omitted, packed.sensitive_omitted) == (1, 1)
    with_secret = pack([(secret, 0.8)], 1000, WORDS, NOW, dated=False, include_sensitive=True)
    assert [i.memory.id for i in with_secret.items] == [secret.id]
    # a validity that ends in the future is still current
    later = memory("Lease runs until March", 4, valid_to=NOW + timedelta(days=90))
    assert pack([(later, 1.0)], 1000, WORDS, NOW, dated=False).items


def test_a_long_memory_is_skipped_and_a_shorter_one_still_fits() -> None:
    long = memory("word " * 50, 1)
    short = memory("short fact", 2)
    packed = pack([(long, 0.9), (short, 0.5)], 20, WORDS, NOW, dated=False)
    assert [i.memory.id for i in packed.items] == [short.id]
    assert packed.over_budget_omitted == 1


def test_nothing_fits_or_nothing_recalled_gives_empty_text() -> None:
    assert pack([], 100, WORDS, NOW, dated=False).text == ""
    packed = pack([(memory("word " * 50), 1.0)], 16, WORDS, NOW, dated=False)
    assert (packed.text, packed.tokens, packed.over_budget_omitted) == ("", 0, 1)


def test_temporal_questions() -> None:
    for q in ("When did I move to Berlin?", "what did we decide last week",
              "How long ago was the trip?", "what happened two weeks ago"):
        assert is_temporal(q, NOW), q
    for q in ("which frontend framework does Maya like?", "favourite editor"):
        assert not is_temporal(q, NOW), q


def test_the_model_tokenizer_counts_without_special_tokens() -> None:
    suite_manifest(DEFAULT_MODEL)  # fails with the make step that fetches it, when missing
    counter = TokenCounter.load()
    assert counter.name.startswith("tokenizer:")
    assert counter.count("") == 0
    assert counter.count("hello world") == 2


@settings(max_examples=200, deadline=None)
@given(contents=st.lists(st.text(min_size=1, max_size=200), max_size=30),
       budget=st.integers(min_value=16, max_value=400), dated=st.booleans())
def test_never_over_budget_and_relevance_order_kept(contents: list[str], budget: int,
                                                    dated: bool) -> None:
    hits = [(memory(c if c.strip() else "x", i), 1.0 - i / 100) for i, c in enumerate(contents)]
    for counter in (APPROX, WORDS):
        packed = pack(hits, budget, counter, NOW, dated)
        assert packed.tokens <= budget
        assert counter.count(packed.text) <= packed.tokens
        ids = [h[0].id for h in hits]
        order = [ids.index(i.memory.id) for i in packed.items]
        assert order == sorted(order)
        assert len(packed.items) + packed.over_budget_omitted == len(hits)
        assert sum(i.tokens for i in packed.items) + (counter.count(HEADING) if packed.items
                                                      else 0) == packed.tokens
