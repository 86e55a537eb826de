"""A recall's time plan: when the legs must be done, when the answer is due, and when the
reads after the legs give up. Pure: no gRPC, no database.

The work after the fan-out (fusion, the time-window lookup, hydration, context propagation)
is part of the plan, not what the legs leave over. Its recent duration is measured in this
process (AfterLegsTimes: the 99th percentile of the last recalls, which under load includes
the event loop's own lag) and the legs end that long before the answer is due, and never
earlier than RECALLMESH_RECALL_RESERVE_MS before it:

    answer_s = min(budget, caller's time left - reserve)             the target
    after_s  = min(max(reserve, p99 of the work after the legs), answer_s x 1/2)
    legs_s   = max(answer_s - after_s, MIN_LEG_TIMEOUT_S)            the fan-out ends
    hard_s   = min(answer_s + DB_GRACE_S, caller's time left - reserve), at least answer_s

A leg that is late is cut at legs_s and costs only its own candidates. The reads after the
legs run to hard_s when they must: past the budget rather than fail a recall whose legs
answered. A read that is not done by then means the database is not answering (down, or far
too slow), and only then does the recall fail UNAVAILABLE. With the caller's deadline closer
than the budget, hard_s is where the answer must leave to arrive in time; no later read helps:
then the recall fails DEADLINE_EXCEEDED (`by_caller`), the caller's deadline, not the database.

A call that arrives with less time left than a recall needs (need_s: the answer's way back, the
work after the legs as planned, LATE_LEG_S for the legs) is refused at once as load: under
overload a call can wait in the server so long that nothing useful fits in what is left.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from recallmesh.gateway.fanout import MIN_LEG_TIMEOUT_S

# How far past the answer's due time the reads after the legs may run, when the caller's
# deadline allows, before the database counts as not answering (UNAVAILABLE).
DB_GRACE_S = 1.0
# The least time the reads after the legs get, even when the plan has none left: a recall
# whose caller's deadline has (almost) passed still tries once, briefly.
DB_FLOOR_S = 0.025
# The share of the answer's time the legs always keep, however slow the work after them is.
LEGS_SHARE_MIN = 0.5
# The least time worth giving the legs: a call that would leave them less is refused as late.
LATE_LEG_S = 0.025
# The measured work after the legs: the last WINDOW recalls, none older than MAX_AGE_S (an
# old spike does not shorten the legs of a quiet service for long).
WINDOW = 256
MAX_AGE_S = 60.0
QUANTILE = 0.99


@dataclass(frozen=True)
class RecallPlan:
    """Seconds from the recall's start."""

    answer_s: float  # the answer is due: the budget, or earlier for a near caller deadline
    legs_s: float  # the fan-out (legs, query embedding, graph second stage) ends
    hard_s: float  # the reads after the legs end at the latest; then the recall fails
    by_caller: bool = False  # hard_s is the caller's deadline (less the reserve)

    @property
    def after_s(self) -> float:
        """The time planned for the work after the legs."""
        return self.answer_s - self.legs_s


def plan(budget_s: float, reserve_s: float, after_legs_s: float | None = None,
         client_remaining_s: float | None = None) -> RecallPlan:
    """The plan of a recall with `budget_s`, the deployment's reserve, the measured time of
    the work after the legs (None: not measured yet, the reserve stands in) and the caller's
    time left (None: no deadline)."""
    answer_s = budget_s
    hard_s = budget_s + DB_GRACE_S
    by_caller = False
    if client_remaining_s is not None:
        answer_s = min(answer_s, client_remaining_s - reserve_s)
        by_caller = client_remaining_s - reserve_s < hard_s
        hard_s = min(hard_s, client_remaining_s - reserve_s)
    answer_s = max(answer_s, MIN_LEG_TIMEOUT_S)
    after_s = planned_after_s(answer_s, reserve_s, after_legs_s)
    legs_s = max(answer_s - after_s, MIN_LEG_TIMEOUT_S)
    return RecallPlan(answer_s=answer_s, legs_s=legs_s, hard_s=max(hard_s, answer_s),
                      by_caller=by_caller)


def need_s(budget_s: float, reserve_s: float, after_legs_s: float | None = None) -> float:
    """The least of its deadline a call must have left when it starts: the answer's way back
    (the reserve), the work after the legs as planned (at least the reserve, at most half the
    budget) and LATE_LEG_S for the legs."""
    return reserve_s + planned_after_s(budget_s, reserve_s, after_legs_s) + LATE_LEG_S


def planned_after_s(time_s: float, reserve_s: float, after_legs_s: float | None) -> float:
    """The time kept for the work after the legs out of `time_s`: what it has recently taken
    (None: not measured yet), at least the reserve, at most what the legs can spare."""
    return min(max(reserve_s, after_legs_s or 0.0), time_s * (1 - LEGS_SHARE_MIN))


def time_left(plan_: RecallPlan, elapsed_s: float) -> float:
    """What the reads after the legs may still take: to hard_s, at least DB_FLOOR_S."""
    return max(plan_.hard_s - elapsed_s, DB_FLOOR_S)


class AfterLegsTimes:
    """The recent durations of the work after the legs, and their 99th percentile (nearest
    rank: with fewer than 100 samples, their maximum). Not thread-safe: one event loop."""

    def __init__(self, window: int = WINDOW, max_age_s: float = MAX_AGE_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._samples: deque[tuple[float, float]] = deque(maxlen=window)
        self._max_age_s = max_age_s
        self._clock = clock
        self._cached: float | None = None
        self._dirty = False

    def observe(self, seconds: float) -> None:
        self._samples.append((self._clock(), seconds))
        self._dirty = True

    def _expire(self) -> None:
        oldest = self._clock() - self._max_age_s
        while self._samples and self._samples[0][0] < oldest:
            self._samples.popleft()
            self._dirty = True

    def quantile(self) -> float | None:
        """The 99th percentile of the recent samples (None: none recent)."""
        self._expire()
        if self._dirty:
            values = sorted(s for _, s in self._samples)
            self._cached = (values[max(math.ceil(QUANTILE * len(values)) - 1, 0)]
                            if values else None)
            self._dirty = False
        return self._cached
