"""Group-sequential boundaries for the paired t statistic that keep their level over an envelope of seed-difference
shapes, not only under normal ones.

Boundaries built for a known variance and compared with a t-test's p-value (p-value matching) are exact at one look
and normal seeds only: with 3-7 degrees of freedom the direction test ran at 1.02-1.14 times its level, and a
skewed difference (a row that now and then collapses) moves the t statistic's extreme tails most at the few seeds
of the first looks. Here each look's critical value c_k is calibrated on simulated paths of the t statistic itself,
on n_k − 1 degrees of freedom, under every shape of :data:`ENVELOPE`: look k's c_k is the least value at which, for
every shape, the paths not stopped before cross one tail (T_k ≤ −c_k) with at most the spending function's
increment. Both tails are covered, since the envelope holds each skewed shape with its mirror image. A look's
nominal level is the t distribution's tail beyond c_k; a test stricter than that at any shape's expense costs power,
never level.

The paths are drawn from one fixed generator (:data:`CALIBRATION_SEED`), so the same design gets the same
boundaries everywhere. Each look meets the spending function's cumulative level on the paths of every shape, so a
look that spent less than its share (a shape that crossed less) leaves the rest to the next; a share too small to
resolve on :data:`CALIBRATION_PATHS` paths (an O'Brien–Fleming first look) leaves that look undecided.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np
from scipy import stats

ENVELOPE_SKEWNESS = 1.0
ENVELOPE = ("normal", "student_t3", "skewed_up", "skewed_down")
"""Standardised shapes of the per-seed differences: normal; Student t on 3 degrees of freedom (heavy tails, finite
variance); and a gamma distribution of skewness +:data:`ENVELOPE_SKEWNESS` and its mirror image (a long tail of
seeds on one side)."""
CALIBRATION_PATHS = 200_000
CALIBRATION_SEED = 20_251_128
SPENT_SHARE = 0.95
"""The share of each look's cumulative level the calibration's paths may cross: 5 % is kept back for the Monte-Carlo
error of critical values fitted to 200,000 paths (about 3 % of the level at the shipped designs' smallest shares),
so that fresh draws do not cross above the level."""
LEAST_CROSSINGS = 20
"""A look whose share of the level leaves fewer simulated crossings than this is not judged (its critical value is
infinite): the share passes to the next look, as the spending function's cumulative level is what each look meets."""


def envelope_draws(shape: str, rng: np.random.Generator, size: tuple[int, ...], skewness: float | None = None):
    """Draws of one standardised shape (mean 0, variance 1): an array of ``size``; ``skewness`` (default
    :data:`ENVELOPE_SKEWNESS`) sizes the skewed shapes."""
    skewness = ENVELOPE_SKEWNESS if skewness is None else skewness
    if shape == "normal":
        return rng.standard_normal(size)
    if shape == "student_t3":
        return rng.standard_t(3, size) / math.sqrt(3)
    if shape in ("skewed_up", "skewed_down"):
        k = (2 / skewness) ** 2  # a gamma of shape k has skewness 2/√k
        draws = (rng.gamma(k, 1.0, size) - k) / math.sqrt(k)
        return draws if shape == "skewed_up" else -draws
    raise ValueError(f"unknown shape '{shape}'; choose one of: {', '.join(ENVELOPE)}")


def t_paths(draws_of: Sequence[np.ndarray]) -> np.ndarray:
    """The paired t statistic at each look from each look's new per-seed differences: draws_of[k] is (S, n_k − n_{k−1}).
    Returns (S, K); NaN where the differences have no spread."""
    total = np.zeros(draws_of[0].shape[0])
    squares = np.zeros_like(total)
    seeds, columns = 0, []
    for block in draws_of:
        total += block.sum(axis=1)
        squares += (block**2).sum(axis=1)
        seeds += block.shape[1]
        mean = total / seeds
        variance = np.maximum(squares - seeds * mean**2, 0.0) / (seeds - 1)
        with np.errstate(divide="ignore", invalid="ignore"):
            columns.append(np.where(variance > 0, mean / np.sqrt(variance / seeds), np.nan))
    return np.stack(columns, axis=1)


@functools.cache
def calibrated_bounds(looks: tuple[int, ...], levels: tuple[float, ...], two_sided: bool) -> tuple[float, ...]:
    """Critical values c_1..c_K of the t statistic at ``looks`` seeds, crossed (|T_k| ≥ c_k two-sided, else T_k ≤ −c_k,
    not before) with at most the cumulative probabilities ``levels`` (K,) under every shape of the envelope.
    Returns (K,)."""
    rng = np.random.default_rng(CALIBRATION_SEED)
    counts = (0, *looks)
    paths = {
        shape: t_paths(
            [
                envelope_draws(shape, rng, (CALIBRATION_PATHS, after - before))
                for before, after in zip(counts, counts[1:])
            ]
        )
        for shape in ENVELOPE
    }
    alive = {shape: np.ones(CALIBRATION_PATHS, dtype=bool) for shape in ENVELOPE}
    bounds = []
    for k in range(len(looks)):
        bound = 0.0
        for shape in ENVELOPE:
            crossed = CALIBRATION_PATHS - int(alive[shape].sum())
            # the level left unspent by the looks before, less the margin for the simulation's own error
            allowed = math.floor(SPENT_SHARE * levels[k] * CALIBRATION_PATHS) - crossed
            if allowed < LEAST_CROSSINGS:  # too little to resolve by simulation: this look decides nothing
                bound = math.inf
                break
            column = paths[shape][alive[shape], k]
            beyond = np.abs(column) if two_sided else -column  # NaN (no spread) never crosses
            beyond = np.sort(beyond[~np.isnan(beyond)])[::-1]
            if allowed < beyond.size:  # just past the (allowed + 1)-th largest: `allowed` paths lie at or beyond it
                bound = max(bound, float(np.nextafter(beyond[allowed], np.inf)))
        bounds.append(bound)
        for shape in ENVELOPE:
            column = paths[shape][:, k]
            alive[shape] &= ~((np.abs(column) if two_sided else -column) >= bound)
    return tuple(bounds)


def tail_levels(looks: Sequence[int], bounds: Sequence[float]) -> tuple[float, ...]:
    """Each look's nominal one-sided level: the t distribution's tail beyond its critical value, on n_k − 1 degrees
    of freedom. looks, bounds: (K,)."""
    return tuple(float(stats.t.sf(bound, n - 1)) for n, bound in zip(looks, bounds, strict=True))
