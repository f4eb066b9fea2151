"""A sweep's confirmation: each of its k best configurations against the preset's own, on fresh seeds, paired by seed.

Each comparison holds a share a = α/k of the family-wise level (Bonferroni over the k) and tests, on the n per-seed
differences d_i = configuration − preset (seed i of both), two nulls as the tables' primaries do
(:mod:`reports.statistics.sequential`): Δ = 0, each direction at a/2, and |Δ| ≥ margin by two one-sided tests at a
(Schuirmann 1987). For any true Δ at most one of them is true, so each comparison errs with probability at most a and
the k together at most α, however the seeds are correlated; a "better" claim where the configuration is no better
than the preset is one direction's error at Δ = 0: at most α/2 over the family.

The tests are the paired t statistic T = mean(d)/(sd(d)/√n) against critical values calibrated over the envelope of
seed shapes the sequential boundaries are (:mod:`reports.statistics.envelope`: normal, Student t₃, gamma skewed either
way), not the t distribution's: at 12 seeds, differences of skewness −1 made the t-test call "better" at three times
its level (:mod:`reports.planning.null_sweep`). A direction is called where T crosses the calibrated one-sided value at
a/2 (its interval, mean ± that value × se, then excludes 0), equivalence where both one-sided statistics at ±margin
cross the one at a.

The fresh seeds must never have been seen by the search: the search picks the k on its own seeds, and only seeds
independent of that choice make the comparison's level its nominal one (the search's own means carry the winner's
curse: :mod:`reports.sweep_confirmation` shows both).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from reports.statistics.comparisons import Comparison, Estimate, margin_p_value, paired_t
from reports.statistics.envelope import calibrated_bounds


class Verdict(StrEnum):
    """A configuration against the preset; the values are the words a report shows."""

    BETTER = "better"
    EQUIVALENT = "equivalent"
    WORSE = "worse"
    UNDECIDED = "undecided"


@dataclass(frozen=True)
class Confirmed:
    """One configuration against the preset. comparison: the paired t, its interval the calibrated one at the
    comparison's share (mean ± the direction's critical value × se). equivalence_p: the two one-sided tests' t p-value
    at ±margin, shown beside the calibrated decision (None without a spread). level: this comparison's share of the
    family-wise level. critical: the calibrated critical values of T for a direction and for equivalence."""

    comparison: Comparison
    equivalence_p: float | None
    level: float
    verdict: Verdict
    critical: tuple[float, float]


def critical_values(seeds: int, share: float) -> tuple[float, float]:
    """The paired t's critical values at ``seeds`` seeds over the envelope: a direction's (one side at share/2) and
    equivalence's (each one-sided test at share)."""
    direction = calibrated_bounds((seeds,), (share / 2,), False)[0]
    equivalence = calibrated_bounds((seeds,), (share,), False)[0]
    return direction, equivalence


def confirm(
    values: Sequence[float], preset: Sequence[float], family: int, level: float, margin: float, maximize: bool = True
) -> Confirmed:
    """A configuration's fresh-seed values against the preset's on the same seeds (both (n,), seed i of each), one of
    ``family`` comparisons sharing the family-wise ``level``; equivalence within ±``margin``. ``maximize``: whether a
    larger value is better (the sweep's objective direction)."""
    if family < 1 or not 0 < level < 1:
        raise ValueError(f"a family of at least one comparison at a level in (0, 1), got {family} and {level}")
    share = level / family
    comparison = paired_t(values, preset, confidence=1 - share, distribution_free=False)
    direction, equivalence = critical_values(len(values), share)
    verdict = Verdict.UNDECIDED
    se, mean = comparison.se, comparison.delta.mean
    if se:  # every seed differing by the same amount leaves no spread to test against
        interval = Estimate(mean, mean - direction * se, mean + direction * se, comparison.delta.n, 1 - share)
        comparison = dataclasses.replace(comparison, delta=interval)
        if abs(mean) / se >= direction:
            verdict = Verdict.BETTER if (mean > 0) == maximize else Verdict.WORSE
        elif (mean + margin) / se >= equivalence and (margin - mean) / se >= equivalence:
            verdict = Verdict.EQUIVALENT
    return Confirmed(
        comparison, margin_p_value(comparison, margin, "equivalent"), share, verdict, (direction, equivalence)
    )
