"""Runs per core-hour of a campaign's training jobs: one process per run against one process per block of seeds.

For each given row of the default campaign (its budget read from the workflow config), the seeds are
trained twice, interleaved row by row so that drift in the machine's speed falls on both alike:

- per run, as a campaign did before seed blocks: ``python -m algos.campaign.ablations --row`` resolves
  the row's config, then ``python -m algos.trainer.train`` trains one seed, two processes a run;
- per block: ``python -m algos.campaign.seed_block`` trains all the seeds in one process.

Every job runs on one thread, as workflow jobs do, so a job's wall time is its core time. The command
prints each row's seconds on both paths, the runs per core-hour of each and their ratio, and checks
that both paths gave every run the same metrics (``perf/`` aside).

Command line: ``python -m algos.campaign.throughput --model results/base_model --out results/throughput
--rows dapo_table1/naive_grpo dapo_table1/dynamic_sampling vapo_table1/vapo [--seeds 3]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from algos.campaign.ablations import WORKFLOW_CONFIG, campaign_budget
from algos.campaign.seed_block import ROW_CONFIG_FILE, seed_overrides
from algos.trainer.run_files import replayable_metrics


def campaign_options(workflow_config: Path = WORKFLOW_CONFIG) -> list[str]:
    """The campaign's budget (``ablations.step_scale``, ``eval_points``, ``overrides``) as command-line options."""
    return campaign_budget(yaml.safe_load(workflow_config.read_text())["ablations"]).options()


def _run(command: Sequence[str], environment: dict[str, str], stdout: Path | None = None) -> None:
    with open(stdout, "w") if stdout else open(os.devnull, "w") as handle:
        done = subprocess.run(command, env=environment, stdout=handle, stderr=subprocess.PIPE, text=True)
    if done.returncode:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")


@dataclass(frozen=True)
class RowSeeds:
    """One row's seeds to train: where their runs go, the model they start from, the budget's options and the
    environment the processes run in."""

    spec: str
    row: str
    seeds: Sequence[int]
    runs: Path
    model: str
    budget: Sequence[str]
    environment: dict[str, str]


def per_run(job: RowSeeds) -> float:
    """Seconds to train the seeds one process pair a run: the config resolved by one, trained by the other."""
    started = time.perf_counter()
    for seed in job.seeds:
        out = job.runs / job.spec / job.row / f"seed{seed}"
        out.mkdir(parents=True, exist_ok=True)
        resolve = [sys.executable, "-m", "algos.campaign.ablations", "--spec", job.spec, "--row", job.row, *job.budget]
        _run(resolve, job.environment, stdout=out / ROW_CONFIG_FILE)
        train = [sys.executable, "-m", "algos.trainer.train", "--config", str(out / ROW_CONFIG_FILE), "--out", str(out)]
        overrides = seed_overrides(job.spec, job.row, seed, job.model)
        _run([*train, "--on-config-change", "restart", *overrides], job.environment)
    return time.perf_counter() - started


def per_block(job: RowSeeds) -> float:
    """Seconds to train the seeds in one process."""
    started = time.perf_counter()
    block = [sys.executable, "-m", "algos.campaign.seed_block", "--spec", job.spec, "--row", job.row]
    seeds = ["--seeds", *map(str, job.seeds)]
    _run([*block, *seeds, "--runs", str(job.runs), "--model", job.model, *job.budget], job.environment)
    return time.perf_counter() - started


def measure(rows: Sequence[str], seeds: int, model: str, out: Path, budget: Sequence[str] | None = None) -> dict:
    """Both paths on every row, interleaved (the first path alternates from row to row).

    budget: the campaign's budget options (default: the workflow config's, :func:`campaign_options`).
    """
    budget = campaign_options() if budget is None else budget
    environment = {**os.environ, "OMP_NUM_THREADS": "1", "MLFLOW_TRACKING_URI": f"sqlite:///{out.resolve()}/mlflow.db"}
    paths = {"per run": per_run, "per block": per_block}
    record = {"rows": {}, "seeds": seeds}
    for index, text in enumerate(rows):
        spec, _, row = text.partition("/")
        order = list(paths) if index % 2 == 0 else list(reversed(paths))
        seconds = {
            name: paths[name](RowSeeds(spec, row, range(seeds), out / name, model, budget, environment))
            for name in order
        }
        same = all(
            replayable_metrics(out / "per run" / spec / row / f"seed{seed}")
            == replayable_metrics(out / "per block" / spec / row / f"seed{seed}")
            for seed in range(seeds)
        )
        record["rows"][text] = {**seconds, "same metrics": same}
        print(f"{text}: per run {seconds['per run']:.1f} s, per block {seconds['per block']:.1f} s, same: {same}")
    runs = seeds * len(rows)
    for name in paths:
        total = sum(entry[name] for entry in record["rows"].values())
        record[name] = {"seconds": round(total, 1), "runs per core-hour": round(runs / (total / 3600), 1)}
    record["ratio"] = round(record["per block"]["runs per core-hour"] / record["per run"]["runs per core-hour"], 3)
    return record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m algos.campaign.throughput", description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", nargs="+", required=True, metavar="SPEC/ROW", help="the campaign's rows to train")
    parser.add_argument("--seeds", type=int, default=3, help="seeds per row (a block)")
    parser.add_argument("--model", required=True, help="the model every run starts from (the campaign's base)")
    parser.add_argument("--out", type=Path, required=True, help="directory for the runs and throughput.json")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    try:
        record = measure(args.rows, args.seeds, args.model, args.out)
    except RuntimeError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    (args.out / "throughput.json").write_text(json.dumps(record, indent=2) + "\n")
    for name in ("per run", "per block"):
        print(f"{name}: {record[name]['seconds']} s, {record[name]['runs per core-hour']} runs per core-hour")
    print(f"per block / per run: {record['ratio']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
