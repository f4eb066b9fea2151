"""How many seeds a comparison needs, planned from a pilot so the final test keeps its level: Stein's
two-stage procedure (Stein 1945).

Adding seeds "until significant" and testing with a plain t-test inflates the false-positive rate,
because the decision to stop depends on the difference seen so far. Stein's procedure decides from the
pilot's *variance only*:

1. run n₀ pilot seeds of both rows; s₀ is the sd of their per-seed differences (n₀ − 1 degrees of
   freedom);
2. the comparison needs N = max(n₀, ⌈(t(1 − α/2, n₀ − 1) + t(power, n₀ − 1))² · s₀² / δ²⌉) seeds in
   all, for a smallest effect of interest δ, level α and power;
3. after N seeds, T = Δ̄_N / (s₀ / √N) with Δ̄_N the mean of all N differences is compared with
   t(n₀ − 1) (:func:`reports.statistics.comparisons.stein_test`). Under normal seed noise Δ̄_N is independent of s₀
   (the sample mean and variance of normal draws are independent, and N depends on s₀ alone), so T is
   exactly t with n₀ − 1 degrees of freedom whatever N came out: the level holds, also when a budget
   caps N below what it asked for (the cap costs power, not level).

A row takes part in several comparisons (with the row before it and the row after it), so it runs the
largest N any of them asks; a comparison then uses every seed both of its rows ran, a number that
depends on the pilots' variances only, and keeps the level for the same reason. The tests check the
procedure end to end on simulated rows.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import stats

from reports.statistics.comparisons import LEVEL, POWER, stein_test


@dataclass(frozen=True)
class PlannedComparison:
    """One comparison's plan: its pilot spread, the smallest effect it is meant to detect, the seeds it needs.

    row, reference: the row ids compared (Δ = row − reference). key: what is compared (the table's
    metric, or an endpoint). pilot_sd: sd of the pilot's per-seed differences. needed: Stein's N.
    """

    row: str
    reference: str
    key: str
    pilot_seeds: int
    pilot_sd: float
    smallest_effect: float
    needed: int


def seeds_needed(
    pilot_differences: Sequence[float], smallest_effect: float, level: float = LEVEL, power: float = POWER
) -> int:
    """Stein's N: the seeds in all (pilot included) that detect ``smallest_effect`` with ``power`` at ``level``.

    pilot_differences: (n₀,) per-seed differences of the pilot, n₀ ≥ 2. A pilot with no spread needs no
    more seeds than it has.
    """
    pilot = np.asarray(pilot_differences, dtype=float)
    if pilot.ndim != 1 or pilot.size < 2:
        raise ValueError(f"a pilot needs at least 2 seeds of per-seed differences, got {pilot.size}")
    if not smallest_effect > 0:
        raise ValueError(f"the smallest effect of interest must be positive, got {smallest_effect}")
    df = pilot.size - 1
    factor = stats.t.ppf(1 - level / 2, df) + stats.t.ppf(power, df)
    sd = float(np.std(pilot, ddof=1))
    return max(pilot.size, math.ceil((factor * sd / smallest_effect) ** 2))


def seeds_per_row(
    plans: Sequence[PlannedComparison], pilot_seeds: int, run_seconds: Mapping[str, float], budget_seconds: float
) -> dict[str, int]:
    """Seeds each row runs: the largest N of its comparisons, within the budget.

    run_seconds: row -> the mean training time of one of its pilot runs. The budget covers every run of
    the spec, the pilot's included. When the rows' wishes exceed it, one cap c applies to every row
    (each runs min(wish, c) seeds), the largest c the budget affords; rows in no plan keep the pilot.
    """
    wishes = {row: pilot_seeds for row in run_seconds}
    for plan in plans:
        for row in (plan.row, plan.reference):
            wishes[row] = max(wishes[row], plan.needed)

    def cost(cap: int) -> float:
        return sum(min(wish, cap) * run_seconds[row] for row, wish in wishes.items())

    cap = max(wishes.values(), default=pilot_seeds)
    while cap > pilot_seeds and cost(cap) > budget_seconds:
        cap -= 1
    return {row: min(wish, cap) for row, wish in wishes.items()}


def simulate_planned_rejections(
    effect: float,
    smallest_effect: float,
    pilot_seeds: int,
    simulations: int,
    seed: int,
    max_seeds: int = 1000,
    level: float = LEVEL,
) -> float:
    """Share of simulated comparisons the whole procedure rejects: unit-sd per-seed differences of mean
    ``effect``, a pilot of ``pilot_seeds``, Stein's N (capped at ``max_seeds``), then :func:`stein_test`."""
    rng = np.random.default_rng(seed)
    rejected = 0
    for _ in range(simulations):
        pilot = effect + rng.standard_normal(pilot_seeds)
        needed = min(max_seeds, seeds_needed(pilot, smallest_effect, level))
        differences = np.concatenate([pilot, effect + rng.standard_normal(needed - pilot_seeds)])
        p_value = stein_test(differences, pilot_seeds).p_value
        rejected += p_value is not None and p_value <= level
    return rejected / simulations


@dataclass(frozen=True)
class Plan:
    """A campaign's seed plan as written by ``python -m reports.plan_seeds`` (Stein) or ``python -m
    reports.seed_design --write-plan`` (a fixed design from a basis).

    pilot_seeds: Stein's pilot (None for a fixed design, whose tests are plain paired t). seeds: row -> the
    seeds it runs (a count n in the file means 0..n-1). summary: one sentence for the report. unresolved:
    the comparisons the budget could not give the seeds they need, each with what it would need.
    """

    pilot_seeds: int | None
    seeds: dict[str, tuple[int, ...]]
    summary: str
    unresolved: list[str]


def read_plan(path: Path) -> Plan:
    """The plan in ``path`` (JSON written by :mod:`reports.plan_seeds` or :mod:`reports.seed_design`)."""
    record = json.loads(path.read_text())
    seeds = {
        row: tuple(range(given)) if isinstance(given, int) else tuple(given) for row, given in record["seeds"].items()
    }
    return Plan(record["pilot_seeds"], seeds, record["summary"], list(record["unresolved"]))
