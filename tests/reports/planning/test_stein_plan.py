"""Stein's two-stage seed plan: hand values, the budget's cap, and the whole procedure on simulated rows."""

import math

import pytest

from reports.planning.stein_plan import PlannedComparison, seeds_needed, seeds_per_row, simulate_planned_rejections


def t_quantile_df2(q: float) -> float:
    """t quantile with 2 degrees of freedom in closed form: F(t) = 1/2 + t / (2 sqrt(t^2 + 2))."""
    a = 2 * q - 1
    return a * math.sqrt(2 / (1 - a * a))


def test_seeds_needed_by_hand():
    # Pilot [0, 1, 2]: sd 1 on 2 df; N = ceil((t(0.975, 2) + t(0.8, 2))^2 / effect^2).
    factor = t_quantile_df2(0.975) + t_quantile_df2(0.8)
    assert seeds_needed([0.0, 1.0, 2.0], 1.0) == math.ceil(factor**2) == 29
    assert seeds_needed([0.0, 1.0, 2.0], 2.0) == math.ceil(factor**2 / 4)
    assert seeds_needed([0.0, 1.0, 2.0], 100.0) == 3  # never fewer than the pilot


def test_stricter_level_needs_more_seeds():
    assert seeds_needed([0.0, 1.0, 2.0], 1.0, level=0.005) > seeds_needed([0.0, 1.0, 2.0], 1.0)


def test_bad_pilots_and_effects_are_refused():
    with pytest.raises(ValueError, match="at least 2 seeds"):
        seeds_needed([0.3], 1.0)
    with pytest.raises(ValueError, match="positive"):
        seeds_needed([0.0, 1.0], -0.1)


def test_the_budget_caps_every_row_alike():
    plans = [
        PlannedComparison("b", "a", "m", 3, 1.0, 0.5, 10),
        PlannedComparison("c", "b", "m", 3, 1.0, 0.5, 6),
    ]
    seconds = {"a": 60.0, "b": 60.0, "c": 60.0}
    assert seeds_per_row(plans, 3, seconds, budget_seconds=10_000) == {"a": 10, "b": 10, "c": 6}
    # 20 min affords 20 runs of a minute: a cap of 7 costs 7 + 7 + 6 = 20.
    assert seeds_per_row(plans, 3, seconds, budget_seconds=1200) == {"a": 7, "b": 7, "c": 6}
    assert seeds_per_row(plans, 3, seconds, budget_seconds=60) == {"a": 3, "b": 3, "c": 3}


SIMULATIONS = 4000
LEVEL_BOUND = 0.05 + 3 * math.sqrt(0.05 * 0.95 / SIMULATIONS)


@pytest.mark.parametrize("pilot", [2, 3, 5])
def test_the_planned_procedure_keeps_its_level(pilot):
    assert simulate_planned_rejections(0.0, 0.5, pilot, SIMULATIONS, seed=pilot) <= LEVEL_BOUND


def test_a_budget_cap_costs_power_not_level():
    assert simulate_planned_rejections(0.0, 0.2, 3, SIMULATIONS, seed=7, max_seeds=4) <= LEVEL_BOUND


def test_the_planned_procedure_has_its_power_at_the_smallest_effect():
    # Planned for 80 % power at effect 0.8 sd; the t quantiles on the pilot's df make it a little more.
    assert simulate_planned_rejections(0.8, 0.8, 3, 2000, seed=3) >= 0.75
