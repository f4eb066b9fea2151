import math

import numpy as np
import pytest
from scipy import stats

from reports.statistics import envelope
from reports.statistics.comparisons import Direction
from reports.statistics.envelope import ENVELOPE, calibrated_bounds, envelope_draws
from reports.statistics.sequential import (
    AGREE,
    DISAGREE,
    EQUIVALENT,
    UNDECIDED,
    SequentialDesign,
    boundaries,
    decide_paths,
    first_decision,
    judge_look,
    sequential_design,
    spent,
)

FIVE_LOOKS = (0.2, 0.4, 0.6, 0.8, 1.0)


def test_boundaries_are_the_published_lan_demets_values():
    # Five equally spaced looks, two-sided 0.05 (Jennison & Turnbull 2000, ch. 7; the gsDesign and ldbounds values)
    obf = boundaries(FIVE_LOOKS, 0.05, "obrien_fleming", True)
    assert obf == pytest.approx((4.877, 3.357, 2.680, 2.290, 2.031), abs=1e-3)
    pocock = boundaries(FIVE_LOOKS, 0.05, "pocock", True)
    assert pocock == pytest.approx((2.438, 2.427, 2.410, 2.397, 2.386), abs=1e-3)
    # one look is the fixed test; a one-sided test at 0.025 is one side of the two-sided test at 0.05
    assert boundaries((1.0,), 0.05, "obrien_fleming", True) == pytest.approx((stats.norm.isf(0.025),))
    assert boundaries(FIVE_LOOKS, 0.025, "obrien_fleming", False) == pytest.approx(obf, abs=1e-6)


@pytest.mark.parametrize("spending", ["obrien_fleming", "pocock"])
def test_simulated_z_paths_cross_each_boundary_as_often_as_the_spending_function_says(spending):
    fractions = (0.25, 0.5, 0.75, 1.0)
    seeds = np.array([2, 4, 6, 8])  # unequal increments would do as well; these are the looks of a campaign
    bounds = np.array(boundaries(fractions, 0.05, spending, True))
    rng = np.random.default_rng(1)
    draws = 400_000
    increments = rng.standard_normal((draws, 8))  # (S, n): per-seed scores under the null
    z = np.cumsum(increments, axis=1)[:, seeds - 1] / np.sqrt(seeds)  # (S, K)
    crossed = np.abs(z) >= bounds
    first = np.where(crossed.any(axis=1), crossed.argmax(axis=1), -1)
    cumulative = [np.mean((first >= 0) & (first <= k)) for k in range(4)]
    expected = [2 * spent(spending, 0.025, f) for f in fractions]
    for observed, wanted in zip(cumulative, expected, strict=True):
        assert observed == pytest.approx(wanted, abs=4 * math.sqrt(wanted * (1 - wanted) / draws) + 1e-5)


def test_a_design_gives_each_look_its_nominal_levels():
    design = sequential_design([4, 8, 12], 0.01, 0.05)
    assert design.looks == (4, 8, 12)
    z_matched = [2 * stats.norm.sf(b) for b in boundaries((1 / 3, 2 / 3, 1.0), 0.01, "obrien_fleming", True)]
    assert all(a < b for a, b in zip(design.direction_levels, z_matched, strict=True))  # stricter at every look
    assert design.direction_levels[0] == 0  # O'Brien–Fleming's first share is below what the simulation resolves
    assert 0 < design.direction_levels[1] < design.direction_levels[2] < 0.01
    assert 0 < design.equivalence_levels[-1] < 0.01
    with pytest.raises(ValueError, match="increasing seed counts"):
        sequential_design([8, 4], 0.01, 0.05)
    with pytest.raises(ValueError, match="at least 2"):
        sequential_design([1, 4], 0.01, 0.05)
    with pytest.raises(ValueError, match="unknown spending rule 'haybittle'"):
        sequential_design([4, 8], 0.01, 0.05, "haybittle")
    with pytest.raises(ValueError, match="margin must be a positive"):
        sequential_design([4, 8], 0.01, 0.0)


def test_each_look_decides_one_of_four_ways():
    design = sequential_design([4, 8], 0.05, 0.05, "pocock")
    # mean 0.10, sd 0.0082 over 4 seeds: t = 24.5 on 3 df, p = 0.00015, under the look's nominal level 0.031
    up = [0.09, 0.10, 0.11, 0.10]
    assert judge_look(up, design, +1).verdict is Direction.AGREES
    assert judge_look(up, design, -1).verdict is Direction.DISAGREES
    # mean 0, sd 0.0082: both one-sided tests reject |Δ| ≥ 0.05 (t = 12.2 each), no direction
    level = judge_look([0.01, -0.01, 0.0, 0.0], design, +1)
    assert level.verdict is Direction.EQUIVALENT and level.within_margin
    noisy = [0.08, -0.07, 0.05, -0.04]
    assert judge_look(noisy, design, +1).verdict is None  # the seeds go on
    assert judge_look(noisy * 2, design, +1).verdict is Direction.INCONCLUSIVE  # the last look is undecided
    # rows that differ by the same amount on every seed: no spread to test against, so the seeds go on
    for tied in ([0.0] * 4, [0.07] * 4):
        assert judge_look(tied, design, +1).verdict is None
        assert judge_look(tied * 2, design, +1).verdict is Direction.INCONCLUSIVE
    with pytest.raises(ValueError, match="5 seeds is not one of the design's looks"):
        judge_look(noisy + [0.0], design, +1)


