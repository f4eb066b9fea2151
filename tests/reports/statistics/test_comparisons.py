"""Student-t intervals, paired and Welch t, the distribution-free checks, family adjustment, detectable
effects and the direction rule: hand-computed values, then the procedures' rates on simulated nulls."""

import math

import numpy as np
import pytest
from scipy import stats

from reports.render.cells import format_comparison, format_estimate, format_p
from reports.statistics import null_simulation as sim
from reports.statistics.comparisons import (
    Comparison,
    Direction,
    Estimate,
    compare,
    detectable_effect,
    direction_agrees,
    paired_t,
    seed_estimate,
    stein_test,
    verdict_level,
    welch_t,
)
from reports.statistics.multiplicity import adjust

# t(0.975, 2) in closed form: with 2 df, P(|T| < t) = t / sqrt(t^2 + 2), set to 0.95.
T_975_DF2 = math.sqrt(2 * 0.95**2 / (1 - 0.95**2))


def test_row_interval_is_student_t_by_hand():
    # [1, 2, 3]: mean 2, sd 1, se 1/sqrt(3); half-width t(0.975, 2)/sqrt(3).
    estimate = seed_estimate([1.0, 2.0, 3.0])
    half = T_975_DF2 / math.sqrt(3)
    assert (estimate.mean, estimate.n, estimate.confidence) == (2.0, 3, 0.95)
    assert (estimate.ci_low, estimate.ci_high) == pytest.approx((2 - half, 2 + half), abs=1e-12)


def test_one_seed_has_no_interval_and_formats_without_one():
    estimate = seed_estimate([0.37])
    assert estimate == Estimate(0.37, None, None, 1, 0.95) and not estimate.has_interval
    assert format_estimate(estimate) == "37.0 (n=1)"


def test_equal_seeds_give_a_zero_width_interval():
    assert seed_estimate([0.5, 0.5, 0.5]) == Estimate(0.5, 0.5, 0.5, 3, 0.95)


def test_paired_t_by_hand():
    # differences [2, 3, 4]: mean 3, sd 1, t = 3*sqrt(3) on 2 df, whose two-sided p is 1 - t/sqrt(t^2 + 2).
    comparison = paired_t([3.0, 5.0, 7.0], [1.0, 2.0, 3.0])
    t = 3 * math.sqrt(3)
    assert comparison.method == "paired t" and comparison.paired
    assert comparison.delta.mean == 3.0 and comparison.df == 2.0
    assert comparison.se == pytest.approx(1 / math.sqrt(3))
    assert comparison.p_value == pytest.approx(1 - t / math.sqrt(t * t + 2), rel=1e-10)
    half = T_975_DF2 / math.sqrt(3)
    assert (comparison.delta.ci_low, comparison.delta.ci_high) == pytest.approx((3 - half, 3 + half))


def test_exact_sign_flip_at_three_seeds_can_never_pass_005():
    # All three differences positive: only all-plus and all-minus of the 8 sign flips are as extreme.
    comparison = paired_t([3.0, 5.0, 7.0], [1.0, 2.0, 3.0])
    assert comparison.exact_p == pytest.approx(2 / 8) and comparison.exact_p_floor == pytest.approx(0.25)


def test_welch_by_hand():
    # x = [1, 2, 3], y = [4, 5, 6, 7]: Δ = -3.5, se^2 = 1/3 + (5/3)/4 = 0.75,
    # df = 0.75^2 / ((1/3)^2/2 + (5/12)^2/3).
    comparison = welch_t([1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0])
    df = 0.75**2 / ((1 / 3) ** 2 / 2 + (5 / 12) ** 2 / 3)
    assert comparison.method == "Welch t" and not comparison.paired
    assert comparison.delta.mean == -3.5 and comparison.se == pytest.approx(math.sqrt(0.75))
    assert comparison.df == pytest.approx(df)
    assert comparison.p_value == pytest.approx(2 * stats.t.sf(3.5 / math.sqrt(0.75), df))
    # x holds the 3 smallest of 7 pooled runs: 1 of C(7, 3) = 35 labellings, doubled for two sides.
    assert comparison.exact_p == pytest.approx(2 / 35) and comparison.exact_p_floor == pytest.approx(2 / 35)


