"""A recall's time plan (recallmesh/gateway/budget.py): examples and properties."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from recallmesh.gateway.budget import (
    DB_FLOOR_S,
    DB_GRACE_S,
    LATE_LEG_S,
    AfterLegsTimes,
    need_s,
    plan,
    time_left,
)
from recallmesh.gateway.fanout import MIN_LEG_TIMEOUT_S


def test_before_anything_is_measured_the_reserve_is_kept_for_the_work_after_the_legs() -> None:
    p = plan(0.8, 0.05)
    assert (p.answer_s, p.legs_s, p.hard_s) == pytest.approx((0.8, 0.75, 0.8 + DB_GRACE_S))


def test_measured_work_after_the_legs_ends_the_legs_earlier() -> None:
    assert plan(0.8, 0.05, after_legs_s=0.12).legs_s == pytest.approx(0.68)
    assert plan(0.8, 0.05, after_legs_s=0.01).legs_s == pytest.approx(0.75)  # the reserve
    assert plan(0.8, 0.05, after_legs_s=2.0).legs_s == pytest.approx(0.4)  # half at least


def test_a_near_caller_deadline_shortens_everything_and_is_the_hard_end() -> None:
    p = plan(0.8, 0.05, after_legs_s=0.1, client_remaining_s=0.5)
    assert (p.answer_s, p.legs_s, p.hard_s) == pytest.approx((0.45, 0.35, 0.45))
    assert p.by_caller
    far = plan(0.3, 0.05, client_remaining_s=10.0)
    assert far.hard_s == pytest.approx(0.3 + DB_GRACE_S) and not far.by_caller
    mid = plan(0.8, 0.05, client_remaining_s=1.05)  # bench-overload's recall deadline
    assert (mid.answer_s, mid.hard_s) == pytest.approx((0.8, 1.0)) and mid.by_caller


def test_a_call_needs_the_answers_way_back_the_work_after_the_legs_and_some_leg_time() -> None:
    assert need_s(0.8, 0.05) == pytest.approx(0.05 + 0.05 + LATE_LEG_S)
    assert need_s(0.8, 0.05, 0.2) == pytest.approx(0.05 + 0.2 + LATE_LEG_S)
    assert need_s(0.8, 0.05, 5.0) == pytest.approx(0.05 + 0.4 + LATE_LEG_S)  # half at most


def test_the_reads_get_at_least_the_floor() -> None:
    p = plan(0.3, 0.05)
    assert time_left(p, 0.2) == pytest.approx(0.3 + DB_GRACE_S - 0.2)
    assert time_left(p, 5.0) == DB_FLOOR_S


seconds = st.floats(min_value=0.0, max_value=20.0, allow_nan=False)


@given(budget=st.floats(min_value=0.01, max_value=10.0), reserve=st.floats(0.0, 0.5),
       after=st.none() | seconds, client=st.none() | seconds)
def test_the_plan_is_ordered_and_honours_the_caller(budget: float, reserve: float,
                                                    after: float | None,
                                                    client: float | None) -> None:
    p = plan(budget, reserve, after, client)
    assert MIN_LEG_TIMEOUT_S <= p.legs_s <= p.answer_s <= p.hard_s
    assert p.answer_s <= budget or p.answer_s == MIN_LEG_TIMEOUT_S
    assert p.hard_s <= budget + DB_GRACE_S + 1e-9
    if client is not None and client - reserve >= MIN_LEG_TIMEOUT_S:
        assert p.hard_s <= client - reserve + 1e-9  # never answered after the caller left
    # the legs keep half the answer's time, and give up at least the reserve when they can
    assert p.legs_s >= p.answer_s / 2 - 1e-9
    assert p.after_s >= min(reserve, p.answer_s / 2) - 1e-9 or p.legs_s == MIN_LEG_TIMEOUT_S


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_after_legs_times_is_the_p99_of_the_recent_window() -> None:
    clock = Clock()
    times = AfterLegsTimes(window=200, max_age_s=60.0, clock=clock)
    assert times.quantile() is None
    times.observe(0.03)
    assert times.quantile() == 0.03  # one sample: itself
    for i in range(200):
        times.observe(0.001 * (i + 1))  # 1..200 ms; the 0.03 falls out of the window
    assert times.quantile() == pytest.approx(0.198)  # nearest rank: the 198th of 200
    times.observe(5.0)  # one spike among 200 is above the 99th percentile
    assert times.quantile() == pytest.approx(0.199)


def test_old_samples_expire() -> None:
    clock = Clock()
    times = AfterLegsTimes(window=10, max_age_s=60.0, clock=clock)
    times.observe(0.5)
    clock.now = 30.0
    times.observe(0.1)
    assert times.quantile() == 0.5
    clock.now = 61.0
    assert times.quantile() == 0.1
    clock.now = 91.0
    assert times.quantile() is None
