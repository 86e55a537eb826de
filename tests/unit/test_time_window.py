"""Time windows: relative times in a query ("last Saturday", "two weeks ago") read against the
request's reference time, and the boost for memories created inside the window: the parser
and the boost as plain code, then through the real gateway and Postgres."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from google.protobuf.timestamp_pb2 import Timestamp
from hypothesis import given
from hypothesis import strategies as st

from recallmesh.gateway.time_window import TIME_WINDOW_LEG, TimeWindow, boost, resolve
from recallmesh.wire.fusion import Contribution, FusedCandidate

REF = datetime(2023, 3, 9, 15, 47, tzinfo=UTC)  # a Thursday


def day(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


@pytest.mark.parametrize("query, phrase, start, end", [
    ("I received a piece of jewelry last Saturday from whom?", "last saturday",
     "2023-03-03T00:00", "2023-03-06T00:00"),
    ("Who did I meet for lunch last Thursday?", "last thursday",  # a week back, not today
     "2023-03-01T00:00", "2023-03-04T00:00"),
    ("Which book did I finish a week ago?", "a week ago",
     "2023-03-01T03:47", "2023-03-04T03:47"),
    ("What did I cook a couple of days ago?", "a couple of days ago",
     "2023-03-06T03:47", "2023-03-09T03:47"),
    ("What did I buy 10 days ago?", "10 days ago", "2023-02-25T15:47", "2023-03-01T15:47"),
    ("How many pieces have I written since I started again three weeks ago?",
     "three weeks ago", "2023-02-12T10:59", "2023-03-09T15:47"),
    ("How many plants did I acquire in the last month?", "in the last month",
     "2023-02-03T04:10:02.400000", "2023-03-09T15:47"),
    ("How many times did I bake in the past two weeks?", "in the past two weeks",
     "2023-02-21T06:11", "2023-03-09T15:47"),
    ("What did I say yesterday?", "yesterday", "2023-03-07T15:47", "2023-03-09T15:47"),
    ("Where did I go last weekend?", "last weekend", "2023-02-23T15:47", "2023-03-09T15:47"),
])
def test_relative_times_resolve_against_the_reference(query: str, phrase: str, start: str,
                                                      end: str) -> None:
    window = resolve(query, REF)
    assert window == TimeWindow(day(start), day(end), phrase)


@pytest.mark.parametrize("query", [
    "What kind of art does Caroline make?", "When did Melanie paint a sunrise?",
    "the weekend plans", "9999 years ago",  # beyond year 1: no window rather than an error
])
def test_no_window_without_a_relative_time(query: str) -> None:
    assert resolve(query, REF) is None


@given(st.text(max_size=200), st.datetimes(min_value=datetime(1, 1, 1),
                                            max_value=datetime(9999, 12, 31)))
def test_resolve_never_fails_and_never_reaches_past_the_reference(text: str,
                                                                  when: datetime) -> None:
    reference = when.replace(tzinfo=UTC)
    for query in (text, text + " 3 weeks ago", "since " + text + " two months ago",
                  text + " last sunday", "in the past 12 years " + text):
        window = resolve(query, reference)
        if window is not None:
            assert window.start <= window.end <= reference + timedelta(hours=12)
            assert window.phrase and window.phrase in " ".join(query.lower().split())


def fused(*ids: str) -> list[FusedCandidate]:
    return [FusedCandidate(i, score, contributions=[Contribution("lexical", n, score)])
            for n, (i, score) in enumerate(zip(ids, (0.9, 0.6, 0.5, 0.1), strict=False),
                                           start=1)]


def test_boost_raises_what_was_created_inside_and_says_so() -> None:
    window = TimeWindow(day("2023-03-03T00:00"), day("2023-03-06T00:00"), "last saturday")
    created = {"a": day("2023-02-01T10:00"), "b": day("2023-03-04T18:00"),
               "c": day("2023-03-05T09:00")}  # "d": no known creation time
    ranked, raised = boost(fused("a", "b", "c", "d"), created, window, 1.0)
    assert raised == 2
    assert [(c.memory_id, round(c.score, 6)) for c in ranked] == [
        ("b", 1.2), ("c", 1.0), ("a", 0.9), ("d", 0.1)]
    assert ranked[0].contributions[-1] == Contribution(
        TIME_WINDOW_LEG, 2, pytest.approx(0.6))  # type: ignore[arg-type]  # approx equals 0.6
    assert [c.leg for c in ranked[2].contributions] == ["lexical"]


def test_boost_off_or_outside_keeps_the_fused_order() -> None:
    window = TimeWindow(day("2020-01-01T00:00"), day("2020-01-02T00:00"), "x")
    created = {"a": day("2023-02-01T10:00"), "b": day("2023-03-04T18:00")}
    before = fused("a", "b")
    assert boost(before, created, window, 0.0) == (before, 0)
    assert boost(before, created, window, 5.0) == (before, 0)


# Through the gateway: a concert told of in a weaker wording, stored on the Saturday before
# the question, against a better worded one from a month earlier.
SATURDAY = day("2025-03-01T18:00")


def stamp(value: datetime) -> Timestamp:
    ts = Timestamp()
    ts.FromDatetime(value)
    return ts


