"""A spec's fixed design from its basis, and what each budget resolves: the seeds every primary comparison
needs to detect its smallest effect, the final evaluation size that spends compute best, and the curve of
the largest detectable effect against the campaign's cost.

For each spec: one line per primary comparison (basis sd, design sd at the chosen evaluation size, seeds
needed, what those seeds detect), the optimal final evaluation size per table-metric comparison
(:func:`reports.planning.fixed_design.optimal_problems`), then the curve: for every seed count per row and final set size,
the campaign's core-hours under the basis' measured costs and the largest detectable effect among the
spec's table-metric primaries, and, for each smallest effect asked of them, the seeds per row and the cost (80 % power, each at its share α/m of the family-wise level). Everything is
computed from the basis, which no tested run is part of.

Command line: ``python -m reports.seed_design --spec dapo_table1 vapo_table1 [--problems 3072] [--seeds 3 4 6 8]
[--curve-problems 1024 3072] [--effects 5 8 10] [--earlier-problems 2560] [--out results/reports/seed_design.json]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from algos.campaign.ablations import AblationSpec, read_spec
from algos.config.presets import ConfigError
from algos.trainer.metrics import metric_unit
from reports.planning.fixed_design import (
    TABLE_QUANTITY,
    Basis,
    campaign_seconds,
    design_plan,
    difference_variance,
    fixed_design,
    mean_accuracy,
    optimal_problems,
    read_basis,
    seeds_per_row,
)
from reports.planning.sequential_plan import sequential_plan
from reports.statistics.comparisons import POWER, detectable_effect


def spec_basis(spec: AblationSpec) -> Basis:
    """The basis the spec's design names; a spec without one fails naming its file."""
    if spec.design is None or spec.design.basis is None:
        raise ConfigError(f"{spec.path}: the design names no 'basis' (the per-seed results its seeds are sized from)")
    return read_basis(spec.design.basis)


def curve(spec: AblationSpec, basis: Basis, seeds: Sequence[int], problems: int, earlier_problems: int) -> list[dict]:
    """For each uniform seed count: the campaign's core-seconds and the largest detectable effect of its
    table-metric primaries at ``problems`` final problems."""
    designs = [d for d in fixed_design(spec, basis, problems) if d.quantity == TABLE_QUANTITY and d.claim is None]
    lines = []
    for n in seeds:
        worst = max(
            (detectable_effect(d.design_sd / math.sqrt(n), n - 1, d.test_level, POWER) for d in designs), default=0.0
        )
        cost = campaign_seconds(spec, basis, {row.id: n for row in spec.rows}, problems, earlier_problems)
        lines.append({"seeds": n, "problems": problems, "core_seconds": cost, "largest_detectable": worst})
    return lines


def effect_curve(
    spec: AblationSpec, basis: Basis, effects: Sequence[float], problems: int, earlier_problems: int
) -> list[dict]:
    """For each smallest effect (the table metric's units) given to every table-metric primary: the seeds per row
    the fixed design asks and the campaign's core-seconds (other primaries keep their declared effects)."""
    lines = []
    for effect in effects:
        rows = tuple(
            dataclasses.replace(row, primary=dataclasses.replace(row.primary, smallest_effect=effect))
            if row.primary is not None and row.primary.endpoint is None
            else row
            for row in spec.rows
        )
        resized = dataclasses.replace(spec, rows=rows)
        seeds = seeds_per_row(resized, fixed_design(resized, basis, problems))
        cost = campaign_seconds(spec, basis, seeds, problems, earlier_problems)
        lines.append({"smallest_effect": effect, "problems": problems, "seeds_per_row": seeds, "core_seconds": cost})
    return lines


def describe(spec: AblationSpec, basis: Basis, problems: int, earlier_problems: int) -> dict:
    """The spec's design record: each primary's design, the seeds per row, its cost, the optimal set sizes."""
    designs = fixed_design(spec, basis, problems)
    seeds = seeds_per_row(spec, designs)
    optimal = {}
    for design in designs:
        if design.quantity != TABLE_QUANTITY:
            continue
        accuracy, reference = mean_accuracy(basis, design.row), mean_accuracy(basis, design.compared_with)
        sampling = difference_variance(accuracy, reference, 1)
        true = max(0.0, design.design_sd**2 - sampling / problems)
        run = (basis.run_seconds[design.row] + basis.run_seconds[design.compared_with]) / 2
        optimal[design.row] = optimal_problems(true, sampling, run, basis.eval_seconds_per_problem)
    finite = [value for value in optimal.values() if math.isfinite(value)]
    return {
        "spec": spec.name,
        "problems": problems,
        "basis": {"seeds": list(basis.seeds), "problems": basis.problems, "provenance": dict(basis.provenance)},
        "comparisons": [
            {
                "row": d.row,
                "compared_with": d.compared_with,
                "quantity": d.quantity,
                "claim": d.claim,
                "smallest_effect": d.smallest_effect,
                "basis_sd": d.basis_sd,
                "design_sd": d.design_sd,
                "seeds": d.seeds,
                "detectable": d.detectable,
                "test_level": d.test_level,
            }
            for d in designs
        ],
        "seeds_per_row": seeds,
        "core_seconds": campaign_seconds(spec, basis, seeds, problems, earlier_problems),
        "optimal_problems": {row: (None if not math.isfinite(v) else round(v)) for row, v in optimal.items()},
        "optimal_problems_median": round(float(np.median(finite))) if finite else None,
    }


