"""A secret read in meaning (recallmesh/gateway/secrets.py, docs/decisions/0023): the pure rule,
and the gateway's Recaller around it over in-process legs and embedders (no gRPC, no database):
a secret stays only when it is nearer the question than every ordinary memory, and is withheld
whenever its meaning cannot be read."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from recallmesh.gateway import secrets
from recallmesh.gateway.fanout import LegError, LegTimeout
from recallmesh.gateway.recall import Recaller
from recallmesh.gateway.settings import GatewaySettings, LegTarget
from recallmesh.policy import Overrides, RecallPolicy
from recallmesh.services.embedding.client import Embeddings
from recallmesh.wire.fusion import LegCandidate, LegList
from recallmesh.wire.retriever import LegAnswer, LegQuery
from recallmesh.wire.validation import RecallQuery
from tests.unit.test_recall_core import HydratingStore, mid


def unit(angle: float) -> list[float]:
    """A unit vector in the plane at `angle` (radians) from the question's (angle 0)."""
    return [math.cos(angle), math.sin(angle)]


QUESTION = unit(0.0)


def lists(vector: list[tuple[int, float]] | None, lexical: list[tuple[int, bool]]
          ) -> list[LegList]:
    """A vector leg's list of (memory, cosine) (None: it did not answer), and a lexical
    leg's of (memory, sensitive)."""
    out = [LegList("lexical", 1.0, [LegCandidate(mid(i), 1.0, sensitive=s)
                                    for i, s in lexical])]
    if vector is not None:
        out.append(LegList("vector", 1.0, [LegCandidate(mid(i), c) for i, c in vector],
                           blind_to_sensitive=True))
    return out


def test_the_nearest_ordinary_memory_is_the_vector_legs_best_hit() -> None:
    assert secrets.nearest_ordinary(lists([(1, 0.4), (2, 0.7)], [])) == 0.7
    assert secrets.nearest_ordinary(lists([], [])) == -1.0  # nothing ordinary passes
    assert secrets.nearest_ordinary(lists(None, [])) is None  # meaning unknown


def test_a_secret_stays_only_when_nearer_than_every_ordinary_memory() -> None:
    found = {"asked": unit(0.3), "about": unit(0.9)}
    assert secrets.asked_in_meaning(QUESTION, found, math.cos(0.6)) == {"asked"}
    assert secrets.asked_in_meaning(QUESTION, found, math.cos(0.3)) == set()  # a tie: no
    assert secrets.asked_in_meaning(QUESTION, found, -1.0) == {"asked", "about"}


def test_withholding_removes_the_secret_from_every_list_and_nothing_else() -> None:
    before = lists([(1, 0.5)], [(1, False), (9, True), (8, True)])
    after = secrets.withhold(before, {mid(9)})
    assert [c.memory_id for c in after[0].candidates] == [mid(1), mid(8)]
    assert after[1] is before[1]  # a list without it is the same list
    assert secrets.secret_candidates(after) == [mid(8)]


@given(st.lists(st.floats(-1, 1), min_size=2, max_size=2).filter(lambda v: any(v)),
       st.floats(-1, 1))
def test_a_secret_nearer_than_the_nearest_is_kept_whatever_its_length(
        v: list[float], nearest: float) -> None:
    scaled = [x * 7.5 for x in v]  # cosine, not dot product: the length says nothing
    # equal to float rounding (a 1e-39 component scaled is another rounding): no side to take
    assume(abs(secrets.cosine(QUESTION, v) - nearest) > 1e-12)
    kept = secrets.asked_in_meaning(QUESTION, {"s": scaled}, nearest)
    assert (kept == {"s"}) == (secrets.cosine(QUESTION, v) > nearest)


@dataclass
class FixedLeg:
    name: str
    candidates: list[LegCandidate]
    needs_vector: bool = False
    fail: bool = False

    async def search(self, query: LegQuery, timeout_s: float) -> LegAnswer:
        if self.fail:
            raise LegTimeout()
        return LegAnswer(self.candidates)


@dataclass
class Embedder:
    """The question at angle 0; each stored text at the angle `angles` gives it."""

    angles: dict[str, float]
    fail: bool = False
    documents: list[list[str]] = field(default_factory=list)

    async def query(self, text: str, timeout_s: float) -> Embeddings:
        return Embeddings("m", 2, [QUESTION])

    async def document(self, texts: list[str], timeout_s: float) -> Embeddings:
        self.documents.append(texts)
        if self.fail:
            raise LegError("embedding service: UNAVAILABLE")
        return Embeddings("m", 2, [unit(self.angles[t]) for t in texts])


def stack(secret_angle: float, ordinary_cosine: float, *, vector_fails: bool = False,
          embedder_fails: bool = False, meaning: bool = True) -> tuple[Recaller, Embedder]:
    """Memory 1 ordinary (the vector leg's best, at `ordinary_cosine`), memory 9 a secret the
    lexical leg returned ("memory 09" in HydratingStore's texts) at `secret_angle`."""
    lexical = FixedLeg("lexical", [LegCandidate(mid(9), 2.0, sensitive=True),
                                   LegCandidate(mid(1), 1.0)])
    vector = FixedLeg("vector", [LegCandidate(mid(1), ordinary_cosine)], needs_vector=True,
                      fail=vector_fails)
    settings = GatewaySettings(
        legs=(LegTarget("lexical", "", False), LegTarget("vector", "", True)),
        default_budget_ms=800, reserve_ms=20,
        policy=RecallPolicy(leg_depth=10, weights={"lexical": 1.0, "vector": 1.0}))
    embedder = Embedder({"memory 09": secret_angle}, fail=embedder_fails)
    return Recaller(HydratingStore(), [lexical, vector], settings, embedder.query,
                    embed_documents=embedder.document if meaning else None), embedder


def ask() -> RecallQuery:
    return RecallQuery("ns", "anything", k=10, fusion=Overrides.of(method="rrf"))


async def hit_ids(r: Recaller) -> list[str]:
    return [h.memory.id for h in (await r.recall(ask())).hits]


async def test_a_secret_nearer_than_the_ordinary_memories_is_offered() -> None:
    r, embedder = stack(secret_angle=0.2, ordinary_cosine=0.5)
    assert mid(9) in await hit_ids(r)
    assert embedder.documents == [["memory 09"]]  # its text embedded, once


async def test_a_secret_an_ordinary_memory_answers_as_well_is_withheld() -> None:
    r, _ = stack(secret_angle=1.2, ordinary_cosine=0.5)  # cos 1.2 = 0.36 < 0.5
    assert await hit_ids(r) == [mid(1)]


@pytest.mark.parametrize("how", ["vector leg", "embedding"])
async def test_a_secret_whose_meaning_cannot_be_read_is_withheld(how: str) -> None:
    r, _ = stack(secret_angle=0.0, ordinary_cosine=0.5, vector_fails=how == "vector leg",
                 embedder_fails=how == "embedding")
    outcome = await r.recall(ask())
    assert [h.memory.id for h in outcome.hits] == [mid(1)]


async def test_without_an_embedding_service_the_words_rule_stands_alone() -> None:
    r, embedder = stack(secret_angle=1.2, ordinary_cosine=0.5, meaning=False)
    assert mid(9) in await hit_ids(r)
    assert embedder.documents == []
