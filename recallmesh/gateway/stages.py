"""The pure stages after fusion, without I/O: which ones a recall runs (`plan`), and context
propagation's scoring (`propagate_context`); the time window's parser and boost are in
recallmesh/gateway/time_window.py, the intent route in query_intent.py and its merge in
recallmesh/policy.py. The gateway runs them around its database reads, and every benchmark
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
top ten are that alike and share names and words, and reordering them newest first lost
ranking quality on LoCoMo. Nor do documents on one subject: two SciFact abstracts are that
alike and share a dozen stems, and one of them says "changed" or "currently" somewhere;
before RESTATED_SHARE, reordering them newest first lost ranking quality on SciFact (both
measured: docs/decisions/0012-ranking-apart-from-scoring.md, "Restatements").

Ranking apart from scoring (docs/decisions/0012-ranking-apart-from-scoring.md): fusion only
ranks; where it scores hits exactly alike, `ties_by_estimate` orders them by their relevance
estimates (not by their ids), and every later stage keeps that order among equals.
`place_unseen` puts each sensitive hit, which the vector leg cannot see, where its
relevance estimate places it among the others (the ranker's place for it says little: a blind
leg neither votes for nor against it). `relevance_scores` then gives every hit of the final
order its score: the embedding model's relevance model (recallmesh/embedding_models/
calibration.py) of the hit's `evidence` (its legs' own values, never the ranker's score), made
non-increasing down a relevance ranking (`non_increasing`), so the score never contradicts the
order; without a calibration, calibrated fusion's share (at most 1) or the method's own score.
`above_floor` applies the request's min_score where scores are estimates
(`scores_are_estimates`; an RRF or min-max score has no absolute meaning a floor could cut at).
Recall abstains: it answers nothing when its best hit scores below the floor, and otherwise its
hits as ranked (a relevant memory scored below the floor under a confident best hit stays in
the list). Context, whose text goes into a prompt, leaves out each hit below the floor.

The rule for both refinements (time window, context): they apply to relevance order only
(recency bypasses fusion; importance order is the prior's), and only when more than one leg
contributed to fusion (a leg with weight > 0 and at least one candidate). A single contributing
leg keeps its own order: the exact lexical fallback.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from recallmesh.embedding_models.calibration import ScoreCalibration
from recallmesh.gateway.time_window import TimeWindow, resolve
from recallmesh.policy import FusionMethod, RecallPolicy, SortBy
from recallmesh.shared.legs import LEXICAL_LEG, VECTOR_LEG, LegName
from recallmesh.wire.fusion import Contribution, FusedCandidate, LegList

# The pseudo-legs named in explain for what context propagation added to a memory stored
# right after / right before a hit (rank: that hit's rank in the fused list).
CONTEXT_NEXT = "context_next"
# The pseudo-leg named in explain for the ranker's own score of a hit (rank: its place in the
# ranking) once its score has become its relevance estimate (relevance_scores).
RANKER = "ranker"
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


def plan(policy: RecallPolicy, lists: Sequence[LegList], sort_by: SortBy, query: str,
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
    again (equal scores in the order of `top`, then the neighbours'), cut to k, and how many
    memories were raised."""
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
    ranked = sorted(pool.values(), key=lambda c: -c.score)  # ties: in the order given
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


def scores_are_estimates(method: FusionMethod, calibration: ScoreCalibration | None) -> bool:
    """Whether a recall's scores mean the same in every query, so a floor can cut them: the
    relevance estimate (a model with a calibration), or calibrated fusion's share (one
    without); an RRF or min-max score has no absolute meaning."""
    return calibration is not None or method == "calibrated"


def _leg_scores(lists: Sequence[LegList], leg: LegName) -> tuple[LegList | None, dict[str, float]]:
    found = next((lst for lst in lists if lst.leg == leg), None)
    if found is None:
        return None, {}
    scores: dict[str, float] = {}
    for c in found.candidates:
        scores.setdefault(c.memory_id, c.score)
    return found, scores


