"""Statistics for ablation tables at the seed counts a campaign can afford: intervals whose coverage holds
at n ≥ 2, tests whose false-positive rate holds, adjustment across a table's comparisons, and the
smallest effect a comparison could have detected.

Each table row was run with a handful of seeds (typically 3), and its values are the per-seed metrics,
shape (n,). At such n a percentile bootstrap covers far less than it states (it can only recombine the
values seen: over 3 seeds its 95 % interval excludes a null difference about a quarter of the time), so
every interval and test here is exact under normal seed noise and checked on simulated nulls by the
tests (Colas, Sigaud & Oudeyer 2019, "A hitchhiker's guide to statistical comparisons of RL algorithms":
Welch's t keeps its level at small n, bootstrap tests do not):

- a row's mean: Student-t interval over its seeds (:func:`seed_estimate`);
- a row against the row it is compared with, run with the same seeds (seed i of both rows shares its
  random streams, so seed noise partly cancels): paired t on the per-seed differences; with different
  seed sets: Welch's t (:func:`compare`); in a campaign whose seeds were planned from a pilot, Stein's
  second-stage t (:func:`stein_test`, the plan in :mod:`reports.planning.stein_plan`);
- beside each, a distribution-free check: the exact sign-flip (paired) or permutation (unpaired)
  p-value, with the smallest p it can reach at that n (paired n = 3: 0.25, so it can never reach 0.05);
- a table is a family: :func:`reports.statistics.multiplicity.adjust` turns its raw p-values into Holm (Holm 1979; default) or
  Benjamini–Hochberg adjusted ones, and a verdict calls a direction only when the adjusted p-value is
  at most the level (:func:`direction_agrees`);
- an undecided comparison carries the smallest effect it could have detected with 80 % power from its
  observed spread and n (:func:`detectable_effect`).

One seed is no interval: a row with n = 1 has ``ci_low`` and ``ci_high`` None, and a comparison with a
side of one run has no p-value and is "inconclusive (n = 1)".
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np
from scipy import optimize, stats

LEVEL = 0.05
POWER = 0.8
EXACT_ARRANGEMENTS = 50_000  # up to this many sign flips or relabellings the distribution-free p is exact
RANDOM_ARRANGEMENTS = 20_000  # beyond it, this many seeded random ones
STEIN_METHOD = "Stein two-stage t"


@dataclass(frozen=True)
class Estimate:
    """A mean over runs with its Student-t confidence interval.

    mean: the sample mean of the per-seed values. ci_low, ci_high: the interval at level ``confidence``,
    mean ± t(1 − (1 − confidence)/2, n − 1) · s/√n; None when n = 1 (one run has no spread to put an
    interval on). n: the number of runs behind it.
    """

    mean: float
    ci_low: float | None
    ci_high: float | None
    n: int
    confidence: float

    @property
    def has_interval(self) -> bool:
        return self.ci_low is not None


@dataclass(frozen=True)
class Comparison:
    """A row against the row it is compared with: Δ = mean(row) − mean(reference).

    delta: Δ with its t interval (``delta.n`` = n, the row's run count); no interval when either side
    has one run. method: "paired t" (same seeds; the per-seed differences) or "Welch t" (different seed
    sets). p_value: the two-sided t-test p-value for Δ = 0, None when undefined (a side with one run, or
    no spread at all). se, df: the standard error of Δ and the test's degrees of freedom (Welch–
    Satterthwaite for Welch), None when undefined. exact_p: the distribution-free two-sided p-value
    (exact sign flips of the differences, or exact relabellings of the pooled runs; seeded random ones
    past :data:`EXACT_ARRANGEMENTS`), and exact_p_floor the smallest value it can take at these n.
    p_improvement: P(X > Y) + ½·P(X = Y) over all (row, reference) run pairs (rliable).
    """

    delta: Estimate
    n: int
    n_reference: int
    paired: bool
    method: str
    p_value: float | None
    se: float | None
    df: float | None
    exact_p: float | None
    exact_p_floor: float | None
    p_improvement: float


class Direction(StrEnum):
    """How our delta's direction compares with the paper's, or whether a margin claim holds; the values are
    the words a report shows."""

    AGREES = "agrees"
    DISAGREES = "disagrees"
    INCONCLUSIVE = "inconclusive"
    NO_PAPER_NUMBER = "no paper number"
    EQUIVALENT = "equivalent"
    NON_INFERIOR = "non-inferior"
    NOT_SHOWN = "not shown"


def seed_estimate(values: Sequence[float], confidence: float = 0.95) -> Estimate:
    """Mean of per-seed values with its Student-t interval. values: (n,).

    With n = 1 there is no interval (None); when all values are equal the interval has zero width.
    Raises ValueError when there are no values, when they are not one-dimensional, or when any is nan
    or infinite.
    """
    _check_confidence(confidence)
    sample = _as_runs(values, "values")
    mean = float(np.mean(sample))
    if sample.size == 1:
        return Estimate(mean, None, None, 1, confidence)
    half = stats.t.ppf(0.5 + confidence / 2, sample.size - 1) * np.std(sample, ddof=1) / math.sqrt(sample.size)
    return Estimate(mean, mean - float(half), mean + float(half), sample.size, confidence)


def paired_t(
    values: Sequence[float], reference: Sequence[float], confidence: float = 0.95, distribution_free: bool = True
) -> Comparison:
    """Paired t on per-seed differences d_i = values[i] − reference[i] (seed i of both rows). Both: (n,).

    Δ = mean(d), se = sd(d)/√n with n − 1 degrees of freedom, interval Δ ± t·se, p = 2·P(T > |Δ/se|).
    The distribution-free check flips the signs of the d_i in all 2ⁿ ways (scipy's exact permutation
    test), so its smallest two-sided p-value is 2/2ⁿ. n = 1 gives no interval and no p-value; all d_i
    equal (sd 0) gives a zero-width interval and no p-value. ``distribution_free=False`` skips the
    check (exact_p None), for simulations that need only the t-test.
    """
    _check_confidence(confidence)
    row, base = _as_runs(values, "values"), _as_runs(reference, "reference")
    if row.size != base.size:
        raise ValueError(f"paired seeds need as many runs on both sides, got {row.size} and {base.size}")
    differences = row - base
    n = differences.size
    if n == 1:
        return _undefined(float(differences[0]), 1, 1, True, confidence, _improvement(row, base))
    sd = float(np.std(differences, ddof=1))
    se, df = sd / math.sqrt(n), float(n - 1)
    return _t_comparison(
        float(np.mean(differences)),
        se,
        df,
        n,
        n,
        paired=True,
        confidence=confidence,
        exact_p=_sign_flip_p(differences) if distribution_free else None,
        exact_p_floor=2.0 / 2**n,
        improvement=_improvement(row, base),
    )


def welch_t(
    values: Sequence[float], reference: Sequence[float], confidence: float = 0.95, distribution_free: bool = True
) -> Comparison:
    """Welch's t for Δ = mean(values) − mean(reference) over independent runs. values: (n,); reference: (m,).

    se² = s²_x/n + s²_y/m, degrees of freedom by Welch–Satterthwaite, interval Δ ± t·se. The
    distribution-free check relabels the n + m pooled runs in all C(n+m, n) ways, so its smallest
    two-sided p-value is 2/C(n+m, n). A side with one run gives no interval and no p-value.
    ``distribution_free`` as in :func:`paired_t`.
    """
    _check_confidence(confidence)
    row, base = _as_runs(values, "values"), _as_runs(reference, "reference")
    delta = float(np.mean(row) - np.mean(base))
    if row.size == 1 or base.size == 1:
        return _undefined(delta, row.size, base.size, False, confidence, _improvement(row, base))
    var_row, var_base = np.var(row, ddof=1) / row.size, np.var(base, ddof=1) / base.size
    se = float(math.sqrt(var_row + var_base))
    df = (
        float((var_row + var_base) ** 2 / (var_row**2 / (row.size - 1) + var_base**2 / (base.size - 1)))
        if se > 0
        else float(row.size + base.size - 2)
    )
    return _t_comparison(
        delta,
        se,
        df,
        row.size,
        base.size,
        paired=False,
        confidence=confidence,
        exact_p=_permutation_p(row, base) if distribution_free else None,
        exact_p_floor=min(1.0, 2.0 / math.comb(row.size + base.size, row.size)),
        improvement=_improvement(row, base),
    )


def compare(values: Mapping[int, float], reference: Mapping[int, float], confidence: float = 0.95) -> Comparison:
    """A row against its compared row, both given as seed -> value: paired t when both ran the same seeds
    (same seed index = same random streams), Welch's t otherwise."""
    if set(values) == set(reference):
        seeds = sorted(values)
        return paired_t([values[s] for s in seeds], [reference[s] for s in seeds], confidence)
    return welch_t(list(values.values()), list(reference.values()), confidence)