def test_compare_pairs_equal_seed_sets_and_uses_welch_otherwise():
    assert compare({0: 1.0, 1: 2.0, 2: 4.0}, {2: 1.0, 0: 0.0, 1: 0.5}).method == "paired t"
    assert compare({0: 1.0, 1: 2.0, 2: 4.0}, {0: 0.0, 1: 0.5, 3: 1.0}).method == "Welch t"
    # Seeds are matched by index, not by order: the pairs are (1, 0), (2, 0.5), (4, 1).
    assert compare({0: 1.0, 1: 2.0, 2: 4.0}, {2: 1.0, 0: 0.0, 1: 0.5}).delta.mean == pytest.approx(11 / 6)


def test_a_side_with_one_run_has_no_interval_and_no_p():
    for comparison in (paired_t([0.4], [0.3]), welch_t([0.4], [0.3, 0.35])):
        assert comparison.p_value is None and not comparison.delta.has_interval and comparison.se is None
        assert direction_agrees(comparison, 1.0, None) is Direction.INCONCLUSIVE


def test_identical_differences_have_no_p_value():
    comparison = paired_t([1.0, 2.0, 3.0], [0.0, 1.0, 2.0])
    assert comparison.p_value is None and comparison.delta.ci_low == comparison.delta.ci_high == 1.0


def test_holm_by_hand_with_missing_entries():
    # sorted 0.01, 0.03, 0.04, 0.5 times 4, 3, 2, 1 = 0.04, 0.09, 0.08, 0.5; running max 0.04, 0.09, 0.09, 0.5.
    assert adjust([0.01, None, 0.04, 0.03, 0.5]) == pytest.approx([0.04, None, 0.09, 0.09, 0.5])


def test_benjamini_hochberg_by_hand():
    # p_(i) m / i = 0.04, 0.06, 0.0533, 0.5; running min from the top: 0.04, 0.0533, 0.0533, 0.5.
    assert adjust([0.01, 0.04, 0.03, 0.5], "bh") == pytest.approx([0.04, 0.16 / 3, 0.16 / 3, 0.5])


def test_unknown_adjustment_names_the_choices():
    with pytest.raises(ValueError, match="holm, bh"):
        adjust([0.1], "bonferonni")


def test_detectable_effect_tends_to_the_normal_formula():
    # With many degrees of freedom the two-sided test detects with 80 % power at z(0.975) + z(0.8) standard errors.
    assert detectable_effect(1.0, 1e4) == pytest.approx(1.959964 + 0.841621, abs=2e-3)
    assert detectable_effect(2.0, 1e4) == pytest.approx(2 * detectable_effect(1.0, 1e4))


def test_detectable_effect_has_its_power_by_noncentral_t():
    se, df, level = 0.7, 4.0, 0.01
    effect = detectable_effect(se, df, level)
    critical = stats.t.ppf(1 - level / 2, df)
    power = stats.nct.sf(critical, df, effect / se) + stats.nct.cdf(-critical, df, effect / se)
    assert power == pytest.approx(0.8, abs=1e-8)
    assert verdict_level(10) == pytest.approx(0.005)


def _comparison(delta: float) -> Comparison:
    return paired_t([delta + 0.1, delta - 0.1, delta + 0.05], [0.0, 0.0, 0.0])


@pytest.mark.parametrize(
    ("delta", "paper", "adjusted", "expected"),
    [
        (0.3, 0.06, 0.01, Direction.AGREES),
        (-0.3, -0.06, 0.01, Direction.AGREES),
        (0.3, -0.06, 0.01, Direction.DISAGREES),
        (0.3, 0.0, 0.01, Direction.DISAGREES),
        (0.3, 0.06, 0.2, Direction.INCONCLUSIVE),
        (0.01, 0.0, 0.2, Direction.AGREES),
        (0.3, None, 0.01, Direction.NO_PAPER_NUMBER),
    ],
)
def test_direction_rule_reads_the_adjusted_p(delta, paper, adjusted, expected):
    assert direction_agrees(_comparison(delta), paper, adjusted) is expected


