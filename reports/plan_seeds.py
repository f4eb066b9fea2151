"""A spec's seed plan from its pilot runs: how many seeds each row runs (:mod:`reports.planning.stein_plan`).

The pilot is seeds 0..n₀−1 of every row (the spec's ``plan.pilot_seeds``). For every directional
comparison of the report's family (the table's rows that have a paper number, every declared
endpoint), Stein's N is computed from the pilot's per-seed differences, for the comparison's declared
smallest effect of interest, at the family's per-comparison level (0.05/m, Holm's first step) and 80 %
power. Each row runs the largest N of its comparisons, every row under one cap that keeps the spec's
runs within ``plan.budget`` of training time (measured on the pilot). The plan names every comparison
the budget could not serve, with the seeds it would need.

Command line: ``python -m reports.plan_seeds --spec dapo_table1 --runs results/runs
--out results/plans/dapo_table1.json``.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

from algos.campaign.ablations import AblationSpec, read_spec
from algos.config.presets import ConfigError
from algos.trainer.run_files import write_json
from reports.analysis.family import Analysis, analyse
from reports.planning.stein_plan import PlannedComparison, seeds_needed, seeds_per_row
from reports.statistics.comparisons import verdict_level
from reports.statistics.multiplicity import ADJUSTMENTS


def pilot_differences(spec: AblationSpec, analysis: Analysis) -> list[tuple[str, str, str, list[float], float]]:
    """Each directional comparison's (row, reference, what is compared, pilot per-seed differences, smallest effect)."""
    plan = spec.plan
    values_of = {result.row.id: result.values for result in analysis.rows}
    found: dict[tuple[str, str], tuple[str, str, str, list[float], float]] = {}
    for result in analysis.rows:
        row = result.row
        if result.comparison is not None and result.paper_delta is not None:
            mine, theirs = values_of[row.id], values_of[row.compare_to]
            differences = [mine[seed] - theirs[seed] for seed in range(plan.pilot_seeds)]
            found[(row.id, spec.metric)] = (row.id, row.compare_to, spec.metric, differences, plan.smallest_effect)
    for result in analysis.endpoints:
        row, endpoint = result.row, result.endpoint
        if result.comparison is None:
            continue
        what = f"{endpoint.metric} ({result.window[0]}-{result.window[1]})"
        key = (row.id, spec.metric) if result.final and endpoint.metric == spec.metric else (row.id, what)
        differences = [result.values[seed] - result.reference[seed] for seed in range(plan.pilot_seeds)]
        found.setdefault(key, (row.id, row.compare_to, what, differences, endpoint.smallest_effect))
    return list(found.values())


def plan_seeds(spec_name: str, runs_dir: Path, method: str = "holm") -> dict[str, Any]:
    """The plan's record: seeds per row, every comparison's Stein N, what the budget left unresolved."""
    spec = read_spec(spec_name)
    if spec.plan is None:
        raise ConfigError(f"spec '{spec.name}' declares no 'plan' (pilot_seeds, budget, smallest_effect)")
    pilot = spec.plan.pilot_seeds
    analysis = analyse(spec, runs_dir, pilot, method=method)
    short = [result.row.id for result in analysis.rows if len(result.runs) < pilot]
    if short:
        raise FileNotFoundError(
            f"the pilot of spec '{spec.name}' is not finished: rows {', '.join(short)} lack seeds 0..{pilot - 1}"
        )
    level = verdict_level(analysis.family_size)
    plans = [
        PlannedComparison(
            row, reference, what, pilot, float(np.std(diffs, ddof=1)), effect, seeds_needed(diffs, effect, level)
        )
        for row, reference, what, diffs, effect in pilot_differences(spec, analysis)
    ]
    run_seconds = {
        result.row.id: float(np.mean([run.final.get("perf/train_seconds_total", 0.0) for run in result.runs]))
        for result in analysis.rows
    }
    seeds = seeds_per_row(plans, pilot, run_seconds, spec.plan.budget_seconds)
    unresolved = [
        f"{plan.row} vs {plan.reference}, {plan.key}: needs {plan.needed} seeds to detect {plan.smallest_effect:g} "
        f"(pilot sd {plan.pilot_sd:.3g}), the budget gave {min(seeds[plan.row], seeds[plan.reference])}"
        for plan in plans
        if min(seeds[plan.row], seeds[plan.reference]) < plan.needed
    ]
    cost = sum(seeds[row] * run_seconds[row] for row in seeds)
    return {
        "spec": spec.name,
        "pilot_seeds": pilot,
        "level_per_comparison": level,
        "family_size": analysis.family_size,
        "budget_seconds": spec.plan.budget_seconds,
        "planned_seconds": round(cost, 1),
        "seeds": seeds,
        "comparisons": [plan.__dict__ for plan in plans],
        "unresolved": unresolved,
        "summary": (
            f"Seeds planned by Stein's two-stage procedure from a pilot of {pilot} seeds per row: "
            f"{', '.join(f'{row} {count}' for row, count in seeds.items())} "
            f"(about {math.ceil(cost / 60)} min of training within the budget of "
            f"{spec.plan.budget_seconds / 60:g} min); "
            f"{len(unresolved)} of {len(plans)} comparisons got fewer seeds than they need."
        ),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reports.plan_seeds", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--spec", required=True, help="ablation spec with a 'plan' (python -m algos.campaign.ablations --list)"
    )
    parser.add_argument(
        "--runs", type=Path, default=Path("results/runs"), help="directory holding <spec>/<row>/seed<n>/"
    )
    parser.add_argument("--adjust", choices=ADJUSTMENTS, default="holm", help="the family's p-value adjustment")
    parser.add_argument("--out", type=Path, required=True, help="the plan's JSON file")
    args = parser.parse_args(argv)
    try:
        record = plan_seeds(args.spec, args.runs, args.adjust)
    except (ConfigError, ValueError, FileNotFoundError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_json(args.out, record)
    print(record["summary"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
