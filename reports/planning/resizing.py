"""A primary's maximum re-sized at every look from the spread its seeds show (a sequential design's ``maxima:
variance``), up to the design's cap, under boundaries that never move.

**Why the level holds.** Under ``maxima: variance`` a primary's boundaries are those of its design over every
declared look up to the cap (:func:`reports.statistics.sequential.sequential_design` on those looks), fixed before
its first seed: the level is spent at n_k / cap, never at n_k / maximum. The maximum only says where the comparison
stops looking. A test stopped before its last look, by any rule reading any data, rejects only where the whole
test would have rejected at the same look, so each of its wrong claims is one of the whole test's: a primary errs
with probability at most its share, and the table at most α, as the calibration over the envelope guarantees for
the whole test. The simulations measure it all the same (:mod:`reports.planning.level_simulation`).

**The rule.** After a look that decides nothing, with n_k seeds whose per-seed differences have sd s_k > 0, the sd
is taken at its one-sided ``assurance`` upper bound on n_k − 1 degrees of freedom
(:func:`reports.planning.fixed_design.upper_variance`), s⁺. The maximum becomes the least declared look L at which
the design stopped at L gives both decisions ``power`` with sd s⁺ (equivalence at Δ = 0, the direction at
±margin): L ≥ R_L · n(s⁺), n(s) the fixed paired t-test's seeds (:func:`reports.planning.fixed_design.seeds_for`)
and R_L the inflation of the cap design's boundary at L over the fixed test's critical value
(:func:`inflation`); the cap where no look is enough. If the maximum is at or
below n_k, the comparison stops undecided: it has the seeds its spread asks for and lies between its decisions.
A look whose seeds all differ by the same amount (s_k = 0) gives no spread to size from and leaves the maximum as it
was. The basis gives each primary its starting maximum the same way, from its design sd.

Since R_L and n(s) are fixed by the design, the rule is a table of thresholds: the largest sd each declared look
gives its power at (:func:`powered_sds`); the maximum is the least look whose threshold s⁺ does not exceed.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np
from scipy import stats

from reports.planning.fixed_design import unit_detectable, upper_variance
from reports.statistics.sequential import boundaries

RESIZING_POWER = 0.95
"""The power each re-sized maximum is sized for, above the designs' 80 %: chosen on simulated tables
(:mod:`reports.planning.sequential_simulation`, dapo_table1_2p5, rows' per-seed sds 1.8-3.1 points as measured,
300 tables a scenario): at 0.8, 0.9 and 0.95 the primaries were decided at Δ = 0 in 0.885, 0.940 and 0.975 of tables
on average (the least primary 0.853, 0.907, 0.950) for 163, 167 and 169 runs a table. A primary stopped at a maximum
sized for less is undecided more often for few seeds saved: most stop by a decision well before it."""


def inflation(looks: Sequence[int], level: float, power: float, spending: str, at: int = -1) -> float:
    """R: the seeds a design over ``looks`` stopped at look ``at`` (0-based; the last by default) needs for ``power``,
    over a fixed design's (the larger of the direction's and the equivalence's factor): ((b + z_β) / (z + z_β))², b
    the design's z boundary at that look and z the fixed test's critical value (Jennison & Turnbull 2000, §2.6)."""
    fractions = tuple(n / looks[-1] for n in looks)
    two, one = boundaries(fractions, level, spending, True)[at], boundaries(fractions, level, spending, False)[at]
    beta, half_beta = stats.norm.ppf(power), stats.norm.ppf(1 - (1 - power) / 2)
    direction = ((two + beta) / (stats.norm.isf(level / 2) + beta)) ** 2
    equivalence = ((one + half_beta) / (stats.norm.isf(level) + half_beta)) ** 2
    return float(max(direction, equivalence))


@functools.cache
def powered_sds(looks: tuple[int, ...], margin: float, level: float, spending: str, power: float) -> tuple[float, ...]:
    """Per declared look L (``looks`` up to the cap): the largest sd of per-seed differences at which the design over
    ``looks``, stopped at L, gives both decisions ``power`` at ``margin`` (see the module's docstring). A larger look
    never gets a smaller threshold: where the boundaries' inflation grows faster than L, the earlier look's holds.
    Returns (K,)."""
    thresholds, best = [], 0.0
    for index, seeds in enumerate(looks):
        fixed_seeds = math.floor(seeds / inflation(looks, level, power, spending, at=index))
        if fixed_seeds >= 2:
            unit = max(
                unit_detectable(fixed_seeds, level, power, None),
                unit_detectable(fixed_seeds, level, power, "equivalent"),
            )
            best = max(best, margin / unit)
        thresholds.append(best)
    return tuple(thresholds)


def maximum_for(sd: float, looks: Sequence[int], margin: float, level: float, spending: str, power: float) -> int:
    """The least declared look at which the design stopped there gives both decisions ``power`` with per-seed
    differences of sd ``sd``; the last look (the cap) where none does."""
    thresholds = powered_sds(tuple(looks), margin, level, spending, power)
    return next((seeds for seeds, most in zip(looks, thresholds, strict=True) if sd <= most), looks[-1])


def sd_bound(sd: float, seeds: int, assurance: float) -> float:
    """s⁺: the one-sided ``assurance`` upper confidence bound of an sd measured on ``seeds`` per-seed differences."""
    return math.sqrt(upper_variance(sd**2, seeds - 1, assurance))


def resized_maximum(
    sd: float,
    seeds: int,
    looks: Sequence[int],
    margin: float,
    level: float,
    spending: str,
    assurance: float,
    power: float,
) -> int:
    """The maximum after a look at ``seeds`` seeds whose differences have sd ``sd`` > 0 (see the module's docstring);
    at or below ``seeds``, the comparison stops undecided."""
    if not sd > 0:
        raise ValueError(f"a maximum is re-sized from a positive sd, got {sd}")
    return maximum_for(sd_bound(sd, seeds, assurance), looks, margin, level, spending, power)


def stopping_sds(
    looks: Sequence[int], margin: float, level: float, spending: str, assurance: float, power: float
) -> np.ndarray:
    """Per look k: the sd of the n_k differences at or below which a look that decides nothing stops the comparison
    undecided (its re-sized maximum is at or below n_k): the rule of :func:`resized_maximum` as thresholds for many
    simulated comparisons at once (:func:`reports.statistics.sequential.decide_paths`). Returns (K,)."""
    thresholds = powered_sds(tuple(looks), margin, level, spending, power)
    return np.array([most / sd_bound(1.0, seeds, assurance) for seeds, most in zip(looks, thresholds, strict=True)])
