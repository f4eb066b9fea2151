"""Statistics for ablation tables: seed-bootstrap confidence intervals, deltas against a reference row,
probability of improvement, and whether our delta points the way the paper's does.

Each table row was run with a handful of seeds (typically 3, sometimes 1 or 2), and its values are the
per-seed final metrics, shape (n,). Following rliable (Agarwal et al. 2021, "Deep Reinforcement Learning at
the Edge of the Statistical Precipice"), a row is reported as its mean with a percentile bootstrap
confidence interval over seeds and its number of runs, never as a bare point estimate; a row against the
reference row also gets the probability of improvement.

With n this small the bootstrap interval is narrower than the truth (it can only recombine the values
seen), so treat it as a description of the seeds, not as a guarantee.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np
from scipy import stats

MINUS = "\u2212"  # typographic minus: lines up with the digits in rendered tables


@dataclass(frozen=True)
class Estimate:
    """A mean over runs with its bootstrap confidence interval.

    mean: the sample mean of the per-seed values. ci_low, ci_high: the percentile bootstrap interval at
    level ``confidence``; both equal ``mean`` when the interval is degenerate (one run, or all runs equal).
    n: the number of runs behind it.
    """

    mean: float
    ci_low: float
    ci_high: float
    n: int
    confidence: float


@dataclass(frozen=True)
class Comparison:
    """A row against the reference row.

    delta: Estimate of mean(row) − mean(reference), with ``delta.n`` = n, the row's run count.
    p_improvement: probability of improvement, P(X > Y) + ½·P(X = Y) over all (row, reference) pairs.
    n, n_reference: runs of the row and of the reference.
    paired: whether the interval came from per-seed differences (True) or from resampling each side
    independently (False).
    """

    delta: Estimate
    p_improvement: float
    n: int
    n_reference: int
    paired: bool


class Direction(StrEnum):
    """How our delta's direction compares with the paper's; the values are the words a report shows."""

    AGREES = "agrees"
    DISAGREES = "disagrees"
    INCONCLUSIVE = "inconclusive"
    NO_PAPER_NUMBER = "no paper number"


def seed_estimate(
    values: Sequence[float], confidence: float = 0.95, resamples: int = 10_000, seed: int = 0
) -> Estimate:
    """Mean of per-seed values with a percentile bootstrap CI over seeds. values: (n,).

    The interval resamples the n values with replacement ``resamples`` times (``scipy.stats.bootstrap``,
    method "percentile", generator ``np.random.default_rng(seed)``), so a fixed seed gives the same
    interval every time.

    Degenerate cases: with n = 1 there is nothing to resample, and when all values are equal every
    resample has the same mean; in both the interval collapses to the point (ci_low = ci_high = mean)
    rather than being nan. A zero-width interval from n = 1 says nothing about spread.

    Raises ValueError when there are no values, when they are not one-dimensional, or when any is nan or
    infinite.
    """
    _check_settings(confidence, resamples)
    sample = _as_runs(values, "values")
    mean = float(np.mean(sample))
    if sample.size == 1 or np.all(sample == sample[0]):
        return Estimate(mean, mean, mean, sample.size, confidence)
    low, high = _percentile_interval((sample,), np.mean, confidence, resamples, seed)
    return Estimate(mean, low, high, sample.size, confidence)


def paired_comparison(
    values: Sequence[float],
    reference: Sequence[float],
    confidence: float = 0.95,
    resamples: int = 10_000,
    seed: int = 0,
) -> Comparison:
    """Difference row − reference with a bootstrap CI, and the probability of improvement.

    values: (n,) the row's per-seed metrics; reference: (m,) the reference row's.

    Paired when n == m: values[i] and reference[i] are taken to come from the same seed, and the interval
    is :func:`seed_estimate` of the per-seed differences (shared seed noise cancels). Unpaired when
    n != m: each side is resampled independently and the interval is over the difference of the two
    resampled means; ``paired`` in the result says which was used.

    p_improvement follows rliable's probability of improvement,

        P(X > Y) = 1/(n·m) · Σ_i Σ_j [ 1{x_i > y_j} + ½·1{x_i = y_j} ],

    the Mann–Whitney U statistic of the row over the reference divided by n·m. It is computed over all
    n·m pairs, also when the seeds are paired. 0.5 means no tendency either way, 1.0 that every row run
    beats every reference run.

    Raises ValueError as :func:`seed_estimate` does, for either side.
    """
    _check_settings(confidence, resamples)
    row = _as_runs(values, "values")
    base = _as_runs(reference, "reference")
    paired = row.size == base.size
    if paired:
        delta = seed_estimate(row - base, confidence, resamples, seed)
    else:
        delta = _unpaired_delta(row, base, confidence, resamples, seed)
    return Comparison(delta, _probability_of_improvement(row, base), row.size, base.size, paired)


def direction_agrees(ours: Comparison, paper_delta: float | None, tolerance: float = 0.0) -> Direction:
    """Whether our delta points the same way as the paper's (row − reference, same units as ``ours``).

    paper_delta: the paper's row minus its reference row, or None when the paper gives no number for
    either. tolerance (>= 0): paper deltas within ±tolerance count as the paper showing no change.

    Our direction is up when the delta's CI lies above 0, down when it lies below 0, and none when the CI
    contains or touches 0. The paper's is up, down or none by the sign of paper_delta beyond ±tolerance.

    - NO_PAPER_NUMBER: paper_delta is None.
    - INCONCLUSIVE: either side has a single run (its interval has no spread, so it cannot show a
      direction), or ours is none while the paper's is up or down.
    - AGREES: both up, both down, or both none.
    - DISAGREES: opposite directions, or ours is up or down while the paper shows no change.
    """
    if tolerance < 0 or not np.isfinite(tolerance):
        raise ValueError(f"tolerance must be a finite number >= 0, got {tolerance}")
    if paper_delta is None:
        return Direction.NO_PAPER_NUMBER
    if not np.isfinite(paper_delta):
        raise ValueError(f"paper_delta must be finite or None, got {paper_delta}")
    if ours.n < 2 or ours.n_reference < 2:
        return Direction.INCONCLUSIVE
    our_sign = 1 if ours.delta.ci_low > 0 else -1 if ours.delta.ci_high < 0 else 0
    paper_sign = 1 if paper_delta > tolerance else -1 if paper_delta < -tolerance else 0
    if our_sign == paper_sign:
        return Direction.AGREES
    if our_sign == 0:
        return Direction.INCONCLUSIVE
    return Direction.DISAGREES


def format_estimate(estimate: Estimate, scale: float = 100, digits: int = 1) -> str:
    """Table cell for an estimate, e.g. ``"43.2 [40.1, 46.0] (n=3)"``: mean [ci_low, ci_high] (n=runs).

    Values are multiplied by ``scale`` (100 turns fractions into percent) and rounded to ``digits``.
    Negative numbers use the typographic minus (−).
    """
    low, high = _number(estimate.ci_low * scale, digits), _number(estimate.ci_high * scale, digits)
    return f"{_number(estimate.mean * scale, digits)} [{low}, {high}] (n={estimate.n})"


def format_comparison(comparison: Comparison, scale: float = 100, digits: int = 1) -> str:
    """Table cell for a delta, e.g. ``"+3.1 [−0.5, 6.2]"``: signed mean [ci_low, ci_high].

    The mean always carries its sign (+ or −) unless it rounds to zero; the bounds carry only a minus.
    Scaling and rounding as in :func:`format_estimate`.
    """
    delta = comparison.delta
    mean = _number(delta.mean * scale, digits)
    if not mean.startswith(MINUS) and float(mean) != 0:
        mean = "+" + mean
    return f"{mean} [{_number(delta.ci_low * scale, digits)}, {_number(delta.ci_high * scale, digits)}]"


def format_probability(probability: float, digits: int = 2) -> str:
    """Table cell for a probability of improvement, e.g. ``"0.83"``."""
    return f"{probability:.{digits}f}"


def _number(value: float, digits: int) -> str:
    text = f"{value:.{digits}f}"
    if float(text) == 0:
        return text.lstrip("-")  # "-0.0" would claim a direction the rounded value no longer has
    return text.replace("-", MINUS)


def _as_runs(values: Sequence[float], name: str) -> np.ndarray:
    sample = np.asarray(values, dtype=float)
    if sample.ndim != 1:
        raise ValueError(f"{name} must be a flat sequence of per-seed values, got shape {sample.shape}")
    if sample.size == 0:
        raise ValueError(f"{name} is empty: an estimate needs at least one run")
    bad = np.flatnonzero(~np.isfinite(sample))
    if bad.size:
        raise ValueError(f"{name} has non-finite entries (nan or inf) at positions {bad.tolist()}: {sample.tolist()}")
    return sample


def _check_settings(confidence: float, resamples: int) -> None:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence}")
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")


def _unpaired_delta(row: np.ndarray, base: np.ndarray, confidence: float, resamples: int, seed: int) -> Estimate:
    mean, n = float(np.mean(row) - np.mean(base)), row.size
    if np.all(row == row[0]) and np.all(base == base[0]):
        return Estimate(mean, mean, mean, n, confidence)
    # scipy refuses one-observation samples; a single run resamples only to itself, and so does the same
    # value twice, so doubling it leaves the bootstrap distribution unchanged.
    row, base = (np.repeat(side, 2) if side.size == 1 else side for side in (row, base))
    low, high = _percentile_interval((row, base), _difference_of_means, confidence, resamples, seed)
    return Estimate(mean, low, high, n, confidence)


def _percentile_interval(
    samples: tuple[np.ndarray, ...], statistic, confidence: float, resamples: int, seed: int
) -> tuple[float, float]:
    """Percentile bootstrap interval of ``statistic``, each sample resampled independently (seeded)."""
    interval = stats.bootstrap(
        samples,
        statistic,
        n_resamples=resamples,
        vectorized=True,
        paired=False,
        confidence_level=confidence,
        method="percentile",
        rng=np.random.default_rng(seed),
    ).confidence_interval
    return float(interval.low), float(interval.high)


def _difference_of_means(row: np.ndarray, base: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(row, axis=axis) - np.mean(base, axis=axis)


def _probability_of_improvement(row: np.ndarray, base: np.ndarray) -> float:
    wins = row[:, None] > base[None, :]  # (n, m)
    ties = row[:, None] == base[None, :]  # (n, m)
    return float((wins.sum() + 0.5 * ties.sum()) / wins.size)
