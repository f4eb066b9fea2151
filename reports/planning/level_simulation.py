"""Whether a table's sequential decisions keep their level when the seeds are not normal: the family-wise rate of a
wrong claim and each comparison's rate beside its share of the level, under several shapes of seed noise, at the
looks the campaign's plan gives each primary.

Each simulated table runs every primary of the spec at its looks from the plan a campaign writes
(:func:`reports.planning.sequential_plan.sequential_plan` on the spec's design basis) and judges it look by look
(:func:`reports.statistics.sequential.decide_paths`) in one of three scenarios: every Δ = 0 (a wrong claim is a
direction), every Δ at the margin in the paper's direction (equivalence, or the wrong direction) and at the margin
against it (equivalence, or the paper's direction). Shapes of the per-seed noise (:data:`SHAPES`):

- ``normal``, ``student_t3``, ``skewed_1``: each comparison's per-seed differences drawn with its design sd, normal,
  Student t on 3 df, or a gamma of skewness 1 (its sign alternating over the table's comparisons);
- ``collapsing_rows``: each row's own seed noise has skewness −2 (a row that now and then does much worse), half of
  a seed's noise is shared by every row, and rows' sds spread over 0.3-9 points; the differences' skewness comes out
  between about −1 and 1;
- ``binomial``: each row's accuracy is a count of 1024 problems solved at 75 % plus a seed's training noise (1 point,
  half shared), so the differences are quantised and can tie;
- ``skewed_2``: differences of skewness 2, beyond the envelope the boundaries are calibrated on
  (:mod:`reports.statistics.envelope`): what the level comes to there.

``--boundaries z_matched`` judges with the boundaries the design used before the envelope (the z statistics' own,
compared with the t-test's p-value) on the same draws. ``--maxima`` judges the spec under another rule for its
maxima than it declares (``basis``: each primary's last look fixed from the basis; ``variance``: boundaries spent to
the cap and the maximum re-sized at every look from the simulated seeds' spread, :mod:`reports.planning.resizing`).

Command line: ``python -m reports.planning.level_simulation --spec dapo_table1 vapo_table1 [--simulations 20000]
[--maxima variance]``.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass

import numpy as np
from scipy import stats

from algos.campaign.ablations import AblationSpec, read_spec
from algos.campaign.study_design import MAXIMA_RULES
from reports.planning.fixed_design import read_basis
from reports.planning.resizing import stopping_sds
from reports.planning.sequential_plan import sequential_plan, with_maxima
from reports.statistics.envelope import envelope_draws
from reports.statistics.sequential import (
    AGREE,
    DISAGREE,
    EQUIVALENT,
    SequentialDesign,
    boundaries,
    decide_paths,
    sequential_design,
)

SHAPES = ("normal", "student_t3", "skewed_1", "collapsing_rows", "binomial", "skewed_2")
SCENARIOS = ("null", "margin", "against")
PROBLEMS = 1024
ROW_SD_RANGE = (0.003, 0.09)  # collapsing rows: each row's seed sd, 0.3 to 9 points


@dataclass(frozen=True)
class LevelRates:
    """One table under one shape and scenario. wrong: the share of tables with any wrong claim (its Monte-Carlo
    s.e. in wrong_se); per_comparison: row -> its share of wrong claims; level: each comparison's share of the level;
    decided: row -> the share decided the right way (equivalent at Δ = 0, the true direction at the margin)."""

    spec: str
    shape: str
    scenario: str
    simulations: int
    wrong: float
    wrong_se: float
    per_comparison: dict[str, float]
    level: float
    decided: dict[str, float]


def z_matched_design(looks, level: float, margin: float, spending: str) -> SequentialDesign:
    """The design with the z statistics' boundaries as nominal levels for the t-test (the rule before the envelope)."""
    fractions = tuple(n / looks[-1] for n in looks)
    return SequentialDesign(
        tuple(looks),
        level,
        margin,
        spending,
        tuple(float(2 * stats.norm.sf(b)) for b in boundaries(fractions, level, spending, True)),
        tuple(float(stats.norm.sf(b)) for b in boundaries(fractions, level, spending, False)),
    )


