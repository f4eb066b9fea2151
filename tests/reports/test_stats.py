"""Seed-bootstrap estimates, comparisons, the direction rule and table formatting, against hand values."""

import numpy as np
import pytest
from scipy import stats

from reports.stats import (
    Comparison,
    Direction,
    Estimate,
    direction_agrees,
    format_comparison,
    format_estimate,
    format_probability,
    paired_comparison,
    seed_estimate,
)


def test_mean_is_exact_and_the_interval_contains_it():
    estimate = seed_estimate([0.40, 0.45, 0.47])
    assert estimate.mean == pytest.approx(0.44, abs=1e-15)
    assert estimate.ci_low <= estimate.mean <= estimate.ci_high
    assert 0.40 <= estimate.ci_low < estimate.ci_high <= 0.47
    assert (estimate.n, estimate.confidence) == (3, 0.95)


def test_two_runs_give_the_hand_computed_interval():
    # Resampled means of [0, 1] are 0, 0.5, 1 with chances 1/4, 1/2, 1/4: the 2.5th and 97.5th
    # percentiles sit inside the outer quarters.
    assert seed_estimate([0.0, 1.0]) == Estimate(0.5, 0.0, 1.0, 2, 0.95)


def test_interval_is_deterministic_for_a_seed():
    values = [0.31, 0.42, 0.38, 0.55]
    assert seed_estimate(values, seed=7) == seed_estimate(values, seed=7)


def test_lower_confidence_gives_a_narrower_interval():
    values = [0.31, 0.42, 0.38, 0.55]
    wide, narrow = seed_estimate(values, confidence=0.95), seed_estimate(values, confidence=0.5)
    assert wide.ci_low <= narrow.ci_low <= narrow.ci_high <= wide.ci_high
    assert narrow.confidence == 0.5


def test_one_run_is_a_degenerate_interval_at_the_point():
    assert seed_estimate([0.37]) == Estimate(0.37, 0.37, 0.37, 1, 0.95)


def test_equal_runs_give_a_zero_width_interval():
    estimate = seed_estimate([0.1, 0.1, 0.1])
    assert estimate.ci_low == estimate.mean == estimate.ci_high
    assert estimate.mean == pytest.approx(0.1)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ([], "empty"),
        ([0.5, float("nan"), 0.4], "non-finite"),
        ([0.5, float("inf")], "non-finite"),
        ([[0.5, 0.4]], "flat"),
    ],
)
def test_bad_values_are_refused(values, message):
    with pytest.raises(ValueError, match=message):
        seed_estimate(values)
    with pytest.raises(ValueError, match=message):
        paired_comparison([0.5, 0.6], values)


@pytest.mark.parametrize(("confidence", "resamples"), [(0.0, 100), (1.0, 100), (0.95, 0)])
def test_bad_settings_are_refused(confidence, resamples):
    with pytest.raises(ValueError):
        seed_estimate([0.1, 0.2], confidence=confidence, resamples=resamples)


def test_identical_rows_have_zero_delta_and_even_odds():
    comparison = paired_comparison([0.4, 0.5, 0.6], [0.4, 0.5, 0.6])
    assert comparison.delta == Estimate(0.0, 0.0, 0.0, 3, 0.95)
    assert comparison.p_improvement == 0.5
    assert comparison.paired and (comparison.n, comparison.n_reference) == (3, 3)


def test_a_row_beating_every_reference_run_has_probability_one():
    assert paired_comparison([0.7, 0.8, 0.9], [0.1, 0.2, 0.3]).p_improvement == 1.0
    assert paired_comparison([0.1, 0.2, 0.3], [0.7, 0.8, 0.9]).p_improvement == 0.0


def test_probability_of_improvement_by_hand():
    # x=1 beats 0; x=2 beats 0 and ties 2; x=3 beats 0 and 2: 4 wins, 1 tie over 9 pairs.
    assert paired_comparison([1, 2, 3], [0, 2, 4]).p_improvement == pytest.approx((4 + 0.5) / 9)
    # x=.5 beats .4, ties .5; x=.6 beats .4 and .5, ties .6; x=.7 beats all: 6 wins, 2 ties.
    assert paired_comparison([0.5, 0.6, 0.7], [0.4, 0.5, 0.6]).p_improvement == pytest.approx(7 / 9)


def test_probability_of_improvement_is_the_mann_whitney_u_over_nm():
    rng = np.random.default_rng(3)
    row, reference = rng.integers(0, 5, size=4) / 4, rng.integers(0, 5, size=6) / 4  # ties on purpose
    u = stats.mannwhitneyu(row, reference).statistic
    assert paired_comparison(row, reference).p_improvement == pytest.approx(u / (4 * 6))


def test_equal_lengths_bootstrap_the_per_seed_differences():
    row, reference = [0.50, 0.61, 0.58], [0.45, 0.52, 0.57]
    comparison = paired_comparison(row, reference, seed=4)
    assert comparison.paired
    assert comparison.delta == seed_estimate(np.subtract(row, reference), seed=4)
    assert comparison.delta.mean == pytest.approx(0.05)


