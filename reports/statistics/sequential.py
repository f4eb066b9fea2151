"""Group-sequential decisions over a comparison's seeds: looks at declared seed counts, the level spent across them
by a Lan–DeMets spending function, and at each look one of four outcomes for Δ = row − compared row: it *agrees*
with the paper's direction, *disagrees* with it, is *equivalent* within ±margin, or the seeds go on (undecided after
the last look).

**Why the family-wise level holds.** A comparison holds a share a of the table's level (a = α/m over its m
primaries) and tests two nulls on the same seeds: H₀: Δ = 0 (two-sided, symmetric boundaries, level a) and
H₀′: |Δ| ≥ margin (two one-sided tests, Schuirmann 1987, each at level a). For any true Δ at most one of them is
true, and a wrong claim is a rejection of that one (a direction called the wrong way when Δ ≠ 0 is bounded by the
crossings of H₀'s test at Δ = 0), so each comparison errs with probability at most a and a table of m at most α
(Bonferroni), however the comparisons' seeds are correlated and whenever each stops. A test not run at a later
look because the comparison already stopped only errs less: the boundaries are non-binding.

**Boundaries** (Lan & DeMets 1983). With information fractions t_k = n_k / n_K, the spending function a(t) is the
null probability of crossing by look k; boundary k solves P(cross at look k, not before) = a(t_k) − a(t_{k−1}) under
the canonical joint distribution of the z statistics (Corr(Z_j, Z_k) = √(t_j / t_k)), by recursive numerical
integration over the continuation region (Armitage, McPherson & Rowe 1969; Jennison & Turnbull 2000, ch. 19).
Spending functions, for a one-sided level a (a two-sided test at a spends a/2 a side):

- ``obrien_fleming`` (default): a(t) = 2 − 2Φ(z_{1−a/2} / √t), the O'Brien–Fleming type: almost nothing early;
- ``pocock``: a(t) = a · ln(1 + (e − 1) t), the Pocock type: evenly spread, a larger final boundary.

**Unknown variance and the shape of the seeds.** A look's statistic is the paired t on n_k − 1 degrees of freedom,
and the boundaries are the t statistic's own: each look's critical value is calibrated on simulated paths of t so
that every shape of an envelope (normal, heavy-tailed, skewed either way; :mod:`reports.statistics.envelope`)
crosses with at most the spending function's increment, and a look rejects where the t-test's p-value is at most
that value's nominal level. The z boundaries above (:func:`boundaries`) size the plans; compared with a t-test's
p-value they ran at up to 1.3 times their level on normal seeds at 3-7 degrees of freedom and 3-9 times on skewed
ones. Every seed differing by the same amount gives no spread to test against: such a look decides nothing. The
levels at the campaigns' looks are measured on simulated tables (:mod:`reports.planning.level_simulation`), not
assumed.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import optimize, stats

from algos.campaign.study_design import SPENDING_RULES
from reports.statistics.comparisons import Comparison, Direction, margin_p_value, paired_t
from reports.statistics.envelope import calibrated_bounds, tail_levels

GRID_POINTS = 801  # Simpson points over each look's continuation region: boundaries to about 1e-4
TAIL = 10.0  # standard deviations kept below a one-sided boundary: the mass beyond is below 1e-22


def spent(spending: str, level: float, fraction: float) -> float:
    """a(t): the null probability that a one-sided test at ``level`` has crossed by information ``fraction``."""
    if spending not in SPENDING_RULES:
        raise ValueError(f"unknown spending rule '{spending}'; choose one of: {', '.join(SPENDING_RULES)}")
    if not 0 < fraction <= 1:
        raise ValueError(f"an information fraction lies in (0, 1], got {fraction}")
    if spending == "pocock":
        return level * math.log1p((math.e - 1) * fraction)
    return float(2 * stats.norm.sf(stats.norm.isf(level / 2) / math.sqrt(fraction)))


@functools.cache
def boundaries(fractions: tuple[float, ...], level: float, spending: str, two_sided: bool) -> tuple[float, ...]:
    """The z boundaries b_1..b_K of a test at ``level`` (two-sided: reject where |Z_k| ≥ b_k, a/2 a side; one-sided:
    Z_k ≥ b_k) at increasing information ``fractions`` ending at 1. fractions: (K,). Returns (K,)."""
    t = np.asarray(fractions, dtype=float)
    if t.ndim != 1 or t.size == 0 or not np.all(np.diff(t) > 0) or t[0] <= 0 or not math.isclose(t[-1], 1.0):
        raise ValueError(f"information fractions must increase from above 0 to 1, got {list(fractions)}")
    if not 0 < level < 1:
        raise ValueError(f"a level lies strictly between 0 and 1, got {level}")
    sides = 2 if two_sided else 1
    side_level = level / sides
    cumulative = [spent(spending, side_level, float(f)) for f in t]
    bounds: list[float] = []
    grid = weights = density = None  # the score S_k = Z_k √t_k on the continuation region, with its sub-density
    for k, fraction in enumerate(t):
        target = (cumulative[k] - (cumulative[k - 1] if k else 0.0)) * sides  # crossing probability at look k
        if k == 0:
            bound = float(stats.norm.isf(target / sides))
        else:
            step_sd = math.sqrt(fraction - t[k - 1])
            root_t = math.sqrt(fraction)

            def crossing(b: float, grid=grid, weights=weights, density=density, step_sd=step_sd, root_t=root_t):
                upper = stats.norm.sf((b * root_t - grid) / step_sd)
                lower = stats.norm.cdf((-b * root_t - grid) / step_sd) if two_sided else 0.0
                return float(np.sum(weights * density * (upper + lower)))

            bound = float(optimize.brentq(lambda b: crossing(b) - target, 0.0, 40.0, xtol=1e-10))
        bounds.append(bound)
        if k + 1 < t.size:
            grid, weights, density = _continuation(
                bound, float(fraction), two_sided, grid, weights, density, float(t[k - 1]) if k else 0.0
            )
    return tuple(bounds)


def _continuation(bound, fraction, two_sided, grid, weights, density, previous_fraction):
    """The sub-density of S_k = Z_k √t_k on the look's continuation region, on a Simpson grid. (N,) each."""
    root_t = math.sqrt(fraction)
    low = -bound * root_t if two_sided else -TAIL * root_t
    new_grid = np.linspace(low, bound * root_t, GRID_POINTS)
    simpson = np.ones(GRID_POINTS)
    simpson[1:-1:2], simpson[2:-1:2] = 4.0, 2.0
    new_weights = simpson * (new_grid[1] - new_grid[0]) / 3
    if grid is None:
        new_density = stats.norm.pdf(new_grid / root_t) / root_t
    else:
        step_sd = math.sqrt(fraction - previous_fraction)
        kernel = stats.norm.pdf((new_grid[:, None] - grid[None, :]) / step_sd) / step_sd  # (N, N)
        new_density = kernel @ (weights * density)
    return new_grid, new_weights, new_density