def sensitive_ids(lists: Sequence[LegList]) -> set[str]:
    """The candidates a leg marked sensitive (never embedded: blind legs cannot return them)."""
    return {c.memory_id for lst in lists for c in lst.candidates if c.sensitive}


def evidence(hits: Sequence[FusedCandidate], lists: Sequence[LegList],
             calibration: ScoreCalibration, ended: Collection[str] = frozenset()
             ) -> list[dict[str, float]]:
    """What the relevance model reads of each hit (RELEVANCE_FEATURES in
    recallmesh/embedding_models/calibration.py), from the legs' own values, never from the
    ranker's score: the hit's own, and its gap to the best the leg listed. A leg that did not
    answer gives nothing: its features are left out and the model fitted without them
    estimates every hit. Nor does a leg that answered but cannot see the hit (the vector leg
    and a sensitive memory, which the lexical leg returns only when the question asks for what
    no ordinary memory holds: docs/decisions/0015-secrets-on-what-only-they-hold.md): the hit
    is estimated on what the legs that see it saw. A hit a leg saw but did not list scores at
    most the leg's lowest listed value (cosine) or matched no term worth listing (lexical, 0).
    The best a leg listed is read among the memories still valid: an `ended` fact
    (current_first) is no yardstick for its replacement."""
    vector, cosines = _leg_scores(lists, VECTOR_LEG)
    lexical, bm25 = _leg_scores(lists, LEXICAL_LEG)
    hidden = sensitive_ids(lists)
    lowest = min(cosines.values(), default=0.0)
    best_cosine = max((v for i, v in cosines.items() if i not in ended), default=0.0)
    scale = lexical.score_scale if lexical is not None else None

    def share(memory_id: str) -> float:
        return min(max(bm25.get(memory_id, 0.0) / scale, 0.0), 1.0) if scale else 0.0

    best_share = max((share(i) for i in bm25 if i not in ended), default=0.0)
    found = []
    for place, hit in enumerate(hits, start=1):
        e = {"rank": math.log(place),
             "context": float(any(c.leg in (CONTEXT_NEXT, CONTEXT_PREV)
                                  for c in hit.contributions))}
        if (vector is not None and cosines
                and not (hit.memory_id in hidden and vector.blind_to_sensitive)):
            cosine = cosines.get(hit.memory_id, lowest)
            e["cosine"] = cosine - calibration.cosine_floor
            e["cosine_gap"] = cosine - best_cosine
        if scale:
            e["lexical"] = share(hit.memory_id)
            e["lexical_gap"] = e["lexical"] - best_share
        found.append(e)
    return found


def non_increasing(values: Sequence[float]) -> list[float]:
    """The least-squares non-increasing fit of `values` (pool adjacent violators): a run that
    rises is replaced by its mean, so the list's scores never rise down the ranking and their
    sum is kept."""
    blocks: list[list[float]] = []  # [sum, count]
    for v in values:
        blocks.append([v, 1.0])
        while len(blocks) > 1 and (blocks[-2][0] / blocks[-2][1]
                                   < blocks[-1][0] / blocks[-1][1]):
            total, count = blocks.pop()
            blocks[-1][0] += total
            blocks[-1][1] += count
    return [total / count for total, count in blocks for _ in range(int(count))]


def place_unseen(fused: Sequence[FusedCandidate], lists: Sequence[LegList],
                 calibration: ScoreCalibration | None) -> list[FusedCandidate]:
    """The ranker's list with each hit that an answering leg is blind to (a sensitive memory:
    the vector leg never sees one) placed by its relevance estimate instead of its rank: just
    above the first seen hit whose estimate (made non-increasing along the ranker's order) is
    below its own, its ranker score raised to just above that hit's, so later stages keep the
    place. The ranker scored the blind leg's silence as its worst (min-max) or as nothing; the
    estimate leaves the blind leg out (`evidence`), so the secret is placed on what the legs
    that see it saw. The others keep the ranker's order. Nothing moves without a calibration
    (no estimate)."""
    hidden = sensitive_ids(lists)
    blind = any(lst.blind_to_sensitive and lst.weight > 0 and lst.candidates for lst in lists)
    if calibration is None or not blind or not hidden.intersection(c.memory_id for c in fused):
        return list(fused)
    seen = [c for c in fused if c.memory_id not in hidden]
    unseen = [c for c in fused if c.memory_id in hidden]
    model = calibration.relevance
    seen_p = non_increasing([model.probability(e | {"rank": 0.0})
                             for e in evidence(seen, lists, calibration)])
    order = list(seen)
    for hit, e in zip(unseen, evidence(unseen, lists, calibration), strict=True):
        p = model.probability(e | {"rank": 0.0})
        at = next((i for i, q in enumerate(seen_p) if q < p), None)
        if at is None:
            order.append(hit)
            continue
        above = seen[at]
        raised = max(hit.score, math.nextafter(above.score, math.inf))
        order.insert(order.index(above), replace(hit, score=raised))
    return order


