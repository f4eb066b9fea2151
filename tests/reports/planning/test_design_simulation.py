"""The designs simulated end to end with seed noise shaped like the measured: level and power."""

import math

import pytest

from algos.campaign.ablations import read_spec
from reports.planning.design_simulation import noise_shape, shifts_for, simulate

SIMULATIONS = 800


def test_the_simulated_noise_has_the_declared_shape():
    spec = read_spec("vapo_table1")
    sds = list(noise_shape(spec).values())
    assert sds[-1] / sds[0] == pytest.approx(10.0)
    shifts = shifts_for(spec, alternative=True)
    assert shifts["vapo"] == 0.0 and shifts["no_clip_higher"] == pytest.approx(-0.05)  # down by 5 points
    dapo = read_spec("dapo_table1")
    assert shifts_for(dapo, True)["dynamic_sampling"] == pytest.approx(0.25)  # five steps up the ladder


@pytest.mark.parametrize("design", ["fixed", "stein"])
@pytest.mark.slow
def test_each_design_keeps_its_level_and_reaches_its_power(design):
    spec = read_spec("vapo_table1")
    rates = simulate(spec, design, SIMULATIONS, seed=3)
    level_bound = 0.05 + 3 * math.sqrt(0.05 * 0.95 / SIMULATIONS)
    assert rates.false_positive <= level_bound
    assert rates.power >= 0.8 - 3 * rates.power_se
    assert rates.mean_seeds > 3