def print_design(record: dict, curves: list[dict], scale: float) -> None:
    print(f"## {record['spec']}: fixed design at {record['problems']} final problems")
    print("| row | compared with | quantity | smallest effect | basis sd | design sd | seeds | detects | level |")
    print("|---|---|---|---|---|---|---|---|---|")
    for c in record["comparisons"]:
        unit = scale if c["quantity"] == TABLE_QUANTITY else 1.0
        print(
            f"| {c['row']} | {c['compared_with']} | {c['quantity']}{' (' + c['claim'] + ')' if c['claim'] else ''} "
            f"| {c['smallest_effect'] * unit:.3g} | {c['basis_sd'] * unit:.3g} | {c['design_sd'] * unit:.3g} "
            f"| {c['seeds'] or '> 500'} | {c['detectable'] * unit:.3g} | {c['test_level']:.3g} |"
        )
    hours = record["core_seconds"] / 3600
    print(f"\nSeeds per row: {record['seeds_per_row']}; {hours:.2f} core-hours.")
    print(
        f"Optimal final problems per comparison: {record['optimal_problems']} (median {record['optimal_problems_median']})."
    )
    print("\n| seeds per row | final problems | core-hours | largest detectable (table metric) |")
    print("|---|---|---|---|")
    for line in curves:
        print(
            f"| {line['seeds']} | {line['problems']} | {line['core_seconds'] / 3600:.2f} "
            f"| {line['largest_detectable'] * scale:.3g} |"
        )
    print()


def write_plan(
    specs: Sequence[str], problems: int | None, out: Path, sequential: bool = False, cap: int | None = None
) -> int:
    """Write the one spec's fixed design (or its group-sequential design) as its seed plan; exit 2 naming the fault."""
    if len(specs) != 1:
        print("error: --write-plan writes the plan of one spec; give one --spec", file=sys.stderr)
        return 2
    try:
        spec = read_spec(specs[0])
        basis = spec_basis(spec)
        if sequential and (spec.design is None or spec.design.sequential is None):
            raise ConfigError(f"{spec.path}: the design declares no 'sequential' looks")
        if sequential:
            record = sequential_plan(spec, basis, problems or basis.problems, cap=cap)
        else:
            record = design_plan(spec, basis, problems or basis.problems)
    except (ConfigError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1) + "\n")
    print(record.get("summary") or sequential_summary(record))
    return 0


def sequential_summary(record: dict) -> str:
    """One line per primary of a sequential plan: its looks and margin (and its starting maximum where re-sized)."""
    return "\n".join(
        [f"{record['spec']}: {record['spending']} spending, level {record['level']:.3g} per primary"]
        + [
            f"  {c['row']} vs {c['compared_with']}: looks at {', '.join(map(str, c['looks']))} seeds, margin ±{c['margin']:g}"
            + (f", maximum {c['maximum']} to start with, re-sized at every look" if "maximum" in c else "")
            for c in record["comparisons"]
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reports.seed_design", description=__doc__.split("\n\n")[0])
    parser.add_argument("--spec", nargs="+", required=True, help="ablation specs whose design names a basis")
    parser.add_argument("--problems", type=int, help="final evaluation problems (default: the basis')")
    parser.add_argument("--earlier-problems", type=int, default=2560, help="problems over a run's earlier evaluations")
    parser.add_argument("--seeds", type=int, nargs="+", default=[2, 3, 4, 5, 6, 8, 10, 12], help="curve: seeds per row")
    parser.add_argument("--curve-problems", type=int, nargs="+", help="curve: final set sizes (default: --problems)")
    parser.add_argument(
        "--effects", type=float, nargs="*", default=[], help="curve: smallest effects (in points of a share)"
    )
    parser.add_argument("--out", type=Path, help="also write the records as JSON here")
    parser.add_argument(
        "--write-plan",
        type=Path,
        help="write one spec's fixed design as the campaign's seed plan (results/plans/<spec>.json)",
    )
    parser.add_argument(
        "--sequential", action="store_true", help="with --write-plan: the spec's group-sequential design instead"
    )
    parser.add_argument(
        "--max-seeds", type=int, help="with --sequential: the most seeds a row may run (a campaign's cap)"
    )
    args = parser.parse_args(argv)
    if args.write_plan:
        return write_plan(args.spec, args.problems, args.write_plan, args.sequential, args.max_seeds)
    records = []
    try:
        for name in args.spec:
            spec = read_spec(name)
            basis = spec_basis(spec)
            problems = args.problems or basis.problems
            record = describe(spec, basis, problems, args.earlier_problems)
            record["curve"] = [
                line
                for size in args.curve_problems or [problems]
                for line in curve(spec, basis, args.seeds, size, args.earlier_problems)
            ]
            scale = 100.0 if metric_unit(spec.metric) == "share" else 1.0
            record["effect_curve"] = [
                line
                for size in args.curve_problems or [problems]
                for line in effect_curve(spec, basis, [e / scale for e in args.effects], size, args.earlier_problems)
            ]
            print_design(record, record["curve"], scale)
            for line in record["effect_curve"]:
                print(
                    f"smallest effect {line['smallest_effect'] * scale:g} at {line['problems']} problems: "
                    f"{line['core_seconds'] / 3600:.2f} core-hours, seeds per row {line['seeds_per_row']}"
                )
            records.append(record)
    except (ConfigError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(records, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
