"""Simulated tables through the public functions: the family-wise false-positive rate under the global null,
the power at the declared smallest effects, and the seeds per row a design asks, for the fixed design and
for Stein's two-stage plan.

Seed noise is shaped like the measured: each row's per-seed differences against its compared row have
their own sd (spread evenly on a log scale over a 10× range), one row's are bimodal (a run lands in one of
two modes ± its sd with equal chance, which is also its sd), and seed i of every row shares its random
streams (the rows of a campaign are paired by seed). Each simulated table:

- fixed: draws an independent basis of ``basis_seeds`` per row, sizes every primary with
  :func:`reports.planning.fixed_design.fixed_design`, then draws the tested seeds afresh;
- stein: draws a pilot of ``basis_seeds`` per row, sizes each comparison with
  :func:`reports.planning.stein_plan.seeds_needed` at its share of the level, then adds the seeds and tests every
  comparison with :func:`reports.statistics.comparisons.stein_test` on the pilot's degrees of freedom;

then judges the primaries as one family (:func:`reports.statistics.verdicts.judge_family`). A false positive is any
primary called under the global null; power is the share of primaries called in their declared direction
when every row differs by its smallest effect.

Command line: ``python -m reports.planning.design_simulation --spec vapo_table1 [--simulations 2000]``.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass

import numpy as np

from algos.campaign.ablations import AblationSpec, Row, read_spec
from reports.planning.fixed_design import TABLE_QUANTITY, Basis, fixed_design, seeds_per_row
from reports.planning.stein_plan import PlannedComparison, seeds_needed
from reports.planning.stein_plan import seeds_per_row as stein_seeds_per_row
from reports.statistics.comparisons import LEVEL, Comparison, paired_t, stein_test
from reports.statistics.verdicts import PRIMARY, Claim, judge_family

DESIGNS = ("fixed", "stein")
SD_RANGE = (0.005, 0.05)  # per-seed sd of a row's differences: half a point to five points of accuracy
CORRELATION = 0.5  # the share of a seed's noise common to every row run with that seed
MAX_SIMULATED_SEEDS = 200


@dataclass(frozen=True)
class SimulatedRates:
    """One design's simulated rates. false_positive: share of null tables with any primary called (with its
    Monte-Carlo s.e.); power: share of primaries called in their direction under the alternative (s.e.);
    least_power: the lowest row's; mean_seeds: the seeds per row the design asked, averaged."""

    design: str
    simulations: int
    false_positive: float
    false_positive_se: float
    power: float
    power_se: float
    least_power: float
    mean_seeds: float


def noise_shape(spec: AblationSpec, sd_range: tuple[float, float] = SD_RANGE) -> dict[str, float]:
    """Row -> the sd of its per-seed noise: evenly spaced on a log scale over ``sd_range``, in row order."""
    rows = [row.id for row in spec.rows]
    return dict(zip(rows, np.geomspace(*sd_range, len(rows)).tolist(), strict=True))


def draw_table(
    spec: AblationSpec,
    seeds: dict[str, int],
    shifts: dict[str, float],
    rng: np.random.Generator,
    bimodal: str,
    sd_range: tuple[float, float] = SD_RANGE,
) -> dict[str, dict[int, float]]:
    """Row -> seed -> value: a shared per-seed component, each row's own noise, its shift; ``bimodal`` ± its sd."""
    sds = noise_shape(spec, sd_range)
    most = max(seeds.values())
    shared = rng.standard_normal(most)
    values = {}
    for row in spec.rows:
        n = seeds[row.id]
        own = rng.standard_normal(n)
        if row.id == bimodal:
            own = rng.choice([-1.0, 1.0], n)
        noise = np.sqrt(CORRELATION) * shared[:n] + np.sqrt(1 - CORRELATION) * own
        values[row.id] = {seed: 0.5 + shifts.get(row.id, 0.0) + sds[row.id] * noise[seed] for seed in range(n)}
    return values


def shifts_for(spec: AblationSpec, alternative: bool) -> dict[str, float]:
    """Each row's mean: 0 under the null; under the alternative each compared row sits its smallest effect from
    its compared row in its declared direction (cumulative rows add up along the ladder)."""
    shifts: dict[str, float] = {}
    for row in spec.rows:
        base = shifts.get(row.compare_to, 0.0) if row.compare_to else 0.0
        step = 0.0
        if alternative and row.primary is not None:
            step = row.primary.smallest_effect * (1.0 if row.primary.direction == "up" else -1.0)
        shifts[row.id] = base + step
    return shifts


def simulated_basis(spec: AblationSpec, first: dict[str, dict[int, float]]) -> Basis:
    """A design basis of the drawn seeds ``first`` (row -> seed -> value of the table's metric), without costs."""
    return Basis(
        spec=spec.name,
        metric=spec.metric,
        problems=1,
        seeds=tuple(sorted(next(iter(first.values())))),
        values={row: {TABLE_QUANTITY: values} for row, values in first.items()},
        run_seconds={},
        eval_seconds_per_problem=0.0,
        provenance={},
    )


