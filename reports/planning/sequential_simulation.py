"""Simulated tables under the group-sequential design, through the public functions: the family-wise rate of wrong
claims where every true effect is 0 (a direction called) and where every one sits exactly at ±margin (equivalence
claimed, or the wrong direction), the power to decide each primary in both cases, and the seeds each row runs,
beside the fixed design's from the same basis.

Seed noise is shaped like the measured: each row's per-seed sd spread evenly on a log scale over
:data:`SD_RANGE` (0.3 to 9 points), one row bimodal, seed i's noise half shared by every row
(:func:`reports.planning.design_simulation.draw_table`). Each simulated table draws an independent 3-seed basis,
sizes every primary's looks from it (:func:`reports.planning.sequential_plan.comparison_looks`, on the fixed
design's design sd), then draws the tested seeds afresh and judges each primary look by look
(:func:`reports.statistics.sequential.decide_paths`) at its share α/m of the level. A row runs until every
comparison it takes part in has stopped (a cumulative table's row is compared with the rows before and after it).
The looks are the spec's declared ones (:data:`LOOKS` for a spec without a sequential design). Under ``--maxima
variance`` every primary's boundaries are spent over the looks to the last (the cap) and its maximum is re-sized at
each look from the spread of its seeds (:mod:`reports.planning.resizing`); the basis then gives only where it
starts. ``--sd-range`` sets the rows' per-seed sds (in points; default 0.3 to 9).

Command line: ``python -m reports.planning.sequential_simulation --spec dapo_table1 vapo_table1 [--simulations 1000]
[--spending obrien_fleming] [--maxima variance] [--sd-range 1.8 3.1]``.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

import numpy as np

from algos.campaign.ablations import AblationSpec, read_spec
from algos.campaign.study_design import MAXIMA_RULES, SPENDING_RULES
from reports.planning.design_simulation import draw_table, shifts_for, simulated_basis
from reports.planning.fixed_design import fixed_design, seeds_per_row
from reports.planning.resizing import RESIZING_POWER, stopping_sds
from reports.planning.sequential_plan import ASSURANCE, comparison_looks
from reports.statistics.comparisons import LEVEL
from reports.statistics.sequential import AGREE, DISAGREE, EQUIVALENT, decide_paths, sequential_design

SD_RANGE = (0.003, 0.09)  # per-seed sd of a row: 0.3 to 9 points of accuracy, the spread the campaigns measured
LOOKS = (4, 8, 12, 16, 20, 24, 32, 40, 48, 64, 80, 96, 128)
BASIS_SEEDS = 3


@dataclass(frozen=True)
class SequentialRates:
    """One table's simulated rates. scenario: "null" (every Δ = 0) or "margin" (every Δ at ±margin in the paper's
    direction). wrong: the share of tables with any wrong claim (with its Monte-Carlo s.e.). decided: per primary, the
    share decided the right way (equivalent at the null, agrees at the margin). seeds_mean, seeds_p95: per row, the
    seeds it ran; fixed_seeds: per row, the fixed design's from the same bases (mean; its own assurance, and a
    directional decision only)."""

    spec: str
    scenario: str
    simulations: int
    wrong: float
    wrong_se: float
    decided: dict[str, float]
    seeds_mean: dict[str, float]
    seeds_p95: dict[str, float]
    fixed_seeds: dict[str, float]


def simulate(
    spec: AblationSpec,
    scenario: str,
    simulations: int,
    seed: int,
    spending: str,
    assurance: float = ASSURANCE,
    maxima: str = MAXIMA_RULES[0],
    sd_range: tuple[float, float] = SD_RANGE,
) -> SequentialRates:
    """The sequential design's rates over ``simulations`` tables of one scenario (see the module's docstring), the
    maxima set by the rule ``maxima``, the rows' per-seed sds spread over ``sd_range``."""
    primaries = [row for row in spec.rows if row.primary is not None]
    if any(row.primary.endpoint is not None or row.primary.claim is not None for row in primaries):
        raise ValueError(f"spec '{spec.name}': the simulation covers directional primaries on the table's metric only")
    level = LEVEL / len(primaries)
    declared = spec.design.sequential.looks if spec.design and spec.design.sequential else LOOKS
    resized = maxima == "variance"
    stop_sds = (
        {  # the re-sizing rule's thresholds depend on the design alone, not on the basis
            row.id: stopping_sds(declared, row.primary.smallest_effect, level, spending, assurance, RESIZING_POWER)
            for row in primaries
        }
        if resized
        else {}
    )
    bimodal = primaries[len(primaries) // 2].id
    shifts = shifts_for(spec, scenario == "margin")
    rng = np.random.default_rng(seed)
    wrong, right = 0, {row.id: 0 for row in primaries}
    ran: dict[str, list[int]] = {row.id: [] for row in spec.rows}
    fixed: dict[str, list[int]] = {row.id: [] for row in spec.rows}
    for _ in range(simulations):
        first = draw_table(spec, {row.id: BASIS_SEEDS for row in spec.rows}, shifts, rng, bimodal, sd_range)
        basis = simulated_basis(spec, first)
        for row_id, count in seeds_per_row(spec, fixed_design(spec, basis)).items():
            fixed[row_id].append(count)
        designs = fixed_design(spec, basis, assurance=assurance)
        looks = {
            d.row: declared if resized else comparison_looks(d.design_sd, d.smallest_effect, level, declared, spending)
            for d in designs
        }
        most = max(max(schedule) for schedule in looks.values())
        drawn = draw_table(spec, {row.id: most for row in spec.rows}, shifts, rng, bimodal, sd_range)
        stops = {row.id: 0 for row in spec.rows}
        any_wrong = False
        for row in primaries:
            design = sequential_design(looks[row.id], level, row.primary.smallest_effect, spending)
            mine, theirs = drawn[row.id], drawn[row.compare_to]
            differences = np.array([[mine[s] - theirs[s] for s in range(most)]])
            expected = 1.0 if row.primary.direction == "up" else -1.0
            outcome, stopped = decide_paths(differences, design, expected, stop_sds.get(row.id))
            code, n = int(outcome[0]), int(stopped[0])
            for row_id in (row.id, row.compare_to):
                stops[row_id] = max(stops[row_id], n)
            if scenario == "null":
                any_wrong |= code in (AGREE, DISAGREE)
                right[row.id] += code == EQUIVALENT
            else:
                any_wrong |= code in (EQUIVALENT, DISAGREE)
                right[row.id] += code == AGREE
        wrong += any_wrong
        for row_id, n in stops.items():
            ran[row_id].append(n)
    rate = wrong / simulations
    return SequentialRates(
        spec=spec.name,
        scenario=scenario,
        simulations=simulations,
        wrong=rate,
        wrong_se=float(np.sqrt(max(rate * (1 - rate), 1e-12) / simulations)),
        decided={row: count / simulations for row, count in right.items()},
        seeds_mean={row: float(np.mean(counts)) for row, counts in ran.items()},
        seeds_p95={row: float(np.percentile(counts, 95, method="higher")) for row, counts in ran.items()},
        fixed_seeds={row: float(np.mean(counts)) for row, counts in fixed.items()},
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m reports.planning.sequential_simulation", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--spec", nargs="+", default=["dapo_table1", "vapo_table1"], help="tables to simulate")
    parser.add_argument("--simulations", type=int, default=1000, help="tables per scenario")
    parser.add_argument("--spending", choices=SPENDING_RULES, default="obrien_fleming", help="the spending rule")
    parser.add_argument("--assurance", type=float, default=ASSURANCE, help="the basis variance's upper bound sized for")
    parser.add_argument("--maxima", choices=MAXIMA_RULES, default=MAXIMA_RULES[0], help="the rule for the maxima")
    parser.add_argument(
        "--sd-range", type=float, nargs=2, default=[100 * sd for sd in SD_RANGE], help="rows' per-seed sds, in points"
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    sd_range = (args.sd_range[0] / 100, args.sd_range[1] / 100)
    for name in args.spec:
        spec = read_spec(name)
        results = {
            scenario: simulate(
                spec, scenario, args.simulations, args.seed, args.spending, args.assurance, args.maxima, sd_range
            )
            for scenario in ("null", "margin")
        }
        null, margin = results["null"], results["margin"]
        print(
            f"## {spec.name}: {args.spending}, maxima from the {args.maxima}, rows' sds {args.sd_range[0]:g}-"
            f"{args.sd_range[1]:g} points, {args.simulations} tables a scenario"
        )
        print(
            f"wrong claims per table: {null.wrong:.3f} ± {null.wrong_se:.3f} at Δ = 0 (a direction), "
            f"{margin.wrong:.3f} ± {margin.wrong_se:.3f} at ±margin (equivalence or the wrong direction)"
        )
        print(
            f"runs per table, mean: {sum(null.seeds_mean.values()):.1f} at Δ = 0, {sum(margin.seeds_mean.values()):.1f} "
            f"at ±margin (the fixed design's: {sum(null.fixed_seeds.values()):.1f})"
        )
        print(
            "| row | decided at Δ = 0 (equivalent) | decided at ±margin (agrees) | seeds at Δ = 0: mean, 95th pct "
            "| at ±margin: mean, 95th pct | fixed design's seeds |"
        )
        print("|---|---|---|---|---|---|")
        for row in spec.rows:
            print(
                f"| {row.id} | {_share(null.decided.get(row.id))} | {_share(margin.decided.get(row.id))} "
                f"| {null.seeds_mean[row.id]:.1f}, {null.seeds_p95[row.id]:.0f} "
                f"| {margin.seeds_mean[row.id]:.1f}, {margin.seeds_p95[row.id]:.0f} | {null.fixed_seeds[row.id]:.1f} |"
            )
        print()
    return 0


def _share(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


if __name__ == "__main__":
    sys.exit(main())