def stein_test(differences: Sequence[float], pilot_seeds: int, confidence: float = 0.95) -> Comparison:
    """Stein's second-stage test of Δ = 0 on all N per-seed differences, the first ``pilot_seeds`` being the pilot.

    Δ = mean of all N; se = s₀/√N with s₀ the pilot's sd; n₀ − 1 degrees of freedom; interval Δ ± t·se.
    No distribution-free check is given: the seed count N depends on the pilot's spread, which sign
    flips or relabellings of the pilot would change.
    """
    values = np.asarray(differences, dtype=float)
    if not 2 <= pilot_seeds <= values.size:
        raise ValueError(f"pilot_seeds must be between 2 and the {values.size} differences, got {pilot_seeds}")
    delta = float(np.mean(values))
    se = float(np.std(values[:pilot_seeds], ddof=1)) / math.sqrt(values.size)
    df = float(pilot_seeds - 1)
    half = float(stats.t.ppf(0.5 + confidence / 2, df) * se)
    return Comparison(
        delta=Estimate(delta, delta - half, delta + half, values.size, confidence),
        n=values.size,
        n_reference=values.size,
        paired=True,
        method=STEIN_METHOD,
        p_value=float(2 * stats.t.sf(abs(delta) / se, df)) if se > 0 else None,
        se=se if se > 0 else None,
        df=df,
        exact_p=None,
        exact_p_floor=None,
        p_improvement=float(np.mean(values > 0) + 0.5 * np.mean(values == 0)),
    )


