"""The packing rules the Context curve compares (benchmarks/quality/context_curve.py)."""

from __future__ import annotations

from benchmarks.quality.context_curve import (
    RULES,
    TODAY,
    at_least,
    expected_irrelevant,
    mass,
    relative,
    top_n,
)

ESTIMATES = [0.9, 0.4, 0.2, 0.08, 0.05]  # non-increasing, as served; floor 0.075


def test_today_packs_every_hit_at_or_above_the_floor():
    assert RULES[TODAY](ESTIMATES) == 4
    assert at_least(0.3)(ESTIMATES) == 2
    assert RULES[TODAY]([]) == 0


def test_top_n_never_passes_the_floor():
    assert top_n(3)(ESTIMATES) == 3
    assert top_n(10)(ESTIMATES) == 4
    assert top_n(2)([0.05, 0.01]) == 0


def test_relative_to_the_first_hit():
    assert relative(0.25)(ESTIMATES) == 2  # 0.4 >= 0.225, 0.2 < 0.225
    assert relative(0.5)([0.1, 0.06]) == 1  # the floor still holds


def test_expected_irrelevant_stops_when_the_packed_waste_exceeds_the_limit():
    assert expected_irrelevant(0.5)(ESTIMATES) == 1  # 0.1, then 0.1 + 0.6
    assert expected_irrelevant(2.0)(ESTIMATES) == 3  # 0.1 + 0.6 + 0.8 = 1.5, then 2.42


def test_mass_keeps_the_fewest_hits_that_hold_the_share():
    total = 0.9 + 0.4 + 0.2 + 0.08
    assert mass(0.5)(ESTIMATES) == 1  # 0.9 >= 0.79
    assert mass(0.9)(ESTIMATES) == 3  # 1.3 < 1.422 <= 1.5
    assert mass(1.0)(ESTIMATES) == 4 and total > 0
    assert mass(0.9)([0.05]) == 0