@dataclass(frozen=True)
class SequentialDesign:
    """One comparison's group-sequential design. looks: the seed counts n_1 < … < n_K at which it is judged.
    level: its share of the family-wise level. margin: the equivalence margin (the compared quantity's units).
    direction_levels, equivalence_levels: (K,) nominal levels per look, two-sided for Δ = 0 and one-sided for each
    of the two one-sided equivalence tests."""

    looks: tuple[int, ...]
    level: float
    margin: float
    spending: str
    direction_levels: tuple[float, ...]
    equivalence_levels: tuple[float, ...]


def sequential_design(looks: Sequence[int], level: float, margin: float, spending: str = "obrien_fleming"):
    """The design judged at ``looks`` seeds (increasing, the last the maximum), spending ``level`` by ``spending``."""
    counts = tuple(int(n) for n in looks)
    if len(counts) == 0 or counts[0] < 2 or any(b <= a for a, b in zip(counts, counts[1:], strict=False)):
        raise ValueError(f"looks must be increasing seed counts of at least 2, got {list(looks)}")
    if not margin > 0 or not math.isfinite(margin):
        raise ValueError(f"a margin must be a positive number, got {margin}")
    if spending not in SPENDING_RULES:
        raise ValueError(f"unknown spending rule '{spending}'; choose one of: {', '.join(SPENDING_RULES)}")
    fractions = [n / counts[-1] for n in counts]
    direction = calibrated_bounds(counts, tuple(2 * spent(spending, level / 2, f) for f in fractions), True)
    equivalence = calibrated_bounds(counts, tuple(spent(spending, level, f) for f in fractions), False)
    return SequentialDesign(
        looks=counts,
        level=level,
        margin=margin,
        spending=spending,
        direction_levels=tuple(2 * tail for tail in tail_levels(counts, direction)),
        equivalence_levels=tail_levels(counts, equivalence),
    )


@dataclass(frozen=True)
class LookResult:
    """A comparison judged at one look. look: its index (0-based); seeds: n_k. verdict: AGREES, DISAGREES or
    EQUIVALENT where the look decides, INCONCLUSIVE where the last look does not, None where the seeds go on.
    within_margin: the equivalence test also rejected (a direction called inside ±margin). direction_p,
    equivalence_p: the t-tests' p-values (None without a spread), compared with the look's nominal levels."""

    look: int
    seeds: int
    verdict: Direction | None
    within_margin: bool
    comparison: Comparison
    direction_p: float | None
    equivalence_p: float | None

    @property
    def stopped(self) -> bool:
        return self.verdict is not None