def margin_p_value(comparison: Comparison, margin: float, claim: str) -> float | None:
    """The p-value of a margin claim about Δ, on the comparison's own standard error and degrees of freedom.

    non_inferior: H0 Δ ≤ −margin against Δ > −margin, p = P(T ≥ (Δ + margin)/se). equivalent: two one-sided
    tests (Schuirmann 1987), H0 |Δ| ≥ margin against |Δ| < margin, p = max(P(T ≥ (Δ + margin)/se),
    P(T ≤ (Δ − margin)/se)). Rejecting at level α is the (1 − 2α) interval lying inside (−margin, margin)
    (equivalent) or above −margin (non-inferior). None where the comparison has no standard error.
    """
    if not margin > 0 or not math.isfinite(margin):
        raise ValueError(f"a margin must be a positive number, got {margin}")
    if claim not in ("equivalent", "non_inferior"):
        raise ValueError(f"unknown claim '{claim}'; choose equivalent or non_inferior")
    if comparison.se is None or comparison.df is None:
        return None
    delta = comparison.delta.mean
    above = float(stats.t.sf((delta + margin) / comparison.se, comparison.df))
    if claim == "non_inferior":
        return above
    return max(above, float(stats.t.cdf((delta - margin) / comparison.se, comparison.df)))


def detectable_effect(se: float, df: float, level: float = LEVEL, power: float = POWER) -> float:
    """The smallest |Δ| a two-sided t-test at ``level`` detects with probability ``power``.

    With standard error ``se`` and ``df`` degrees of freedom, the test statistic is noncentral t with
    noncentrality δ/se; this solves P(|T| > t(1 − level/2, df)) = power for δ (``scipy.stats.nct``).
    Computed from the observed spread, so it says what these seeds could resolve, not what the effect is.
    """
    if se <= 0 or not math.isfinite(se):
        return 0.0 if se == 0 else math.inf
    critical = stats.t.ppf(1 - level / 2, df)

    def shortfall(noncentrality: float) -> float:
        upper = stats.nct.sf(critical, df, noncentrality)
        lower = stats.nct.cdf(-critical, df, noncentrality)  # the far tail: scipy returns nan where it underflows
        upper = upper if math.isfinite(upper) else float(noncentrality > critical)
        return upper + (lower if math.isfinite(lower) else 0.0) - power

    high = critical + 10.0
    while shortfall(high) < 0:
        high *= 2
    return float(se * optimize.brentq(shortfall, 0.0, high, xtol=1e-10))


def verdict_level(family_size: int, level: float = LEVEL) -> float:
    """The per-comparison level at which a detectable effect is stated: level/m, the first step of Holm
    (and the least any Benjamini–Hochberg step asks), so an effect that large is detected whatever the
    other p-values of the family are."""
    return level / max(1, family_size)


