"""One look of a group-sequential campaign: the primaries judged on the seeds finished so far, written as the look
file the workflow reads to grow only the undecided rows' next seeds (:mod:`reports.analysis.sequential`).

Command line: ``python -m reports.sequential_look --spec dapo_table1 --runs results/runs --plan
results/plans/dapo_table1.sequential.json --look 0 --out results/plans/dapo_table1.look0.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from algos.campaign.ablations import read_spec
from algos.config.presets import ConfigError
from reports.analysis.sequential import read_sequential_plan, sequential_state, state_record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reports.sequential_look", description=__doc__.split("\n\n")[0])
    parser.add_argument("--spec", required=True, help="ablation spec with a sequential design")
    parser.add_argument("--runs", type=Path, required=True, help="directory holding <spec>/<row>/seed<n>/")
    parser.add_argument(
        "--plan", type=Path, required=True, help="the spec's sequential plan (seed_design --sequential)"
    )
    parser.add_argument("--look", type=int, required=True, help="the look judged (0 for the first)")
    parser.add_argument("--out", type=Path, required=True, help="the look file to write")
    args = parser.parse_args(argv)
    try:
        state = sequential_state(read_spec(args.spec), read_sequential_plan(args.plan), args.runs, args.look)
    except (ConfigError, ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if state.looks_done != args.look + 1 and not state.finished:
        print(f"error: look {args.look} of {args.spec} needs runs not finished: {state.next_seeds}", file=sys.stderr)
        return 2
    record = state_record(state)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=1) + "\n")
    decided = [c for c in record["comparisons"] if c["verdict"]]
    print(
        f"{args.spec}, look {args.look + 1} of {len(state.looks)}: {len(decided)} of {len(record['comparisons'])} decided"
    )
    for c in decided:
        print(f"  {c['row']} vs {c['compared_with']}: {c['verdict']} at look {c['look']} ({c['seeds']} seeds)")
    print("  next look: " + (", ".join(f"{row} {len(s)} seeds" for row, s in record["next_seeds"].items()) or "none"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
