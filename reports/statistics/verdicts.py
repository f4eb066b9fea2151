"""A report's verdicts: every comparison it shows, judged under the spec's declared study design.

Each compared row has one primary comparison (:mod:`algos.campaign.study_design`): the table's metric
against its compared row in the paper's direction, a flagged mechanism endpoint, or a margin claim
(equivalent, non-inferior). The table's primaries are its family, each holding α/m; the row's other
comparisons are secondary, tested either gated (a row's secondaries share what its primary passes on once
rejected: the graphical procedure of :mod:`reports.statistics.multiplicity`, family-wise over both) or as a
separate family at the full level. A direction is called only where the adjusted p-value is at most the
level; every undecided comparison carries the smallest effect it could have detected (80 % power at the
share of the level it is tested at, from its own spread and n). The same hypothesis reached twice (an
endpoint that is the table's metric at the final step) counts once.

With a seed plan (:mod:`reports.planning.stein_plan`), a comparison is Stein's second-stage test
(:func:`reports.statistics.comparisons.stein_test`) over every seed both rows ran, the first ``pilot_seeds`` being the pilot.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

from algos.campaign.study_design import SECONDARY_RULES
from reports.statistics.comparisons import (
    LEVEL,
    POWER,
    Comparison,
    Direction,
    compare,
    detectable_effect,
    direction_agrees,
    margin_p_value,
    stein_test,
    verdict_level,
)
from reports.statistics.multiplicity import adjust, adjusted_p_values, gated_graph

PRIMARY, SECONDARY = "primary", "secondary"


@dataclass(frozen=True)
class Claim:
    """One comparison a report judges. key: the hypothesis (two claims with one key are one test).
    expected: the direction argued for it (+1 up, −1 down, 0 no change), or None where nobody argues one.
    row: the row it belongs to. role: PRIMARY (the row's declared primary comparison) or SECONDARY.
    claim, margin: a margin claim ("equivalent", "non_inferior") tested instead of a direction."""

    key: Hashable
    comparison: Comparison | None
    expected: float | None
    row: str = ""
    role: str = SECONDARY
    claim: str | None = None
    margin: float | None = None

    @property
    def tested(self) -> bool:
        return self.comparison is not None and (self.expected is not None or self.claim is not None)

    @property
    def p_value(self) -> float | None:
        """The raw p-value of what is tested: the two-sided t's, or the margin claim's."""
        if self.comparison is None:
            return None
        if self.claim is not None:
            return margin_p_value(self.comparison, self.margin, self.claim)
        return self.comparison.p_value


@dataclass(frozen=True)
class Stop:
    """Where a group-sequential primary stopped: at ``look`` (1-based) of its ``looks``, on ``seeds`` seeds per row,
    judged for equivalence within ±``margin`` (the compared quantity's units)."""

    look: int
    looks: int
    seeds: int
    margin: float


@dataclass(frozen=True)
class Judgement:
    """A claim's verdict: its family-adjusted p-value, the effect it could have detected, and the word.

    family_size: the table's primary comparisons (m). level: the family-wise level. role: PRIMARY or
    SECONDARY. test_level: the share of the level at which ``detectable`` is stated (α/m for a primary;
    for a gated secondary, what its primary passes on once rejected). stop: where a group-sequential primary
    stopped (None for every other judgement)."""

    adjusted_p: float | None
    detectable: float | None
    verdict: Direction | None
    family_size: int
    level: float
    role: str = SECONDARY
    test_level: float | None = None
    stop: Stop | None = None

    def cell(self, comparison: Comparison | None, scale: float = 1.0, unit: str = "") -> str:
        """The verdict as a table cell: ``agrees``, or ``inconclusive; detectable ≥ 7.9 points at n = 3``; a
        sequential primary's with where it stopped, ``equivalent within ±5 points (look 2 of 9, n = 8)``."""
        if self.verdict is None or comparison is None:
            return "—"
        if self.stop is not None:
            where = f"look {self.stop.look} of {self.stop.looks}, n = {self.stop.seeds}"
            if self.verdict is Direction.EQUIVALENT:
                return f"equivalent within ±{_significant(self.stop.margin * scale)}{unit} ({where})"
            if self.verdict is Direction.INCONCLUSIVE:
                return f"undecided at its last look ({where})"
            return f"{self.verdict} ({where})"
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
    claims: Sequence[Claim], secondary: str = "gated", method: str = "holm", level: float = LEVEL, power: float = POWER
) -> list[Judgement]:
    """Every claim's judgement (same order as ``claims``), the family-wise level kept over all of them.

    The primaries are the family: each holds level/m. ``secondary`` says how the rest are tested:
    gated (the graph of :func:`reports.statistics.multiplicity.gated_graph`: a row's secondaries share what its primary
    passes on once rejected; Holm's procedure over the primaries where no row has secondaries) or
    separate (a second family at the full level). ``method`` adjusts each family of ``separate``: holm, or
    bh (Benjamini–Hochberg: the false discovery rate instead of the family-wise rate). A hypothesis whose
    comparison has no p-value keeps its place in the graph with p = 1, so it passes nothing on.
    """
    if secondary not in SECONDARY_RULES:
        raise ValueError(f"unknown secondary rule '{secondary}'; choose one of: {', '.join(SECONDARY_RULES)}")
    if secondary == "gated" and method != "holm":
        raise ValueError("a gated design keeps the family-wise rate with the graph's Holm steps; use adjust: holm")
    tests: dict[Hashable, Claim] = {}
    for claim in claims:
        if claim.tested and (claim.key not in tests or claim.role == PRIMARY):
            tests[claim.key] = claim
    rows = list(dict.fromkeys(c.row for c in tests.values() if c.role == PRIMARY))
    keys = [k for k, c in tests.items() if c.role == PRIMARY] + [
        k for k, c in tests.items() if c.role == SECONDARY and (c.row in rows or secondary == "separate")
    ]
    p_values = [tests[key].p_value for key in keys]
    secondaries = {
        row: [i for i, key in enumerate(keys) if tests[key].role == SECONDARY and tests[key].row == row] for row in rows
    }
    m = len(rows)
    if secondary == "gated":
        graph = gated_graph(list(range(m)), [secondaries[row] for row in rows])
        adjusted_list = adjusted_p_values([1.0 if p is None else p for p in p_values], graph)
        shares = [level / max(1, m)] * m + [0.0] * (len(keys) - m)
        for row in rows:
            for i in secondaries[row]:
                shares[i] = level / m / len(secondaries[row])
    else:
        adjusted_list = adjust(p_values[:m], method) + adjust(p_values[m:], method)
        shares = [level / max(1, m)] * m + [level / max(1, len(keys) - m)] * (len(keys) - m)
    adjusted = {key: None if p is None else a for key, p, a in zip(keys, p_values, adjusted_list, strict=True)}
    share_of = dict(zip(keys, shares, strict=True))
    judgements = []
    for claim in claims:
        comparison = claim.comparison
        if claim.key not in adjusted or comparison is None:
            judgements.append(Judgement(None, None, None, m, level, claim.role))
            continue
        judged = tests[claim.key]
        adjusted_p, test_level = adjusted[claim.key], share_of[claim.key]
        detectable = (
            detectable_effect(comparison.se, comparison.df, test_level, power)
            if comparison.se is not None and comparison.df is not None and judged.claim is None
            else None
        )
        if judged.claim is not None:
            shown = adjusted_p is not None and adjusted_p <= level
            words = {"equivalent": Direction.EQUIVALENT, "non_inferior": Direction.NON_INFERIOR}
            verdict = words[judged.claim] if shown else Direction.NOT_SHOWN
        else:
            verdict = direction_agrees(comparison, judged.expected, adjusted_p, level)
        judgements.append(Judgement(adjusted_p, detectable, verdict, m, level, judged.role, test_level))
    return judgements


def resolution_note(seeds: int, family_size: int, level: float = LEVEL, power: float = POWER) -> str:
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
        f"What {seeds} seeds per row can resolve: with {family_size} primary comparisons, each at α/{family_size} "
        f"(Holm's first step), a paired primary detects with {power:.0%} power only a Δ of at least {factor:.3g} "
        f"times the sd of its per-seed differences; {exact}."
    )


def _significant(value: float) -> str:
    return f"{value:.2g}" if abs(value) < 10 else f"{value:.0f}"