def direction_agrees(
    ours: Comparison,
    paper_delta: float | None,
    adjusted_p: float | None,
    level: float = LEVEL,
    tolerance: float = 0.0,
) -> Direction:
    """Whether our delta points the same way as the paper's (row − reference, same units as ``ours``).

    Ours is up or down (the sign of Δ) when the family-adjusted p-value is at most ``level``, none
    otherwise. The paper's is up, down or none by the sign of ``paper_delta`` beyond ±tolerance.

    - NO_PAPER_NUMBER: paper_delta is None.
    - INCONCLUSIVE: no p-value (a side with one run, or no spread), or ours is none while the paper's
      is up or down.
    - AGREES: both up, both down, or both none.
    - DISAGREES: opposite directions, or ours is up or down while the paper shows no change.
    """
    if tolerance < 0 or not math.isfinite(tolerance):
        raise ValueError(f"tolerance must be a finite number >= 0, got {tolerance}")
    if paper_delta is None:
        return Direction.NO_PAPER_NUMBER
    if not math.isfinite(paper_delta):
        raise ValueError(f"paper_delta must be finite or None, got {paper_delta}")
    if adjusted_p is None:
        return Direction.INCONCLUSIVE
    our_sign = int(np.sign(ours.delta.mean)) if adjusted_p <= level else 0
    paper_sign = 1 if paper_delta > tolerance else -1 if paper_delta < -tolerance else 0
    if our_sign == paper_sign:
        return Direction.AGREES
    if our_sign == 0:
        return Direction.INCONCLUSIVE
    return Direction.DISAGREES


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


def _check_confidence(confidence: float) -> None:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence}")


def _t_comparison(
    delta: float,
    se: float,
    df: float,
    n: int,
    n_reference: int,
    *,
    paired: bool,
    confidence: float,
    exact_p: float | None,
    exact_p_floor: float,
    improvement: float,
) -> Comparison:
    """A comparison whose t statistic is delta/se on df degrees of freedom; se = 0 has an interval but no p."""
    half = float(stats.t.ppf(0.5 + confidence / 2, df) * se)
    p_value = float(2 * stats.t.sf(abs(delta) / se, df)) if se > 0 else None
    return Comparison(
        delta=Estimate(delta, delta - half, delta + half, n, confidence),
        n=n,
        n_reference=n_reference,
        paired=paired,
        method="paired t" if paired else "Welch t",
        p_value=p_value,
        se=se if se > 0 else None,
        df=df,
        exact_p=exact_p,
        exact_p_floor=exact_p_floor,
        p_improvement=improvement,
    )


def _undefined(delta: float, n: int, n_reference: int, paired: bool, confidence: float, improvement: float):
    """A comparison with a side of one run: its Δ, nothing else."""
    return Comparison(
        delta=Estimate(delta, None, None, n, confidence),
        n=n,
        n_reference=n_reference,
        paired=paired,
        method="paired t" if paired else "Welch t",
        p_value=None,
        se=None,
        df=None,
        exact_p=None,
        exact_p_floor=None,
        p_improvement=improvement,
    )


def _mean_statistic(*samples: np.ndarray, axis: int = -1) -> np.ndarray:
    """The test statistic of the distribution-free checks: the mean (one sample) or difference of means."""
    if len(samples) == 1:
        return np.mean(samples[0], axis=axis)
    return np.mean(samples[0], axis=axis) - np.mean(samples[1], axis=axis)


def _sign_flip_p(differences: np.ndarray) -> float:
    exact = 2**differences.size <= EXACT_ARRANGEMENTS
    return _permutation_pvalue((differences,), "samples", exact)


def _permutation_p(row: np.ndarray, base: np.ndarray) -> float:
    exact = math.comb(row.size + base.size, row.size) <= EXACT_ARRANGEMENTS
    return _permutation_pvalue((row, base), "independent", exact)


def _permutation_pvalue(samples: tuple[np.ndarray, ...], kind: str, exact: bool) -> float:
    result = stats.permutation_test(
        samples,
        _mean_statistic,
        permutation_type=kind,
        vectorized=True,
        n_resamples=np.inf if exact else RANDOM_ARRANGEMENTS,
        alternative="two-sided",
        rng=np.random.default_rng(0),
    )
    return float(result.pvalue)


def _improvement(row: np.ndarray, base: np.ndarray) -> float:
    wins = row[:, None] > base[None, :]  # (n, m)
    ties = row[:, None] == base[None, :]  # (n, m)
    return float((wins.sum() + 0.5 * ties.sum()) / wins.size)
