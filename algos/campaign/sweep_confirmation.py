"""A sweep's confirmation stage: its best completed trials and the preset's own configuration retrained on seeds
the search never saw, so that what the search found is judged on runs its choice does not bias.

``plan`` reads the search's slot records (:func:`algos.campaign.sweeps.read_records`) once every trial has
finished and writes ``<out>/confirmation/plan.json``: the ``top`` best completed trials by their tuning mean
(ties: the earlier trial), each with its parameters and tuning values, then the preset's configuration (no
parameters), and the fresh seeds. ``train`` trains one configuration's fresh seeds one after the other in one
process, each its own run in ``<out>/confirmation/<configuration>/seed<n>/`` (MLflow: the sweep's experiment,
nested under ``confirmation/<configuration>``); a seed already finished is kept, an interrupted one resumes from
its checkpoint, so a killed confirmation finishes with the same numbers as one never stopped.

Command line: ``python -m algos.campaign.sweep_confirmation plan --sweep dapo_default --out results/sweeps/dapo_default``
and ``python -m algos.campaign.sweep_confirmation train --sweep dapo_default --configuration trial7 --out
results/sweeps/dapo_default --model results/base_model``; ``plan --top 1 --seeds 6`` plans one study's winner of a
comparison of searches, and ``winners --studies <dirs> --out winners.json`` gathers them.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Any

from algos.campaign.sweeps import PRESET_CONFIGURATION, SweepSpec, best_records, read_records, read_sweep
from algos.config.presets import ConfigError

log = logging.getLogger(__name__)
CONFIRMATION_DIR = "confirmation"
PLAN_FILE = "plan.json"


def confirmation_plan(spec: SweepSpec, out: Path, top: int | None = None, seeds: int | None = None) -> dict[str, Any]:
    """The configurations the confirmation retrains and its seeds, from the search's records under ``out``; ``top``
    and ``seeds`` (the first of the confirmation's seeds) in place of the spec's, for a comparison of searches."""
    if spec.confirmation is None:
        raise ConfigError(f"sweep '{spec.name}' declares no confirmation")
    records = read_records(out)
    if len(records) < spec.trials:
        raise ValueError(f"sweep '{spec.name}': {len(records)} of its {spec.trials} trials have finished in {out}")
    chosen = best_records(spec, records)[: top or spec.confirmation.top]
    configurations = [
        {
            "name": f"trial{record['trial']}",
            "trial": record["trial"],
            "params": record["params"],
            "tuning_values": record["seed_values"],
            "tuning_mean": record["value"],
        }
        for record in chosen
    ]
    configurations.append(
        {"name": PRESET_CONFIGURATION, "trial": None, "params": {}, "tuning_values": [], "tuning_mean": None}
    )
    return {
        "sweep": spec.name,
        "preset": spec.preset,
        "objective": spec.metric,
        "direction": spec.direction,
        "metric": spec.confirmation.metric,
        "margin": spec.confirmation.margin,
        "level": spec.confirmation.level,
        "compared": len(chosen),
        "seeds": spec.confirmation.seed_numbers[:seeds],
        "configurations": configurations,
    }


def write_plan(spec: SweepSpec, out: Path, top: int | None = None, seeds: int | None = None) -> Path:
    """The confirmation's plan written to ``<out>/confirmation/plan.json``."""
    path = out / CONFIRMATION_DIR / PLAN_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(confirmation_plan(spec, out, top, seeds), indent=1) + "\n")
    return path


def read_plan(out: Path) -> dict[str, Any]:
    return json.loads((out / CONFIRMATION_DIR / PLAN_FILE).read_text())


def write_winners(studies: list[Path], out: Path) -> Path:
    """Each study's winner (the first configuration its plan confirms), as ``{study: name}`` in ``out``."""
    winners = {str(study): read_plan(study)["configurations"][0]["name"] for study in studies}
    out.write_text(json.dumps(winners, indent=1) + "\n")
    return out


def run_directory(out: Path, configuration: str, seed: int) -> Path:
    return out / CONFIRMATION_DIR / configuration / f"seed{seed}"


def train_configuration(spec: SweepSpec, configuration: str, out: Path, extra: tuple[str, ...] = ()) -> dict[int, str]:
    """Train the fresh seeds of one planned configuration; returns seed -> error for the seeds that failed."""
    # Training loads torch and transformers: imported here, so that planning stays quick.
    from algos.campaign.seed_block import RUN_ERRORS, finished_without_checkpoint
    from algos.trainer.train import train

    plan = read_plan(out)
    planned = {entry["name"]: entry for entry in plan["configurations"]}
    if configuration not in planned:
        raise ConfigError(
            f"sweep '{spec.name}' confirms no configuration '{configuration}'; planned: {', '.join(planned)}"
        )
    tracking = (f"tracking.experiment=sweep-{spec.name}", f"tracking.parent_run={CONFIRMATION_DIR}/{configuration}")
    failed = {}
    for seed in plan["seeds"]:
        cfg = spec.confirmation_config(
            planned[configuration]["params"], seed, (*extra, *tracking, f"tracking.run_name=seed{seed}")
        )
        run = run_directory(out, configuration, seed)
        if finished_without_checkpoint(run, cfg):
            continue
        try:
            train(cfg, run, preset=spec.preset, on_config_change="restart")
        except RUN_ERRORS as error:
            log.error("%s / %s / seed %d failed: %s", spec.name, configuration, seed, error)
            failed[seed] = f"{type(error).__name__}: {error}"
    return failed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m algos.campaign.sweep_confirmation", description=__doc__.split("\n\n")[0]
    )
    commands = parser.add_subparsers(dest="command", required=True)
    planning = commands.add_parser("plan", help="write the configurations to confirm, from the finished search")
    training = commands.add_parser("train", help="train one planned configuration's fresh seeds")
    winners = commands.add_parser("winners", help="every study's first planned configuration, in one file")
    winners.add_argument("--studies", type=Path, nargs="+", required=True, help="the studies' directories")
    winners.add_argument("--out", type=Path, required=True, help="the file to write")
    training.add_argument("--configuration", required=True, help="trial<n> or preset (as the plan names them)")
    training.add_argument("--model", help="the model every run starts from (model.name_or_path)")
    training.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="a further override of every run"
    )
    planning.add_argument("--top", type=int, help="confirm this many best trials (default: the spec's)")
    planning.add_argument("--seeds", type=int, help="on the first this many of the confirmation's seeds (default: all)")
    for command in (planning, training):
        command.add_argument("--sweep", required=True, help="sweep name (python -m algos.campaign.sweeps --list)")
        command.add_argument("--out", type=Path, required=True, help="the study's directory")
    args = parser.parse_args(argv)
    logging.basicConfig(format="%(levelname)s: %(message)s", level=logging.INFO)
    try:
        if args.command == "winners":
            print(write_winners(args.studies, args.out))
            return 0
        spec = read_sweep(args.sweep)
        if args.command == "plan":
            print(write_plan(spec, args.out, args.top, args.seeds))
            return 0
        extra = ((f"model.name_or_path={args.model}",) if args.model else ()) + tuple(args.set)
        failed = train_configuration(spec, args.configuration, args.out, extra)
    except (ConfigError, ValueError, FileNotFoundError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if failed:
        lines = "; ".join(f"seed {seed}: {error}" for seed, error in failed.items())
        print(f"error: {len(failed)} seeds of {args.sweep} / {args.configuration} failed ({lines})", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