def judge_look(differences: Sequence[float], design: SequentialDesign, expected: float) -> LookResult:
    """The look whose seed count is ``len(differences)`` (paired per-seed differences row − compared row, seed order),
    judged against the paper's direction ``expected`` (+1 up, −1 down). differences: (n_k,)."""
    values = np.asarray(differences, dtype=float)
    if values.size not in design.looks:
        raise ValueError(f"{values.size} seeds is not one of the design's looks {list(design.looks)}")
    look = design.looks.index(values.size)
    comparison = paired_t(values, np.zeros(values.size), distribution_free=False)
    direction_p = comparison.p_value
    equivalence_p = margin_p_value(comparison, design.margin, "equivalent")
    if comparison.se is None:  # every seed differs by the same amount: no spread to test against, so no decision
        direction_p = equivalence_p = None
    directed = _rejects(direction_p, design.direction_levels[look])
    within = _rejects(equivalence_p, design.equivalence_levels[look])
    if directed:
        verdict = Direction.AGREES if np.sign(comparison.delta.mean) == np.sign(expected) else Direction.DISAGREES
    elif within:
        verdict = Direction.EQUIVALENT
    else:
        verdict = Direction.INCONCLUSIVE if look == len(design.looks) - 1 else None
    return LookResult(look, int(values.size), verdict, within, comparison, direction_p, equivalence_p)


def _rejects(p_value, level: float):
    """Where a p-value (a float, None, or an array) is at most a look's nominal level; a look of level 0 decides
    nothing, not even where a p-value underflows to 0."""
    if p_value is None:
        return False
    if isinstance(p_value, np.ndarray):
        return (p_value <= level) & (level > 0)
    return level > 0 and p_value <= level


def first_decision(differences: Sequence[float], design: SequentialDesign, expected: float) -> LookResult:
    """The comparison judged look by look on the first n_k of ``differences`` until a look decides (or the last):
    the result a campaign that stops there reports. differences: (n,), at least the seeds of the look reached."""
    values = np.asarray(differences, dtype=float)
    for seeds in design.looks:
        if seeds > values.size:
            raise ValueError(f"the look at {seeds} seeds needs them; only {values.size} differences given")
        result = judge_look(values[:seeds], design, expected)
        if result.stopped:
            return result
    raise AssertionError("the last look always decides or says undecided")


AGREE, DISAGREE, EQUIVALENT, UNDECIDED = 1, -1, 0, 2
"""Outcome codes of :func:`decide_paths` (the verdicts AGREES, DISAGREES, EQUIVALENT, INCONCLUSIVE)."""


def decide_paths(
    differences: np.ndarray, design: SequentialDesign, expected: float, stopping_sds: Sequence[float] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`first_decision` for many simulated comparisons at once. differences: (S, n_K), each row one comparison's
    per-seed differences in seed order. stopping_sds: (K,) or None; at look k a comparison the look leaves open
    stops undecided where its differences' sd is above 0 and at most stopping_sds[k] (its maximum re-sized from its
    spread to at most n_k: reports.planning.resizing). Returns the outcome codes (S,) and the seeds each stopped at
    (S,)."""
    values = np.asarray(differences, dtype=float)
    if values.ndim != 2 or values.shape[1] < design.looks[-1]:
        raise ValueError(f"differences must be (S, n) with n ≥ {design.looks[-1]}, got {values.shape}")
    outcome = np.full(values.shape[0], UNDECIDED)
    stopped_at = np.full(values.shape[0], design.looks[-1])
    open_ = np.ones(values.shape[0], dtype=bool)
    for look, n in enumerate(design.looks):
        sample = values[:, :n]
        mean = sample.mean(axis=1)
        se = sample.std(axis=1, ddof=1) / math.sqrt(n)
        df = n - 1
        with np.errstate(divide="ignore", invalid="ignore"):  # no spread: no decision (p = 1), as judge_look takes
            direction_p = np.where(se > 0, 2 * stats.t.sf(np.abs(mean) / se, df), 1.0)
            lower = stats.t.sf((mean + design.margin) / se, df)
            upper = stats.t.cdf((mean - design.margin) / se, df)
            equivalence_p = np.where(se > 0, np.maximum(lower, upper), 1.0)
        directed = open_ & _rejects(direction_p, design.direction_levels[look])
        within = open_ & ~directed & _rejects(equivalence_p, design.equivalence_levels[look])
        outcome[directed] = np.where(np.sign(mean[directed]) == np.sign(expected), AGREE, DISAGREE)
        outcome[within] = EQUIVALENT
        stopped = directed | within
        if stopping_sds is not None:  # the rest stay UNDECIDED, at a maximum their spread re-sized to n_k or below
            spread = se * math.sqrt(n)
            stopped |= open_ & (spread > 0) & (spread <= stopping_sds[look])
        stopped_at[stopped] = n
        open_ &= ~stopped
    return outcome, stopped_at
