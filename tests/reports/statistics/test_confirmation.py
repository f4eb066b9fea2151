"""A sweep's confirmation against the preset, checked by hand: the paired t at the comparison's share of the level,
its interval, the two one-sided tests at ±margin, and the four verdicts."""

import math

import pytest
from scipy import stats

from reports.statistics.confirmation import Verdict, confirm

PRESET = [0.70, 0.72, 0.74, 0.76]


def test_a_clear_gain_is_better_with_its_interval_at_the_comparisons_share():
    values = [0.73, 0.77, 0.78, 0.82]  # differences 0.03, 0.05, 0.04, 0.06
    confirmed = confirm(values, PRESET, family=3, level=0.05, margin=0.025)
    mean, sd = 0.045, math.sqrt((0.015**2 + 0.005**2 + 0.005**2 + 0.015**2) / 3)
    se = sd / 2
    share = 0.05 / 3
    assert confirmed.level == pytest.approx(share)
    assert confirmed.comparison.delta.mean == pytest.approx(mean)
    assert confirmed.comparison.p_value == pytest.approx(2 * stats.t.sf(mean / se, 3))  # 0.0061, below 0.0167
    half_width = stats.t.ppf(1 - share / 2, 3) * se
    assert confirmed.comparison.delta.ci_low == pytest.approx(mean - half_width)
    assert confirmed.comparison.delta.ci_high == pytest.approx(mean + half_width)
    assert confirmed.verdict is Verdict.BETTER
    assert confirm(values, PRESET, family=1, level=0.05, margin=0.025, maximize=False).verdict is Verdict.WORSE


def test_a_gain_the_family_cannot_afford_stays_undecided():
    values = [0.72, 0.76, 0.75, 0.80]  # differences 0.02, 0.04, 0.01, 0.04: mean 0.0275, sd 0.015
    p_value = confirm(values, PRESET, family=1, level=0.05, margin=0.025).comparison.p_value
    assert 0.05 / 12 < p_value < 0.05  # a direction for one comparison, not for one of twelve
    assert confirm(values, PRESET, family=1, level=0.05, margin=0.025).verdict is Verdict.BETTER
    assert confirm(values, PRESET, family=12, level=0.05, margin=0.025).verdict is Verdict.UNDECIDED


def test_no_change_within_the_margin_is_equivalent_and_a_loss_is_worse():
    values = [0.701, 0.719, 0.741, 0.759]  # differences 0.001, -0.001, 0.001, -0.001
    confirmed = confirm(values, PRESET, family=3, level=0.05, margin=0.025)
    se = math.sqrt(4 * 0.001**2 / 3) / 2
    expected = max(stats.t.sf((0.0 + 0.025) / se, 3), stats.t.cdf((0.0 - 0.025) / se, 3))
    assert confirmed.equivalence_p == pytest.approx(expected) and confirmed.verdict is Verdict.EQUIVALENT
    losing = [value - 0.05 for value in values]
    assert confirm(losing, PRESET, family=3, level=0.05, margin=0.025).verdict is Verdict.WORSE


def test_a_family_and_level_out_of_range_are_refused():
    with pytest.raises(ValueError, match="at least one comparison"):
        confirm(PRESET, PRESET, family=0, level=0.05, margin=0.025)
    with pytest.raises(ValueError, match="at least one comparison"):
        confirm(PRESET, PRESET, family=2, level=1.5, margin=0.025)
