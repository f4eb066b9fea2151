"""A sweep's confirmation: each of its k best configurations against the preset's own, on fresh seeds, paired by seed.

Each comparison holds a share a = α/k of the family-wise level (Bonferroni over the k) and tests, on the per-seed
differences d_i = configuration − preset (seed i of both), two nulls as the tables' primaries do
(:mod:`reports.statistics.sequential`): Δ = 0 by the two-sided paired t at a, and |Δ| ≥ margin by two one-sided
tests at a (Schuirmann 1987). For any true Δ at most one of them is true, so each comparison errs with probability at
most a and the k together at most α, however the seeds are correlated. A "better" claim where the configuration is
no better than the preset is half the two-sided test's error at Δ = 0: at most α/2 over the family. The interval
given is the paired t's at 1 − a, so it excludes 0 exactly where a direction is called.

The fresh seeds must never have been seen by the search: the search picks the k on its own seeds, and only seeds
independent of that choice make the comparison's level its nominal one (the search's own means carry the winner's
curse: :mod:`reports.sweep_confirmation` shows both).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from reports.statistics.comparisons import Comparison, margin_p_value, paired_t


class Verdict(StrEnum):
    """A configuration against the preset; the values are the words a report shows."""

    BETTER = "better"
    EQUIVALENT = "equivalent"
    WORSE = "worse"
    UNDECIDED = "undecided"


@dataclass(frozen=True)
class Confirmed:
    """One configuration against the preset. comparison: the paired t at 1 − ``level`` (its interval and p-value).
    equivalence_p: the two one-sided tests' p-value at ±margin (None without a spread). level: this comparison's
    share of the family-wise level."""

    comparison: Comparison
    equivalence_p: float | None
    level: float
    verdict: Verdict


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
    equivalence_p = margin_p_value(comparison, margin, "equivalent")
    if comparison.p_value is not None and comparison.p_value <= share:
        ahead = np.sign(comparison.delta.mean) == (1 if maximize else -1)
        verdict = Verdict.BETTER if ahead else Verdict.WORSE
    elif equivalence_p is not None and equivalence_p <= share:
        verdict = Verdict.EQUIVALENT
    else:
        verdict = Verdict.UNDECIDED
    return Confirmed(comparison, equivalence_p, share, verdict)
