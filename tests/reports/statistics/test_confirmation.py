"""A sweep's confirmation against the preset, checked by hand: the paired t statistic against critical values
calibrated over the envelope of seed shapes (never below the t distribution's), its interval, the two one-sided tests
at ±margin, and the four verdicts."""

import math

import pytest
from scipy import stats

from reports.statistics.confirmation import Verdict, confirm, critical_values
from reports.statistics.envelope import calibrated_bounds

PRESET = [0.70, 0.72, 0.74, 0.76, 0.71, 0.73, 0.75, 0.77]
CLEAR_GAIN = [0.03, 0.05, 0.04, 0.06, 0.03, 0.05, 0.04, 0.06]  # mean 0.045, sd 0.0120
NO_CHANGE = [0.001, -0.001] * 4  # mean 0, sd 0.00107


def shifted(steps):
    return [value + step for value, step in zip(PRESET, steps, strict=True)]


@pytest.mark.parametrize(("seeds", "family"), [(4, 1), (8, 3), (12, 3), (12, 12)])
def test_the_critical_values_are_the_envelopes_and_never_below_the_t_distributions(seeds, family):
    share = 0.05 / family
    direction, equivalence = critical_values(seeds, share)
    assert direction == calibrated_bounds((seeds,), (share / 2,), False)[0]
    assert equivalence == calibrated_bounds((seeds,), (share,), False)[0]
    assert direction >= stats.t.ppf(1 - share / 2, seeds - 1) and equivalence >= stats.t.ppf(1 - share, seeds - 1)
    assert direction > equivalence  # a direction spends half the share a side


def test_a_clear_gain_is_better_with_its_interval_from_the_calibrated_value():
    confirmed = confirm(shifted(CLEAR_GAIN), PRESET, family=3, level=0.05, margin=0.025)
    mean = 0.045
    sd = math.sqrt(sum((step - mean) ** 2 for step in CLEAR_GAIN) / 7)
    se = sd / math.sqrt(8)
    direction, _ = critical_values(8, 0.05 / 3)
    assert confirmed.level == pytest.approx(0.05 / 3) and confirmed.critical[0] == direction
    assert mean / se >= direction  # t = 10.6: better at a third of the level
    assert confirmed.comparison.delta.ci_low == pytest.approx(mean - direction * se)
    assert confirmed.comparison.delta.ci_high == pytest.approx(mean + direction * se)
    assert confirmed.verdict is Verdict.BETTER
    assert confirm(shifted(CLEAR_GAIN), PRESET, 3, 0.05, 0.025, maximize=False).verdict is Verdict.WORSE


def test_a_gain_the_calibrated_value_does_not_reach_stays_undecided():
    steps = [0.02, 0.04, 0.01, 0.04, 0.00, 0.03, 0.05, 0.01]  # mean 0.025, sd 0.0177: t = 4.0 on 7 df
    t = 0.025 / (math.sqrt(sum((step - 0.025) ** 2 for step in steps) / 7) / math.sqrt(8))
    assert (
        stats.t.ppf(1 - 0.05 / 6, 7) < t < critical_values(8, 0.05 / 3)[0]
    )  # past the t-test's value, not the envelope's
    assert confirm(shifted(steps), PRESET, family=3, level=0.05, margin=0.025).verdict is Verdict.UNDECIDED
    assert confirm(shifted(steps), PRESET, family=1, level=0.05, margin=0.025).verdict is Verdict.BETTER


def test_no_change_within_the_margin_is_equivalent_and_a_loss_is_worse():
    confirmed = confirm(shifted(NO_CHANGE), PRESET, family=3, level=0.05, margin=0.025)
    se = math.sqrt(8 * 0.001**2 / 7) / math.sqrt(8)
    _, equivalence = critical_values(8, 0.05 / 3)
    assert 0.025 / se >= equivalence and confirmed.verdict is Verdict.EQUIVALENT
    expected = max(stats.t.sf(0.025 / se, 7), stats.t.cdf(-0.025 / se, 7))
    assert confirmed.equivalence_p == pytest.approx(expected)
    losing = [-0.05 + step for step in NO_CHANGE]
    assert confirm(shifted(losing), PRESET, family=3, level=0.05, margin=0.025).verdict is Verdict.WORSE


def test_no_spread_decides_nothing_and_a_family_out_of_range_is_refused():
    assert confirm(shifted([0.03] * 8), PRESET, family=1, level=0.05, margin=0.025).verdict is Verdict.UNDECIDED
    with pytest.raises(ValueError, match="at least one comparison"):
        confirm(PRESET, PRESET, family=0, level=0.05, margin=0.025)
    with pytest.raises(ValueError, match="at least one comparison"):
        confirm(PRESET, PRESET, family=2, level=1.5, margin=0.025)
