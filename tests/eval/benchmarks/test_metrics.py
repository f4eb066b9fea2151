"""pass@k, avg@k and maj@k against hand-computed values and the closed form."""

from math import comb

import numpy as np
import pytest
from scipy.stats import binomtest

from eval.benchmarks.metrics import (
    avg_at_k,
    interval_over_problems,
    maj_at_k,
    majority_vote,
    mean_pass_at_k,
    pass_at_k,
)


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (5, 2, 1, 0.4),
        (5, 2, 2, 1 - comb(3, 2) / comb(5, 2)),  # 0.7
        (5, 0, 3, 0.0),
        (5, 3, 3, 1.0),  # n - c = 2 < k: every 3-subset holds a correct sample
        (5, 5, 1, 1.0),
        (1, 1, 1, 1.0),
        (1, 0, 1, 0.0),
    ],
)
def test_pass_at_k_hand_cases(n, c, k, expected):
    assert pass_at_k(n, c, k) == pytest.approx(expected)


def test_pass_at_k_matches_the_closed_form_everywhere():
    for n in range(1, 13):
        for c in range(n + 1):
            for k in range(1, n + 1):
                assert pass_at_k(n, c, k) == pytest.approx(1 - comb(n - c, k) / comb(n, k)), (n, c, k)


def test_pass_at_k_stays_finite_for_large_n():
    value = pass_at_k(2000, 3, 1000)
    assert value == pytest.approx(1 - comb(1997, 1000) / comb(2000, 1000)) and 0 < value < 1


@pytest.mark.parametrize(("n", "c", "k"), [(5, 6, 1), (5, -1, 1), (5, 2, 0), (5, 2, 6)])
def test_pass_at_k_rejects_impossible_counts(n, c, k):
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)


def test_mean_pass_at_k_averages_over_problems():
    correct = [[True, False, False, True], [False, False, False, False], [True, True, True, True]]
    assert mean_pass_at_k(correct, 1) == pytest.approx((0.5 + 0 + 1) / 3)
    assert mean_pass_at_k(correct, 2) == pytest.approx(((1 - comb(2, 2) / comb(4, 2)) + 0 + 1) / 3)
    with pytest.raises(ValueError, match="at least k samples"):
        mean_pass_at_k(correct, 5)


def test_avg_at_k_is_the_mean_of_per_problem_accuracies():
    correct = [[True, False, False, False], [True, True, False, False], [False] * 4]
    assert avg_at_k(correct) == pytest.approx((1 / 4 + 2 / 4 + 0) / 3)
    assert avg_at_k(correct) == pytest.approx(mean_pass_at_k(correct, 1))
    with pytest.raises(ValueError):
        avg_at_k([])


@pytest.mark.parametrize(
    ("answers", "chosen"),
    [
        (["3", "4", "3"], 0),
        (["4", "3", "3"], 1),
        (["4", "3", "3", "4"], 0),  # tie: the answer that appears first wins
        (["3", "4", "4", "3"], 0),
        ([None, None, "5"], 2),  # no answer does not vote
        ([None, "2", None, "7", "7"], 3),
        ([None, None], None),
    ],
)
def test_majority_vote(answers, chosen):
    assert majority_vote(answers) == chosen


def test_maj_at_k_hand_cases():
    answers = [["3", "4", "3", None], ["5", "6", "6", "5"], [None, None, None, None], ["1", "2", "2", "2"]]
    correct = [[True, False, True, False], [False, True, True, False], [False] * 4, [True, False, False, False]]
    # majorities: "3" (right), tie "5"/"6" -> "5" (wrong), none (wrong), "2" (wrong)
    assert maj_at_k(answers, correct) == pytest.approx(1 / 4)
    with pytest.raises(ValueError, match="same shape"):
        maj_at_k(answers[:3], correct)


@pytest.mark.parametrize(("successes", "n"), [(0, 10), (1, 10), (7, 20), (50, 100), (100, 100)])
def test_the_interval_of_verdicts_is_scipys_wilson_interval(successes, n):
    expected = binomtest(successes, n).proportion_ci(0.95, method="wilson")
    low, high = interval_over_problems([1.0] * successes + [0.0] * (n - successes))
    assert low == pytest.approx(expected.low, abs=1e-12) and high == pytest.approx(expected.high, abs=1e-12)


@pytest.mark.parametrize(
    ("problems", "samples", "difficulty"),
    [(100, 1, (0.5, 4.0)), (100, 4, (0.5, 4.0)), (30, 4, (2, 2)), (500, 4, (0.5, 20)), (50, 32, (0.5, 4.0))],
)
def test_the_interval_covers_the_benchmark_score_at_its_stated_rate(problems, samples, difficulty):
    """Simulated benchmarks: each problem's chance of being solved drawn from a Beta (most problems hard, as
    for a small model), k samples per problem; the target is the population mean, E[Beta]."""
    rng = np.random.default_rng(0)
    a, b = difficulty
    truth, covered, trials = a / (a + b), 0, 2000
    for _ in range(trials):
        chances = rng.beta(a, b, problems)
        rates = rng.binomial(samples, chances) / samples
        low, high = interval_over_problems(rates.tolist())
        covered += low <= truth <= high
    assert 0.92 <= covered / trials <= 0.975


def test_an_interval_needs_problems():
    with pytest.raises(ValueError, match="no problems"):
        interval_over_problems([])
