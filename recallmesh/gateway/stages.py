"""The pure stages after fusion, without I/O: which ones a recall runs (`plan`), and context
propagation's scoring (`propagate_context`); the time window's parser and boost are in
recallmesh/gateway/time_window.py, the intent route in query_intent.py and its merge in
recallmesh/wire/policy.py. The gateway runs them around its database reads, and every benchmark
replay imports them: there is no second implementation.

Last, `current_first`: a memory whose validity has ended (valid_to passed: superseded by a
SUPERSEDES relation, or a fact the client dated) ranks after every hit still valid, in relevance
order, whatever the number of contributing legs: the newest fact first, the old one still shown,
and it scores below every current hit (the ended ones scaled together to at most ENDED_SHARE of
the lowest current score), so a score read alone never puts an ended fact above its
replacement. An ended memory neither seeds nor receives context propagation (`ended`).

Before it, `newer_first`: of two current hits that are facts, not turns of a conversation
(no thread), where the newer restates the older as a change (their vectors nearly alike, the
policy's restated_similarity; the newer says again most of what the older said: at least
MIN_SHARED_TERMS content words in common and at least RESTATED_SHARE of the older's; and the
newer says it changed: one of CHANGE_WORDS, "now", "moved", "switched", "no longer", ...),
the newer ranks just above the older, with at least its score: a changed preference or
address stated again without a SUPERSEDES relation reads newest first. Nothing is removed,
and no other hit moves. Conversation turns are left alone: in a transcript most turns of the
top ten are that alike and share names and words, and reordering them newest first cost LoCoMo
0.021 nDCG@10 (benchmarks/reports/floor.md). Nor do documents on one subject: two SciFact
abstracts are that alike and share a dozen stems, and one of them says "changed" or
"currently" somewhere; before RESTATED_SHARE, reordering them newest first cost SciFact 0.04
nDCG@10 (issue 42).

Then `relevance_scores`: under calibrated fusion a hit's score becomes what it means on one
scale for every query, namespace and set of answering legs: its fused share (the fused score
over the summed weights of the legs that answered) mapped by the embedding model's fitted
calibration (recallmesh/embedding_models/calibration.py) to the estimated probability that it is
relevant; the share itself (at most 1) for a model without one. A monotone map: the order is
kept. And `above_floor` applies the request's min_score: under calibrated fusion only, the one
method whose scores mean the same everywhere (an RRF or min-max score has no absolute meaning a
floor could cut at; those methods keep every hit). Recall abstains: it answers nothing when its
best hit scores below the floor, and otherwise its hits as ranked (a relevant memory scored
below the floor under a confident best hit stays in the list; served with each hit cut,
LongMemEval recall@10 was 0.912, held this way 0.937: benchmarks/reports/models.md and
served.md). Context, whose text goes
into a prompt, leaves out each hit below the floor.

The rule for both refinements (time window, context): they apply to relevance order only
(recency bypasses fusion; importance order is the prior's), and only when more than one leg
contributed to fusion (a leg with weight > 0 and at least one candidate). A single contributing
leg keeps its own order: the exact lexical fallback.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from recallmesh.embedding_models.calibration import ScoreCalibration
from recallmesh.gateway.time_window import TimeWindow, resolve
from recallmesh.wire.fusion import Contribution, FusedCandidate, LegList
from recallmesh.wire.policy import RecallPolicy

# The pseudo-legs named in explain for what context propagation added to a memory stored
# right after / right before a hit (rank: that hit's rank in the fused list).
CONTEXT_NEXT = "context_next"
CONTEXT_PREV = "context_prev"


def contributing_legs(lists: Sequence[LegList]) -> int:
    """How many legs fusion actually combined: weight > 0 and at least one candidate."""
    return sum(1 for x in lists if x.weight > 0 and x.candidates)


@dataclass(frozen=True)
class Stages:
    """The refinements one recall runs after fusion."""

    window: TimeWindow | None = None  # boost the candidates created inside it
    time_boost: float = 0.0
    context_hits: int = 0  # context propagation from the best N hits (0: none)
    context_next_weight: float = 0.0
    context_prev_weight: float = 0.0


def plan(policy: RecallPolicy, lists: Sequence[LegList], sort_by: str, query: str,
         reference_time: datetime | None = None) -> Stages:
    """Which refinements apply to this recall under `policy` (already resolved for the
    request): see the module's rule. The window is read from the query against
    `reference_time` (default: now)."""
    if sort_by != "relevance" or contributing_legs(lists) <= 1:
        return Stages()
    window = None
    if policy.time_boost > 0:
        window = resolve(query, reference_time or datetime.now(UTC))
    context = (policy.context_hits > 0
               and (policy.context_next_weight > 0 or policy.context_prev_weight > 0))
    return Stages(window=window, time_boost=policy.time_boost if window else 0.0,
                  context_hits=policy.context_hits if context else 0,
                  context_next_weight=policy.context_next_weight,
                  context_prev_weight=policy.context_prev_weight)


def propagate_context(
    fused: Sequence[FusedCandidate],
    top: Sequence[FusedCandidate],
    after: dict[str, str],
    before: dict[str, str],
    n: int,
    next_weight: float,
    prev_weight: float,
    k: int,
    importance: dict[str, float] | None = None,
) -> tuple[list[FusedCandidate], int]:
    """The scoring of context propagation, without I/O: `after` / `before` map a hit's id to
    the id of the memory stored next after / just before it. Each of the best n of `top`
    gives next_weight x its score to its next memory and prev_weight x to its previous one
    (a memory keeps the largest share of each side); a neighbour in `fused` adds the share to
    its fused score, any other starts from 0. Returns `top` and the raised neighbours ranked
    again, cut to k, and how many memories were raised."""
    shares: dict[str, dict[str, tuple[float, int]]] = {}
    for rank, seed in enumerate(top[:n], start=1):
        for source, weight, neighbours in ((CONTEXT_NEXT, next_weight, after),
                                           (CONTEXT_PREV, prev_weight, before)):
            neighbour = neighbours.get(seed.memory_id)
            share = weight * seed.score
            if neighbour is None or weight <= 0 or share <= 0:
                continue
            best = shares.setdefault(neighbour, {})
            if share > best.get(source, (0.0, 0))[0]:
                best[source] = (share, rank)
    if not shares:
        return list(top), 0
    by_id = {c.memory_id: c for c in fused}
    pool = {c.memory_id: c for c in top}
    for memory_id, gained in shares.items():
        base = pool.get(memory_id) or by_id.get(memory_id) or FusedCandidate(
            memory_id, 0.0, (importance or {}).get(memory_id, 0.5))
        added = [Contribution(source, rank, share)
                 for source, (share, rank) in sorted(gained.items())]
        pool[memory_id] = replace(base, score=base.score + sum(c.score for c in added),
                                  contributions=[*base.contributions, *added])
    ranked = sorted(pool.values(), key=lambda c: (-c.score, c.best_rank, c.memory_id))
    return ranked[:k], len(shares)


# The best ended memory's score is at most this share of the lowest current hit's score.
ENDED_SHARE = 0.5


def ended(valid_to: dict[str, datetime | None], now: datetime) -> set[str]:
    """The memories whose validity ended by `now` (valid_to <= now)."""
    return {i for i, t in valid_to.items() if t is not None and t <= now}


def current_first(top: Sequence[FusedCandidate], valid_to: dict[str, datetime | None],
                  now: datetime) -> list[FusedCandidate]:
    """`top` with the memories whose validity ended by `now` moved after the others, each
    group in its own order, the ended ones' scores scaled (all by one factor, their order and
    ratios kept) so that the best of them is at most ENDED_SHARE of the lowest current score
    (of its own score when no current hit is left)."""
    gone = ended(valid_to, now)
    current = [c for c in top if c.memory_id not in gone]
    old = [c for c in top if c.memory_id in gone]
    if not old:
        return current
    best_old = max(c.score for c in old)
    ceiling = ENDED_SHARE * (min(c.score for c in current) if current else best_old)
    factor = min(1.0, ceiling / best_old) if best_old > 0 else 1.0
    return current + [replace(c, score=c.score * factor) for c in old]


def absolute(top: Sequence[FusedCandidate], lists: Sequence[LegList], method: str,
             calibration: ScoreCalibration | None, min_score: float, each_hit: bool = False
             ) -> list[FusedCandidate]:
    """`top` scored on the absolute scale (relevance_scores), then held to the floor
    (above_floor): what every recall answers with."""
    return above_floor(relevance_scores(top, lists, method, calibration), min_score, method,
                       each_hit)


def relevance_scores(top: Sequence[FusedCandidate], lists: Sequence[LegList], method: str,
                     calibration: ScoreCalibration | None) -> list[FusedCandidate]:
    """`top` with each score on the absolute scale (see the module's docstring): only under
    calibrated fusion, the one method whose legs' scores mean the same in every query."""
    total = sum(lst.weight for lst in lists if lst.weight > 0)
    if method != "calibrated" or total <= 0:
        return list(top)
    if calibration is None:
        return [replace(c, score=min(c.score / total, 1.0)) for c in top]
    return [replace(c, score=calibration.relevance(c.score / total)) for c in top]


def above_floor(top: Sequence[FusedCandidate], min_score: float, method: str = "calibrated",
                each_hit: bool = False) -> list[FusedCandidate]:
    """`top` held to `min_score` (every hit when it is 0, or when `method` is not calibrated
    fusion: see the module's docstring): the whole of it when its best hit scores at least
    `min_score`, else nothing (Recall); with `each_hit`, the hits scoring at least it
    (Context)."""
    if min_score <= 0 or method != "calibrated":
        return list(top)
    if each_hit:
        return [c for c in top if c.score >= min_score]
    return list(top) if top and max(c.score for c in top) >= min_score else []


# Two memories restate one thing when they share at least this many content words
# (content_words: casefolded, stopwords dropped, cut to their first STEM_CHARS characters).
MIN_SHARED_TERMS = 2
STEM_CHARS = 5
# ... and the newer memory says again at least this share of the older one's content words
# (a restated fact repeats its subject; two documents on one subject share a few stems of many).
RESTATED_SHARE = 0.5
_STOPWORDS = frozenset(
    "the and for with that this from have has had was were are been but not now you your "
    "she her his him they them their our out about into over than then also just very what "
    "when where which who how all any can will would could should does did doing there here "
    "more most some such only own same other each few both its it's i'm".split())
_WORD = re.compile(r"\w+")
# What a statement of change says (English; casefolded words of the newer memory).
CHANGE_WORDS = frozenset(
    "now switched switch moved changed change replaced instead longer anymore stopped "
    "quit became nowadays currently".split())


def content_words(text: str) -> set[str]:
    """The words of `text` that say something: casefolded, stopwords and words under three
    characters dropped, each cut to its first STEM_CHARS characters (a crude, language-blind
    stem: "editors" and "editor", "painted" and "painting" meet)."""
    return {w[:STEM_CHARS] for w in _WORD.findall(text.casefold())
            if len(w) >= 3 and w not in _STOPWORDS}


def restates(older: str, newer: str) -> bool:
    """Whether `newer` says again what `older` said: at least MIN_SHARED_TERMS of its content
    words, and at least RESTATED_SHARE of them."""
    said = content_words(older)
    shared = len(said & content_words(newer))
    return shared >= MIN_SHARED_TERMS and shared >= RESTATED_SHARE * len(said)


def says_change(text: str) -> bool:
    """Whether `text` says something changed (one of CHANGE_WORDS)."""
    return bool(CHANGE_WORDS.intersection(_WORD.findall(text.casefold())))


def restatable(top: Sequence[FusedCandidate], content: dict[str, str],
               threaded: frozenset[str] | set[str]) -> list[str]:
    """The hits `newer_first` could move, whose near-duplicate pairs are worth reading: the
    facts (not in `threaded`), when there are two and one of them says it changed; else []."""
    facts = [c.memory_id for c in top if c.memory_id not in threaded]
    if len(facts) < 2 or not any(says_change(content[i]) for i in facts):
        return []
    return facts


def newer_first(top: Sequence[FusedCandidate], created: dict[str, datetime],
                content: dict[str, str], similar: Sequence[tuple[str, str, float]],
                threaded: frozenset[str] | set[str] = frozenset(),
                ) -> tuple[list[FusedCandidate], int]:
    """`top` with the newer of each restating pair (`similar`: pairs whose vectors are
    near-duplicates, from MemoryStore.similar_pairs; restating: `restates`) moved from below
    the older one to just above it, its score raised to the older one's; memories in
    `threaded` (conversation turns) are left alone. Returns the order and how many moves were
    made."""
    pairs = []
    for a, b, _ in similar:
        if (a not in created or b not in created or created[a] == created[b]
                or a in threaded or b in threaded):
            continue
        old, new = (a, b) if created[a] < created[b] else (b, a)
        if restates(content[old], content[new]) and says_change(content[new]):
            pairs.append((old, new))
    order = list(top)
    moves = 0
    for _ in range(len(order) * len(order)):  # a bound; each move undoes one inversion
        at = {c.memory_id: i for i, c in enumerate(order)}
        inverted = next(((o, n) for o, n in pairs
                         if o in at and n in at and at[o] < at[n]), None)
        if inverted is None:
            break
        old_at = at[inverted[0]]
        newer = order.pop(at[inverted[1]])
        order.insert(old_at, replace(newer, score=max(newer.score, order[old_at].score)))
        moves += 1
    return order, moves
