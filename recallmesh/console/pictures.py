"""The console's one picture of a namespace: how many memories were written each week, the
last WEEKS weeks, drawn as server-side SVG (no script, nothing inline that the
Content-Security-Policy forbids: attributes and classes only)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

WEEKS = 12
WIDTH, HEIGHT = 480, 90  # the drawing's size in px; each week one bar
LABEL_H = 14  # room under the bars for the weeks' dates


@dataclass(frozen=True)
class Week:
    start: datetime  # a Monday, 00:00 UTC
    end: datetime  # the next Monday (exclusive), or now for the week in progress
    count: int = 0


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    label: str  # the week's first day, e.g. "03-02"
    title: str  # what hovering says, e.g. "week of 2026-03-02: 4 memories"


def weeks(now: datetime, n: int = WEEKS) -> list[Week]:
    """The last `n` calendar weeks (Monday to Monday, UTC), the one in progress last."""
    now = now.astimezone(UTC)
    monday = (now - timedelta(days=now.weekday())).replace(hour=0, minute=0, second=0,
                                                           microsecond=0)
    starts = [monday - timedelta(weeks=i) for i in range(n - 1, -1, -1)]
    return [Week(s, min(s + timedelta(weeks=1), now)) for s in starts]


def bars(counted: list[Week]) -> list[Bar]:
    """One bar per week, heights relative to the busiest week (an empty namespace: none)."""
    top = max((w.count for w in counted), default=0)
    if top == 0:
        return []
    slot = WIDTH / len(counted)
    room = HEIGHT - LABEL_H
    out = []
    for i, w in enumerate(counted):
        height = room * w.count / top
        noun = "memory" if w.count == 1 else "memories"
        out.append(Bar(x=round(i * slot + 2, 1), y=round(room - height, 1),
                       width=round(slot - 4, 1), height=round(height, 1),
                       label=w.start.strftime("%m-%d"),
                       title=f"week of {w.start:%Y-%m-%d}: {w.count} {noun}"))
    return out