def simulate(spec: AblationSpec, design: str, simulations: int, seed: int, basis_seeds: int = 3) -> SimulatedRates:
    """The design's rates over ``simulations`` null and as many alternative tables (see the module's docstring)."""
    if design not in DESIGNS:
        raise ValueError(f"unknown design '{design}'; choose one of: {', '.join(DESIGNS)}")
    table_rows = [row for row in spec.rows if row.primary is not None]
    if any(row.primary.endpoint is not None or row.primary.claim is not None for row in table_rows):
        raise ValueError(f"spec '{spec.name}': the simulation covers directional primaries on the table's metric only")
    bimodal = table_rows[len(table_rows) // 2].id
    rng = np.random.default_rng(seed)
    false_positives, called, seeds_asked = 0, np.zeros(len(table_rows)), []
    for alternative in (False, True):
        shifts = shifts_for(spec, alternative)
        for _ in range(simulations):
            first = draw_table(spec, {row.id: basis_seeds for row in spec.rows}, shifts, rng, bimodal)
            seeds = _seeds(spec, design, first, basis_seeds)
            seeds_asked.append(np.mean(list(seeds.values())))
            drawn = draw_table(spec, seeds, shifts, rng, bimodal)
            if design == "stein":  # the pilot is part of the tested seeds
                drawn = {row: {**values, **first[row]} for row, values in drawn.items()}
            claims = [
                Claim(row.id, _comparison(drawn, row, design, basis_seeds), _sign(row), row.id, PRIMARY)
                for row in table_rows
            ]
            judgements = judge_family(claims, "gated")
            hits = [j.adjusted_p is not None and j.adjusted_p <= LEVEL for j in judgements]
            if alternative:
                called += [
                    hit and np.sign(claim.comparison.delta.mean) == claim.expected
                    for hit, claim in zip(hits, claims, strict=True)
                ]
            else:
                false_positives += any(hits)
    rate, power = false_positives / simulations, called / simulations
    return SimulatedRates(
        design=design,
        simulations=simulations,
        false_positive=rate,
        false_positive_se=float(np.sqrt(max(rate * (1 - rate), 1e-12) / simulations)),
        power=float(power.mean()),
        power_se=float(np.sqrt(power.mean() * (1 - power.mean()) / (simulations * len(table_rows)))),
        least_power=float(power.min()),
        mean_seeds=float(np.mean(seeds_asked)),
    )


def _seeds(spec: AblationSpec, design: str, first: dict[str, dict[int, float]], basis_seeds: int) -> dict[str, int]:
    """Seeds per row the design asks from its first draw (the basis, or Stein's pilot), capped for speed."""
    if design == "fixed":
        wanted = seeds_per_row(spec, fixed_design(spec, simulated_basis(spec, first)))
    else:
        share = LEVEL / sum(row.primary is not None for row in spec.rows)
        plans = []
        for row in spec.rows:
            if row.primary is None:
                continue
            differences = [first[row.id][s] - first[row.compare_to][s] for s in range(basis_seeds)]
            effect = row.primary.smallest_effect
            sd = float(np.std(differences, ddof=1))
            needed = seeds_needed(differences, effect, share)
            plans.append(PlannedComparison(row.id, row.compare_to, spec.metric, basis_seeds, sd, effect, needed))
        wanted = stein_seeds_per_row(plans, basis_seeds, {row.id: 1.0 for row in spec.rows}, math.inf)
    return {row: min(count, MAX_SIMULATED_SEEDS) for row, count in wanted.items()}


def _comparison(drawn: dict[str, dict[int, float]], row: Row, design: str, basis_seeds: int) -> Comparison:
    mine, theirs = drawn[row.id], drawn[row.compare_to]
    shared = sorted(set(mine) & set(theirs))
    if design == "stein":
        return stein_test([mine[s] - theirs[s] for s in shared], basis_seeds)
    return paired_t([mine[s] for s in shared], [theirs[s] for s in shared], distribution_free=False)


def _sign(row: Row) -> float:
    return 1.0 if row.primary.direction == "up" else -1.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reports.planning.design_simulation", description=__doc__.split("\n\n")[0])
    parser.add_argument("--spec", default="vapo_table1", help="the table whose rows and effects are simulated")
    parser.add_argument("--simulations", type=int, default=2000, help="null tables, and as many alternative ones")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    spec = read_spec(args.spec)
    print("| design | family-wise false-positive rate | power at the smallest effects (least row) | seeds per row |")
    print("|---|---|---|---|")
    for design in DESIGNS:
        r = simulate(spec, design, args.simulations, args.seed)
        print(
            f"| {design} | {r.false_positive:.3f} ± {r.false_positive_se:.3f} | {r.power:.3f} ± {r.power_se:.3f} "
            f"({r.least_power:.3f}) | {r.mean_seeds:.1f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