def simulate(
    spec: AblationSpec, shape: str, scenario: str, simulations: int, seed: int, rule: str, maxima: str | None = None
) -> LevelRates:
    """The rates over ``simulations`` tables (see the module's docstring); ``maxima``: the rule for the maxima (None:
    the spec's own)."""
    spec = spec if maxima is None else with_maxima(spec, maxima)
    plan = sequential_plan(spec, read_basis(spec.design.basis), PROBLEMS)
    resized = plan["maxima"] == "variance"
    comparisons = plan["comparisons"]
    seeds = max(c["looks"][-1] for c in comparisons)
    rng = np.random.default_rng(seed)
    rows = _row_values(spec, shape, rng, (simulations, seeds))
    make = sequential_design if rule == "envelope" else z_matched_design
    wrong = np.zeros(simulations, dtype=bool)
    per_comparison, decided = {}, {}
    for index, c in enumerate(comparisons):
        design = make(c["looks"], plan["level"], c["margin"], plan["spending"])
        stops = (
            stopping_sds(c["looks"], c["margin"], plan["level"], plan["spending"], plan["assurance"], plan["power"])
            if resized
            else None
        )
        expected = c["expected"]
        shift = {"null": 0.0, "margin": expected * c["margin"], "against": -expected * c["margin"]}[scenario]
        if rows is None:
            noise = c["design_sd"] * _difference_noise(shape, rng, (simulations, seeds))
            differences = (noise if index % 2 else -noise) + shift
        else:
            differences = rows[c["row"]] - rows[c["compared_with"]] + shift
        outcome, _ = decide_paths(differences, design, expected, stops)
        wrong_claims = {"null": (AGREE, DISAGREE), "margin": (EQUIVALENT, DISAGREE), "against": (EQUIVALENT, AGREE)}
        right = {"null": EQUIVALENT, "margin": AGREE, "against": DISAGREE}[scenario]
        bad = np.isin(outcome, wrong_claims[scenario])
        per_comparison[c["row"]] = float(bad.mean())
        decided[c["row"]] = float(np.mean(outcome == right))
        wrong |= bad
    rate = float(wrong.mean())
    return LevelRates(
        spec=spec.name,
        shape=shape,
        scenario=scenario,
        simulations=simulations,
        wrong=rate,
        wrong_se=math.sqrt(max(rate * (1 - rate), 1e-12) / simulations),
        per_comparison=per_comparison,
        level=plan["level"],
        decided=decided,
    )


def _difference_noise(shape: str, rng: np.random.Generator, size: tuple[int, int]) -> np.ndarray:
    """Standardised per-seed differences of a shape drawn per comparison. (S, n)."""
    if shape.startswith("skewed_"):
        return envelope_draws("skewed_up", rng, size, skewness=float(shape.removeprefix("skewed_")))
    return envelope_draws(shape, rng, size)


def _row_values(spec: AblationSpec, shape: str, rng: np.random.Generator, size: tuple[int, int]):
    """Row -> (S, n) values for the shapes drawn row by row (None for those drawn per comparison)."""
    if shape not in ("collapsing_rows", "binomial"):
        return None
    shared = rng.standard_normal(size)
    if shape == "collapsing_rows":
        sds = np.geomspace(*ROW_SD_RANGE, len(spec.rows))
        own = {row.id: -envelope_draws("skewed_up", rng, size, skewness=2.0) for row in spec.rows}
        return {row.id: sd * math.sqrt(0.5) * (shared + own[row.id]) for row, sd in zip(spec.rows, sds, strict=True)}
    values = {}
    for row in spec.rows:
        chance = np.clip(0.75 + 0.01 * math.sqrt(0.5) * (shared + rng.standard_normal(size)), 0.0, 1.0)
        values[row.id] = rng.binomial(PROBLEMS, chance) / PROBLEMS
    return values


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m reports.planning.level_simulation", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--spec", nargs="+", default=["dapo_table1", "vapo_table1"], help="tables to simulate")
    parser.add_argument("--shapes", nargs="+", choices=SHAPES, default=list(SHAPES), help="shapes of the seed noise")
    parser.add_argument("--simulations", type=int, default=20_000, help="tables per shape and scenario")
    parser.add_argument(
        "--boundaries", choices=("envelope", "z_matched"), default="envelope", help="the rule judged (see above)"
    )
    parser.add_argument("--maxima", choices=MAXIMA_RULES, help="the rule for the maxima (default: each spec's own)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    for name in args.spec:
        spec = read_spec(name)
        maxima = args.maxima or spec.design.sequential.maxima
        print(f"## {name}: {args.boundaries} boundaries, maxima from the {maxima}, {args.simulations} tables a cell")
        print(
            "| shape | scenario | wrong claims per table | worst comparison's rate / its level | decided the right "
            "way, mean (least) |"
        )
        print("|---|---|---|---|---|")
        for shape in args.shapes:
            for scenario in SCENARIOS:
                r = simulate(spec, shape, scenario, args.simulations, args.seed, args.boundaries, maxima)
                worst = max(r.per_comparison, key=r.per_comparison.get)
                decided = list(r.decided.values())
                print(
                    f"| {shape} | {scenario} | {r.wrong:.4f} ± {r.wrong_se:.4f} "
                    f"| {r.per_comparison[worst] / r.level:.2f} ({worst}) "
                    f"| {np.mean(decided):.2f} ({min(decided):.2f}) |",
                    flush=True,
                )
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