def test_the_first_deciding_look_is_the_one_reported():
    design = sequential_design([4, 8], 0.05, 0.05, "pocock")
    result = first_decision([0.08, -0.07, 0.05, -0.04, 0.0, 0.01, -0.01, 0.0], design, +1)
    assert (result.seeds, result.look) == (8, 1)
    assert first_decision([0.09, 0.10, 0.11, 0.10, 5.0, 5.0, 5.0, 5.0], design, +1).seeds == 4


def test_the_vectorised_decisions_equal_the_look_by_look_ones():
    design = sequential_design([3, 6, 9], 0.02, 0.05, "obrien_fleming")
    rng = np.random.default_rng(3)
    paths = rng.normal(rng.choice([-0.06, 0.0, 0.03], (400, 1)), 0.04, (400, 9))  # (S, n)
    paths[:10] = 0.0  # no spread, and no difference
    paths[10:20] = 0.02  # no spread, a difference inside the margin
    outcome, stopped = decide_paths(paths, design, +1)
    codes = {
        Direction.AGREES: AGREE,
        Direction.DISAGREES: DISAGREE,
        Direction.EQUIVALENT: EQUIVALENT,
        Direction.INCONCLUSIVE: UNDECIDED,
    }
    for path, code, n in zip(paths, outcome, stopped, strict=True):
        result = first_decision(path, design, +1)
        assert (codes[result.verdict], result.seeds) == (code, n)
    assert {AGREE, DISAGREE, EQUIVALENT, UNDECIDED} <= set(outcome.tolist())


@pytest.mark.parametrize("spending", ["obrien_fleming", "pocock"])
def test_wrong_claims_keep_the_level_at_the_null_and_at_the_margin(spending):
    level, margin, draws = 0.05, 0.05, 20_000
    design = sequential_design([4, 8, 12, 16], level, margin, spending)
    rng = np.random.default_rng(5)
    null, _ = decide_paths(rng.normal(0.0, 0.04, (draws, 16)), design, +1)
    at_margin, _ = decide_paths(rng.normal(margin, 0.04, (draws, 16)), design, +1)
    bound = level + 3 * math.sqrt(level * (1 - level) / draws)
    assert np.mean(np.isin(null, (AGREE, DISAGREE))) <= bound  # a direction where there is none
    assert np.mean(np.isin(at_margin, (EQUIVALENT, DISAGREE))) <= bound  # equivalence, or the wrong way, at the margin


def test_one_calibrated_look_on_normal_seeds_is_the_t_test(monkeypatch):
    (enveloped,) = calibrated_bounds((12,), (0.01,), True)
    calibrated_bounds.cache_clear()
    monkeypatch.setattr(envelope, "ENVELOPE", ("normal",))
    try:  # one look, normal seeds only: the t distribution's quantile, to the Monte-Carlo error
        (normal,) = calibrated_bounds((12,), (0.01,), True)
    finally:
        calibrated_bounds.cache_clear()
    assert 2 * stats.t.sf(normal, 11) == pytest.approx(0.01, rel=0.1)
    assert enveloped > normal  # the skewed shapes' tails ask more


@pytest.mark.parametrize("shape", ENVELOPE)
def test_every_shape_of_the_envelope_keeps_the_level_on_fresh_draws(shape):
    level, margin, draws, looks = 0.05, 0.05, 40_000, (4, 8, 12, 16)
    design = sequential_design(looks, level, margin, "pocock")
    rng = np.random.default_rng(11)  # not the calibration's stream
    noise = 0.04 * envelope_draws(shape, rng, (draws, 16))
    null, _ = decide_paths(noise, design, +1)
    at_margin, _ = decide_paths(margin + noise, design, +1)
    below_margin, _ = decide_paths(-margin + noise, design, -1)
    bound = level + 3 * math.sqrt(level * (1 - level) / draws)
    assert np.mean(np.isin(null, (AGREE, DISAGREE))) <= bound
    assert np.mean(np.isin(at_margin, (EQUIVALENT, DISAGREE))) <= bound
    assert np.mean(np.isin(below_margin, (EQUIVALENT, DISAGREE))) <= bound


def test_skewed_seeds_kept_the_z_boundaries_above_their_level_and_keep_these_at_it():
    level, draws, looks = 0.01, 100_000, (4, 8, 12)
    rng = np.random.default_rng(12)
    noise = envelope_draws("skewed_down", rng, (draws, 12))
    fractions = tuple(n / looks[-1] for n in looks)
    z_matched = SequentialDesign(
        looks, level, 0.05, "pocock", tuple(2 * stats.norm.sf(b) for b in boundaries(fractions, level, "pocock", True)),
        (0.0,) * 3,
    )
    called = [np.mean(np.isin(decide_paths(noise, design, +1)[0], (AGREE, DISAGREE)))
              for design in (z_matched, sequential_design(looks, level, 0.05, "pocock"))]
    assert called[0] > 2 * level and called[1] <= level + 3 * math.sqrt(level / draws)