def ties_by_estimate(fused: Sequence[FusedCandidate], lists: Sequence[LegList],
                     calibration: ScoreCalibration | None) -> list[FusedCandidate]:
    """The ranker's list with each run of hits it scored exactly alike put in the order of
    their relevance estimates, best first, the rest unmoved. The ranker cannot tell them
    apart: min-max fusion gives each of two candidates that the legs order oppositely 1 + 0,
    and the memory id would decide. The estimate reads each hit's own evidence (`evidence`),
    its place left out so that it does not decide; equal estimates keep the ranker's order.
    Run on the ranker's list, before the stages that place hits on purpose (they keep this
    order among equals). Nothing moves without a calibration (no estimate). A leg the request
    weighted zero orders nothing, ties included: its evidence is left out as if it had not
    run. docs/decisions/0028-ties-by-the-estimate.md."""
    if calibration is None:
        return list(fused)
    lists = [lst for lst in lists if lst.weight > 0]
    order: list[FusedCandidate] = []
    for _, alike in itertools.groupby(fused, key=lambda c: c.score):
        run = list(alike)
        if len(run) > 1:
            estimates = [calibration.relevance.probability(e | {"rank": 0.0})
                         for e in evidence(run, lists, calibration)]
            run = [run[i] for i in sorted(range(len(run)), key=lambda i: -estimates[i])]
        order += run  # sorted() is stable: equal estimates keep the ranker's order
    return order


def relevance_scores(top: Sequence[FusedCandidate], lists: Sequence[LegList],
                     method: FusionMethod, calibration: ScoreCalibration | None,
                     sort_by: SortBy = "relevance",
                     ended: Collection[str] = frozenset()) -> list[FusedCandidate]:
    """`top` (in its final order) with each score the estimate that the hit is relevant, on
    one scale for every query and namespace: the calibration's relevance model of the hit's
    evidence, made non-increasing down a relevance ranking (non_increasing: the ranker orders,
    the estimate never contradicts it); the ranker's score stays in the hit's contributions
    (RANKER, what explain shows). Without a calibration: calibrated fusion's share (the
    fused score over the summed weights of the legs that answered, at most 1); any other
    method keeps its own score."""
    if calibration is not None:
        scores = [calibration.relevance.probability(e)
                  for e in evidence(top, lists, calibration, ended)]
        if sort_by == "relevance":
            scores = non_increasing(scores)
        return [replace(c, score=s, contributions=[*c.contributions,
                                                   Contribution(RANKER, place, c.score)])
                for place, (c, s) in enumerate(zip(top, scores, strict=True), start=1)]
    total = sum(lst.weight for lst in lists if lst.weight > 0)
    if method != "calibrated" or total <= 0:
        return list(top)
    return [replace(c, score=min(c.score / total, 1.0)) for c in top]


def above_floor(top: Sequence[FusedCandidate], min_score: float, absolute: bool = True,
                each_hit: bool = False) -> list[FusedCandidate]:
    """`top` held to `min_score` (every hit when it is 0, or when its scores are not
    `absolute`: scores_are_estimates): the whole of it when its best hit scores at least
    `min_score`, else nothing (Recall); with `each_hit`, the hits scoring at least it
    (Context)."""
    if min_score <= 0 or not absolute:
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
