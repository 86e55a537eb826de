"""The time a recall query refers to ("last Saturday", "two weeks ago", "in the past month"),
resolved against the request's reference time, and the boost for memories created inside it.

Deterministic English rules, no model. A query names at most one window: the first rule that
matches wins, in this order:

- "<n> days|weeks|months|years ago" (n a number, "a", "a couple of", "a few", "one".."twelve"):
  centred on reference - n units, +-max(1.5 days, 20% of the span); "since <n> ... ago" reaches
  from there up to the reference time;
- "in|during|over|within the last|past [n] days|weeks|months|years", "the past week|month|...":
  the last n units (+10% and a day), up to the reference time;
- "last Monday".."last Sunday": that day (the most recent one strictly before the reference
  day), +-1.5 days;
- "yesterday", "the day before yesterday": that day, +-1 day;
- "last|this week|weekend|month|year": the two units (one for "this") before the reference time.

Windows are generous on purpose: a memory is often stored a day or two after what it tells of,
and "a month ago" is not a date. Inside the window a memory's fused score is multiplied by
(1 + strength); nothing is filtered out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from recallmesh.wire.fusion import Contribution, FusedCandidate

TIME_WINDOW_LEG = "time_window"  # the pseudo-leg named in explain for the boost

_DAY = timedelta(days=1)
_UNIT_DAYS = {"day": 1.0, "week": 7.0, "weekend": 7.0, "month": 30.44, "year": 365.25}
_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
    "a couple of": 2, "couple of": 2, "a few": 3, "few": 3,
}
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_NUMBER = r"(\d{1,4}|a couple of|couple of|a few|few|an?|one|two|three|four|five|six|seven|" \
          r"eight|nine|ten|eleven|twelve)"
_AGO = re.compile(rf"\b{_NUMBER} (day|week|month|year)s? ago\b")
_SINCE = re.compile(r"\bsince\b[^,.;?!]*$")
_PAST_N = re.compile(rf"\b(?:in|during|over|within) the (?:last|past) (?:{_NUMBER} )?"
                     r"(day|week|month|year)s?\b")
_PAST_ONE = re.compile(r"\bthe past (day|week|month|year)\b")
_LAST_WEEKDAY = re.compile(rf"\blast ({'|'.join(_WEEKDAYS)})\b")
_YESTERDAY = re.compile(r"\b(the day before )?yesterday\b")
_LAST_UNIT = re.compile(r"\b(last|this) (week|weekend|month|year)\b")


@dataclass(frozen=True)
class TimeWindow:
    start: datetime
    end: datetime
    phrase: str  # the words of the query it was read from

    def holds(self, when: datetime) -> bool:
        return self.start <= when <= self.end


def _count(word: str) -> float:
    return float(word) if word.isdigit() else float(_WORDS[word])


def resolve(query: str, reference: datetime) -> TimeWindow | None:
    """The window the query names, relative to `reference` (timezone-aware), or None."""
    text = " ".join(query.lower().split())
    try:
        return _resolve(text, reference)
    except OverflowError:  # a reference near year 1 or 9999: no window rather than an error
        return None


def _window(start: datetime, end: datetime, phrase: str, reference: datetime) -> TimeWindow:
    return TimeWindow(start, min(end, reference + _DAY / 2), phrase)


def _resolve(text: str, reference: datetime) -> TimeWindow | None:
    if m := _AGO.search(text):
        span = _count(m.group(1)) * _UNIT_DAYS[m.group(2)]
        centre = reference - span * _DAY
        slack = max(1.5, 0.2 * span) * _DAY
        if _SINCE.search(text[: m.start()]):
            return _window(centre - slack, reference, text[m.start():m.end()], reference)
        return _window(centre - slack, centre + slack, m.group(0), reference)
    if m := _PAST_N.search(text) or _PAST_ONE.search(text):
        groups = m.groups()
        count, unit = (groups[0], groups[1]) if len(groups) == 2 else (None, groups[0])
        span = (1.0 if count is None else _count(count)) * _UNIT_DAYS[unit]
        return _window(reference - (1.1 * span + 1) * _DAY, reference, m.group(0), reference)
    if m := _LAST_WEEKDAY.search(text):
        back = (reference.weekday() - _WEEKDAYS.index(m.group(1))) % 7 or 7
        day = reference.replace(hour=12, minute=0, second=0, microsecond=0) - back * _DAY
        return _window(day - 1.5 * _DAY, day + 1.5 * _DAY, m.group(0), reference)
    if m := _YESTERDAY.search(text):
        day = reference - (2 if m.group(1) else 1) * _DAY
        return _window(day - _DAY, day + _DAY, m.group(0), reference)
    if m := _LAST_UNIT.search(text):
        units = 2 if m.group(1) == "last" else 1
        return _window(reference - units * _UNIT_DAYS[m.group(2)] * _DAY, reference,
                       m.group(0), reference)
    return None


def boost(
    fused: list[FusedCandidate], created: dict[str, datetime], window: TimeWindow,
    strength: float,
) -> tuple[list[FusedCandidate], int]:
    """`fused` with the score of every candidate created inside `window` multiplied by
    (1 + strength), ranked again (ties: the earlier fused position), and how many were
    raised. A raised candidate carries a `time_window` contribution: its fused rank before
    the boost and the score it gained. Candidates without a known creation time are kept
    as they are."""
    if strength <= 0:
        return list(fused), 0
    raised = 0
    out: list[tuple[FusedCandidate, int]] = []
    for rank, c in enumerate(fused, start=1):
        when = created.get(c.memory_id)
        if when is not None and window.holds(when):
            gained = c.score * strength
            c = replace(c, score=c.score + gained,
                        contributions=[*c.contributions,
                                       Contribution(TIME_WINDOW_LEG, rank, gained)])
            raised += 1
        out.append((c, rank))
    out.sort(key=lambda pair: (-pair[0].score, pair[1]))
    return [c for c, _ in out], raised