def test_pairing_cancels_a_shared_seed_effect():
    # Each seed moves both rows together; the row is always exactly 0.02 better.
    comparison = paired_comparison([0.32, 0.52, 0.72], [0.30, 0.50, 0.70])
    assert comparison.delta.ci_low == pytest.approx(0.02) and comparison.delta.ci_high == pytest.approx(0.02)


def test_different_lengths_fall_back_to_an_unpaired_bootstrap():
    comparison = paired_comparison([0.32, 0.52, 0.72], [0.30, 0.70], seed=1)
    assert not comparison.paired and (comparison.n, comparison.n_reference) == (3, 2)
    assert comparison.delta.mean == pytest.approx(0.02)
    assert comparison.delta.ci_low < comparison.delta.mean < comparison.delta.ci_high
    assert comparison.delta == paired_comparison([0.32, 0.52, 0.72], [0.30, 0.70], seed=1).delta


def test_unpaired_with_a_single_reference_run_bootstraps_only_the_row():
    comparison = paired_comparison([0.0, 1.0], [0.25])
    # The reference is a constant, so the interval is the row's [0, 1] shifted by 0.25.
    assert comparison.delta == Estimate(0.25, -0.25, 0.75, 2, 0.95)
    assert not comparison.paired


def test_unpaired_with_constant_sides_is_degenerate():
    comparison = paired_comparison([0.6, 0.6, 0.6], [0.5, 0.5])
    assert comparison.delta.ci_low == comparison.delta.mean == comparison.delta.ci_high
    assert comparison.delta.mean == pytest.approx(0.1)
    assert comparison.p_improvement == 1.0


def _comparison(low: float, high: float, n: int = 3, n_reference: int = 3) -> Comparison:
    return Comparison(Estimate((low + high) / 2, low, high, n, 0.95), 0.5, n, n_reference, n == n_reference)


@pytest.mark.parametrize(
    ("low", "high", "paper_delta", "tolerance", "expected"),
    [
        (0.01, 0.05, 0.03, 0.0, Direction.AGREES),  # both up
        (-0.05, -0.01, -0.02, 0.0, Direction.AGREES),  # both down
        (-0.01, 0.02, 0.004, 0.005, Direction.AGREES),  # neither shows a change
        (-0.01, 0.02, 0.0, 0.0, Direction.AGREES),
        (0.01, 0.05, -0.03, 0.0, Direction.DISAGREES),  # opposite
        (-0.05, -0.01, 0.03, 0.0, Direction.DISAGREES),
        (0.01, 0.05, 0.004, 0.005, Direction.DISAGREES),  # we see a change the paper does not
        (-0.01, 0.02, 0.03, 0.0, Direction.INCONCLUSIVE),  # the paper sees a change our CI cannot resolve
        (0.0, 0.02, 0.03, 0.0, Direction.INCONCLUSIVE),  # a CI touching zero shows no direction
        (0.01, 0.05, None, 0.0, Direction.NO_PAPER_NUMBER),
    ],
)
def test_direction_rule(low, high, paper_delta, tolerance, expected):
    assert direction_agrees(_comparison(low, high), paper_delta, tolerance) == expected


@pytest.mark.parametrize(("n", "n_reference"), [(1, 1), (1, 3), (3, 1)])
def test_a_single_run_on_either_side_is_inconclusive(n, n_reference):
    assert direction_agrees(_comparison(0.01, 0.05, n, n_reference), 0.03) == Direction.INCONCLUSIVE


def test_direction_refuses_bad_numbers():
    with pytest.raises(ValueError, match="tolerance"):
        direction_agrees(_comparison(0.01, 0.05), 0.03, tolerance=-0.1)
    with pytest.raises(ValueError, match="paper_delta"):
        direction_agrees(_comparison(0.01, 0.05), float("nan"))


def test_direction_values_are_report_words():
    assert [str(d) for d in Direction] == ["agrees", "disagrees", "inconclusive", "no paper number"]


def test_format_estimate():
    assert format_estimate(Estimate(0.432, 0.401, 0.46, 3, 0.95)) == "43.2 [40.1, 46.0] (n=3)"
    assert format_estimate(Estimate(0.432, 0.401, 0.46, 3, 0.95), scale=1, digits=3) == "0.432 [0.401, 0.460] (n=3)"
    assert format_estimate(Estimate(0.5, 0.5, 0.5, 1, 0.95)) == "50.0 [50.0, 50.0] (n=1)"


def _delta(mean: float, low: float, high: float) -> Comparison:
    return Comparison(Estimate(mean, low, high, 3, 0.95), 0.5, 3, 3, True)


def test_format_comparison_signs():
    assert format_comparison(_delta(0.031, -0.005, 0.062)) == "+3.1 [\u22120.5, 6.2]"
    assert format_comparison(_delta(-0.031, -0.062, 0.005)) == "\u22123.1 [\u22126.2, 0.5]"
    # Values that round to zero lose their sign instead of printing "-0.0" or "+0.0".
    assert format_comparison(_delta(-0.0004, -0.0004, 0.0)) == "0.0 [0.0, 0.0]"


def test_format_probability():
    assert format_probability(5 / 6) == "0.83"
    assert format_probability(1.0) == "1.00"
    assert format_probability(7 / 9, digits=3) == "0.778"
