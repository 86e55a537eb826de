"""The indexer's handling of a failing batch, without a database: split a failing batch down
to the text at fault, tell a poison text from an outage, keep what was embedded."""

from __future__ import annotations

import asyncio
from typing import cast

import pytest
from psycopg_pool import AsyncConnectionPool

from recallmesh.services.embedding.client import Embeddings
from recallmesh.services.indexer.core import Indexer
from recallmesh.services.indexer.poison import PROBE_TEXT, Round, embed_round
from recallmesh.services.indexer.settings import IndexerSettings
from recallmesh.shared.settings import ConfigError

# The embedding rounds are tested without a database: the indexer is built over no pool.
NO_DATABASE = cast(AsyncConnectionPool, None)


class Code:
    def __init__(self, name: str) -> None:
        self.name = name


class FakeRpcError(Exception):
    """Quacks like grpc.aio.AioRpcError (code(), details())."""

    def __init__(self, code: str, details: str = "") -> None:
        super().__init__(details)
        self._code, self._details = code, details

    def code(self) -> Code:
        return Code(self._code)

    def details(self) -> str:
        return self._details


class Model:
    """Fails any call holding a text with POISON (INTERNAL), or every call (`broken`)."""

    def __init__(self, broken: Exception | None = None, delay_s: float = 0.0) -> None:
        self.calls: list[list[str]] = []
        self.broken = broken
        self.delay_s = delay_s

    async def __call__(self, texts: list[str]) -> Embeddings:
        self.calls.append(list(texts))
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if self.broken is not None:
            raise self.broken
        if any("POISON" in t for t in texts):
            raise FakeRpcError("INTERNAL", "the model failed on an input")
        return Embeddings("m", 2, [[float(len(t)), 1.0] for t in texts])


def indexer(model: Model, budget_s: float = 5.0) -> Indexer:
    return Indexer(NO_DATABASE, model, embed_budget_s=budget_s)


async def run(model: Model, texts: list[str], budget_s: float = 5.0) -> Round:
    outcome = Round()
    await embed_round(model, budget_s, texts, outcome)
    return outcome


@pytest.mark.parametrize("bad", [0, 5, 15])
async def test_a_failing_batch_is_split_down_to_the_poison_text(bad: int) -> None:
    texts = [f"text {i}" for i in range(16)]
    texts[bad] = "a POISON text"
    model = Model()
    outcome = await run(model, texts)
    assert outcome.error is None
    assert set(outcome.poisoned) == {bad}
    assert "INTERNAL" in outcome.poisoned[bad] and "failed on an input" in outcome.poisoned[bad]
    assert sorted(outcome.vectors) == [i for i in range(16) if i != bad]
    assert all(outcome.vectors[i][0] == len(texts[i]) for i in outcome.vectors)
    # Bisection: the whole batch, then two halves per level (log2 16 = 4), plus at most
    # one probe (only when the poison failed before anything else succeeded).
    assert len(model.calls) <= 1 + 2 * 4 + 1
    assert ([PROBE_TEXT] in model.calls) == (bad == 0)


async def test_two_poison_texts_are_both_found() -> None:
    texts = [f"text {i}" for i in range(10)]
    texts[2], texts[7] = "POISON one", "POISON two"
    outcome = await run(Model(), texts)
    assert set(outcome.poisoned) == {2, 7} and len(outcome.vectors) == 8


async def test_a_service_that_fails_every_text_is_an_outage_not_poison() -> None:
    """INTERNAL for every text, the probe included: nothing is blamed on a text, and the split
    stops at the first single text (no 2n calls)."""
    model = Model(broken=FakeRpcError("INTERNAL", "session broken"))
    outcome = await run(model, [f"text {i}" for i in range(16)])
    assert outcome.poisoned == {} and outcome.vectors == {}
    assert "session broken" in str(outcome.error)
    assert len(model.calls) == 1 + 4 + 1  # 16, 8, 4, 2, 1, then the probe
    assert model.calls[-1] == [PROBE_TEXT]


@pytest.mark.parametrize("code", ["UNAVAILABLE", "DEADLINE_EXCEEDED", "RESOURCE_EXHAUSTED",
                                  "CANCELLED", "UNAUTHENTICATED"])
async def test_an_outage_is_never_split(code: str) -> None:
    model = Model(broken=FakeRpcError(code, "down"))
    outcome = await run(model, [f"text {i}" for i in range(8)])
    assert len(model.calls) == 1 and outcome.poisoned == {}
    assert outcome.error is not None


async def test_the_budget_covers_all_split_calls_and_keeps_what_was_embedded() -> None:
    texts = [f"text {i}" for i in range(8)]
    texts[7] = "POISON"
    model = Model(delay_s=0.1)  # 8 (fails), 4 ok, 4 (fails), 2 ok, ... ~0.6 s in all
    outcome = await run(model, texts, budget_s=0.25)
    assert isinstance(outcome.error, TimeoutError)
    assert "longer than the timeout" in str(outcome.error)
    assert sorted(outcome.vectors) == [0, 1, 2, 3]  # the half done in time is kept
    assert outcome.poisoned == {}  # not found out in time: nothing blamed


async def test_concept_names_that_fail_alone_get_no_vector() -> None:
    model = Model()
    embedded = await indexer(model)._embed_names(["alpha", "POISON name", "gamma"])
    assert embedded.model_id == "m"
    assert embedded.vectors[1] is None
    assert embedded.vectors[0] == [5.0, 1.0] and embedded.vectors[2] == [5.0, 1.0]


async def test_concept_names_raise_on_an_outage() -> None:
    with pytest.raises(FakeRpcError):
        await indexer(Model(broken=FakeRpcError("UNAVAILABLE")))._embed_names(["alpha"])


def test_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = IndexerSettings.from_env()
    assert (settings.max_attempts, settings.base_backoff_s) == (5, 0.5)
    monkeypatch.setenv("RECALLMESH_INDEXER_MAX_ATTEMPTS", "2")
    monkeypatch.setenv("RECALLMESH_INDEXER_BASE_BACKOFF_S", "0.05")
    settings = IndexerSettings.from_env()
    assert (settings.max_attempts, settings.base_backoff_s) == (2, 0.05)
    monkeypatch.setenv("RECALLMESH_INDEXER_MAX_ATTEMPTS", "0")
    with pytest.raises(ConfigError, match="RECALLMESH_INDEXER_MAX_ATTEMPTS"):
        IndexerSettings.from_env()
    monkeypatch.setenv("RECALLMESH_INDEXER_MAX_ATTEMPTS", "3")
    monkeypatch.setenv("RECALLMESH_INDEXER_BASE_BACKOFF_S", "0")
    with pytest.raises(ConfigError, match="RECALLMESH_INDEXER_BASE_BACKOFF_S"):
        IndexerSettings.from_env()
