"""A design basis: a design campaign's per-seed results and costs, written once, read by every fixed design.

The basis holds, for each row of a spec, every seed's value of each quantity a primary comparison of the
spec compares (the table's metric at the last step, and each flagged endpoint over its window), read from
the design campaign's own run files exactly as a report reads them; the final evaluation's size; and what
one run of each row and one evaluated problem cost, from a costs file measured on the same machine
(``{"source": "...", "eval_seconds_per_problem": 0.0028, "run_seconds": {"<row>": 41.0, ...}}``). The
runs' commit, environment fingerprint and directories go in its provenance. The campaign a design sizes
must not reuse the basis' seeds, which the basis names.

Command line: ``python -m reports.design_basis --spec dapo_table1 --runs results/runs --seeds 0 1 2 --costs
costs.json --campaign "snakemake ablations at <commit>" --out experiments/ablations/design_basis/dapo_table1.json``
(``--runs-of dapo_table1`` reads that spec's runs for a variant of it).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from algos.campaign.ablations import read_spec
from algos.config.presets import ConfigError
from reports.analysis.primaries import primary_values
from reports.analysis.runs import load_run
from reports.planning.fixed_design import Basis, check_basis, write_basis


def build_basis(
    spec_name: str, runs_dir: Path, seeds: Sequence[int], costs: Path, campaign: str, runs_of: str | None = None
) -> Basis:
    """The basis of ``spec_name`` from the finished runs ``runs_dir/<runs_of>/<row>/seed<n>`` (``runs_of``: the spec
    whose campaign trained them, by default ``spec_name``; a variant's basis may come from its base spec's runs, whose
    rows are its own) and the costs file; ``campaign`` says in words which campaign the runs are (command, commit,
    machine)."""
    spec = read_spec(spec_name)
    trained = runs_dir / (runs_of or spec.name)
    runs = {row.id: [load_run(trained / row.id / f"seed{seed}") for seed in seeds] for row in spec.rows}
    if runs_of is not None:
        for row in spec.rows:
            read = read_spec(runs_of).config(row.id)
            if read != spec.config(row.id):
                raise ValueError(f"row '{row.id}' of spec '{runs_of}' is not the same row in '{spec.name}'")
    problems = {
        run.config["run"].get("final_eval_problems") or run.config["run"]["eval_problems"]
        for rs in runs.values()
        for run in rs
    }
    if len(problems) != 1:
        raise ValueError(f"the runs were evaluated on different final set sizes: {sorted(problems)}")
    record = json.loads(costs.read_text())
    missing = [row.id for row in spec.rows if row.id not in record.get("run_seconds", {})]
    if missing or "eval_seconds_per_problem" not in record or "source" not in record:
        raise ValueError(
            f"{costs}: a costs file needs source, eval_seconds_per_problem and run_seconds of every row "
            f"(missing rows: {', '.join(missing) or 'none'})"
        )
    records = [run.record or {} for rs in runs.values() for run in rs]
    basis = Basis(
        spec=spec.name,
        metric=spec.metric,
        problems=problems.pop(),
        seeds=tuple(seeds),
        values=primary_values(spec, runs),
        run_seconds={row.id: float(record["run_seconds"][row.id]) for row in spec.rows},
        eval_seconds_per_problem=float(record["eval_seconds_per_problem"]),
        provenance={
            "campaign": campaign,
            "commits": sorted({r.get("git_commit", "unknown") for r in records}),
            "environments": sorted({r.get("environment", {}).get("fingerprint", "unknown") for r in records}),
            "costs": record["source"],
        },
    )
    check_basis(spec, basis)
    return basis


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reports.design_basis", description=__doc__.split("\n\n")[0])
    parser.add_argument("--spec", required=True, help="ablation spec")
    parser.add_argument("--runs", type=Path, required=True, help="the design campaign's <spec>/<row>/seed<n>/")
    parser.add_argument("--seeds", type=int, nargs="+", required=True, help="the design campaign's seeds")
    parser.add_argument("--runs-of", help="the spec whose runs they are, where not --spec (a variant's base spec)")
    parser.add_argument("--costs", type=Path, required=True, help="JSON: source, eval_seconds_per_problem, run_seconds")
    parser.add_argument("--campaign", required=True, help="which campaign the runs are, in words (command, commit)")
    parser.add_argument("--out", type=Path, required=True, help="the basis file to write")
    args = parser.parse_args(argv)
    try:
        basis = build_basis(args.spec, args.runs, args.seeds, args.costs, args.campaign, args.runs_of)
        print(write_basis(basis, args.out))
    except (ConfigError, ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
