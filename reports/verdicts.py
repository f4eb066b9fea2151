"""A report's verdicts: every directional comparison it shows, judged as one family.

A table is a family: its rows' comparisons on the table's metric and every declared endpoint. Their raw
p-values are adjusted together (:func:`reports.stats.adjust`, Holm by default), a direction is called
only where the adjusted p-value is at most the level, and every comparison that is not decided carries
the smallest effect it could have detected (80 % power at the family's per-comparison level, from its
own spread and n). The same hypothesis reached twice (an endpoint that is the table's metric at the
final step) counts once.

With a seed plan (:mod:`reports.seed_plan`), a comparison is Stein's second-stage test
(:func:`reports.stats.stein_test`) over every seed both rows ran, the first ``pilot_seeds`` being the pilot.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

from reports.stats import (
    LEVEL,
    POWER,
    Comparison,
    Direction,
    adjust,
    compare,
    detectable_effect,
    direction_agrees,
    format_p,
    stein_test,
    verdict_level,
)


@dataclass(frozen=True)
class Claim:
    """One comparison a report judges. key: the hypothesis (two claims with one key are one test).
    expected: the direction argued for it (+1 up, −1 down, 0 no change), or None where nobody argues one."""

    key: Hashable
    comparison: Comparison | None
    expected: float | None


@dataclass(frozen=True)
class Judgement:
    """A claim's verdict: its family-adjusted p-value, the effect it could have detected, and the word."""

    adjusted_p: float | None
    detectable: float | None
    verdict: Direction | None
    family_size: int
    level: float

    def cell(self, comparison: Comparison | None, scale: float = 1.0, unit: str = "") -> str:
        """The verdict as a table cell: ``agrees``, or ``inconclusive; detectable ≥ 7.9 points at n = 3``."""
        if self.verdict is None or comparison is None:
            return "—"
        if comparison.p_value is None:
            fewest = min(comparison.n, comparison.n_reference)
            return f"{self.verdict} ({f'n = {fewest}' if fewest < 2 else 'no spread'})"
        if self.verdict is Direction.INCONCLUSIVE and self.detectable is not None:
            return f"inconclusive; detectable ≥ {_significant(self.detectable * scale)}{unit} at n = {comparison.n}"
        return str(self.verdict)


def compare_seeds(
    mine: Mapping[int, float], theirs: Mapping[int, float], pilot_seeds: int | None = None
) -> Comparison | None:
    """A row's seed -> value against its compared row's: paired t on shared seeds, Welch for different
    seed sets, or Stein's test when the campaign was planned with ``pilot_seeds`` (and both rows ran them)."""
    if not mine or not theirs:
        return None
    if pilot_seeds is not None:
        shared = sorted(set(mine) & set(theirs))
        if set(range(pilot_seeds)) <= set(shared):
            return stein_test([mine[seed] - theirs[seed] for seed in shared], pilot_seeds)
    return compare(mine, theirs)


def judge_family(
    claims: Sequence[Claim], method: str = "holm", level: float = LEVEL, power: float = POWER
) -> list[Judgement]:
    """Every claim's judgement, the claims with a direction adjusted as one family (same order as ``claims``)."""
    tests: dict[Hashable, float | None] = {}
    for claim in claims:
        if claim.expected is not None and claim.comparison is not None:
            tests.setdefault(claim.key, claim.comparison.p_value)
    keys = list(tests)
    adjusted = dict(zip(keys, adjust([tests[key] for key in keys], method), strict=True))
    family_size = sum(p is not None for p in tests.values())
    per_test = verdict_level(family_size, level)
    judgements = []
    for claim in claims:
        comparison = claim.comparison
        if claim.expected is None or comparison is None:
            judgements.append(Judgement(None, None, None, family_size, level))
            continue
        adjusted_p = adjusted[claim.key]
        detectable = (
            detectable_effect(comparison.se, comparison.df, per_test, power)
            if comparison.se is not None and comparison.df is not None
            else None
        )
        verdict = direction_agrees(comparison, claim.expected, adjusted_p, level)
        judgements.append(Judgement(adjusted_p, detectable, verdict, family_size, level))
    return judgements


def resolution_note(seeds: int, family_size: int, method: str, level: float = LEVEL, power: float = POWER) -> str:
    """What a campaign's seeds can resolve: the detectable effect of a paired comparison in units of the sd of
    its per-seed differences, and whether the exact sign-flip check can reach the level at all."""
    if seeds < 2:
        return f"With {seeds} seed per row no comparison has a spread to test: every verdict is inconclusive (n = 1)."
    factor = detectable_effect(1 / math.sqrt(seeds), seeds - 1, verdict_level(family_size, level), power)
    floor = 2.0 / 2**seeds
    exact = (
        f"the exact sign-flip check cannot reach {level:g} at this n (its smallest p is {floor:.3g})"
        if floor > level
        else f"the exact sign-flip check can reach p = {floor:.3g}"
    )
    return (
        f"What {seeds} seeds per row can resolve: with {family_size} directional comparisons adjusted by "
        f"{'Holm' if method == 'holm' else 'Benjamini–Hochberg'}, a paired comparison detects with "
        f"{power:.0%} power only a Δ of at least {factor:.3g} times the sd of its per-seed differences; {exact}."
    )


def p_cells(comparison: Comparison | None, judgement: Judgement) -> list[str]:
    """Raw p, adjusted p and the distribution-free p (with '(floor …)' where it can never reach the level)."""
    if comparison is None:
        return ["—", "—", "—"]
    exact = format_p(comparison.exact_p)
    if comparison.exact_p_floor is not None and comparison.exact_p_floor > judgement.level:
        exact += f" (≥ {comparison.exact_p_floor:.2g} at this n)"
    return [format_p(comparison.p_value), format_p(judgement.adjusted_p), exact]


def _significant(value: float) -> str:
    return f"{value:.2g}" if abs(value) < 10 else f"{value:.0f}"