def test_delta_cells_sign_and_minus():
    assert format_comparison(paired_t([0.5, 0.6, 0.7], [0.4, 0.45, 0.5])).startswith("+15.0 [")
    assert format_comparison(paired_t([0.4], [0.5])) == "\u221210.0"
    assert (format_p(None), format_p(0.0004), format_p(0.0312)) == ("—", "<0.001", "0.031")


# Simulated nulls: the rates the README states, through the public functions. 4000 simulations give a
# Monte-Carlo standard error of about 0.0034 at a rate of 0.05.
SIMULATIONS = 4000
LEVEL_BOUND = 0.05 + 3 * math.sqrt(0.05 * 0.95 / SIMULATIONS)
COVERAGE_BOUND = 0.95 - 3 * math.sqrt(0.05 * 0.95 / SIMULATIONS)


@pytest.mark.parametrize("n", sim.SEED_COUNTS)
def test_paired_t_keeps_its_level_with_correlated_seeds(n):
    rows, references = sim.paired_draws(n, SIMULATIONS, seed=n)
    assert sim.rejection_rate(rows, references, sim.paired_t_p) <= LEVEL_BOUND


@pytest.mark.parametrize("n", sim.SEED_COUNTS)
def test_welch_keeps_its_level_with_unequal_seed_counts(n):
    rows, references = sim.unpaired_draws(n, n + 1, SIMULATIONS, seed=100 + n)
    assert sim.rejection_rate(rows, references, sim.welch_p) <= LEVEL_BOUND


@pytest.mark.parametrize("n", sim.SEED_COUNTS)
def test_row_interval_covers_the_true_mean(n):
    rows, _ = sim.unpaired_draws(n, 1, SIMULATIONS, seed=200 + n)
    assert sim.coverage(rows, sim.t_interval) >= COVERAGE_BOUND


def test_paired_t_has_power_for_a_two_sd_effect_at_five_seeds():
    # Correlation 0.5 makes the per-seed differences unit-sd, so effect 2 is two sd of the differences.
    rows, references = sim.paired_draws(5, SIMULATIONS, seed=5, effect=2.0)
    assert sim.rejection_rate(rows, references, sim.paired_t_p) >= 0.5


def test_the_old_bootstrap_fails_the_same_check():
    # The check can fail: the percentile bootstrap over 3 seeds calls a null direction far above 5 %.
    rows, references = sim.paired_draws(3, 1000, seed=3)
    assert sim.rejection_rate(rows, references, lambda r, b: sim.bootstrap_excludes_zero(r - b)) > 0.15


def test_holm_keeps_the_family_wise_rate_where_raw_p_values_do_not():
    rng = np.random.default_rng(11)
    family, n = 6, 3
    any_raw, any_holm = 0, 0
    for _ in range(2000):
        draws = rng.standard_normal((family, 2, n))
        raw = [paired_t(row, reference, distribution_free=False).p_value for row, reference in draws]
        any_raw += min(raw) <= 0.05
        any_holm += min(adjust(raw)) <= 0.05
    assert any_holm / 2000 <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 2000)
    assert any_raw / 2000 > 0.2  # six unadjusted tests at 0.05 call something about 26 % of the time


def test_stein_test_uses_the_pilot_sd_on_pilot_degrees_of_freedom():
    # Pilot [0, 1, 2] (sd 1), then two more: mean of all five 1.6, se 1/sqrt(5), 2 df.
    comparison = stein_test([0.0, 1.0, 2.0, 2.0, 3.0], pilot_seeds=3)
    assert comparison.delta.mean == pytest.approx(1.6) and comparison.df == 2.0
    assert comparison.se == pytest.approx(1 / math.sqrt(5))
    assert comparison.p_value == pytest.approx(2 * stats.t.sf(1.6 * math.sqrt(5), 2))
    assert comparison.exact_p is None and comparison.n == 5
