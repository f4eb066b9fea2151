"""A block of seeds of one ablation row, trained in one process: imports, the row's config and the
tracking client are paid once, not once a seed.

Each seed is its own run, exactly as ``python -m algos.trainer.train`` trains it: its own directory
``<runs>/<spec>/<row>/seed<n>/`` with the row's resolved config (``row_config.yaml``, as ``python -m
algos.campaign.ablations --row`` prints it), its checkpoint, files and MLflow run (experiment = spec,
parent run = row, run name = ``seed<n>``), and the same numbers bit for bit: a run seeds every random
stream it draws from (:mod:`algos.engine.seeding`), so the seeds trained before it in the process change
nothing. The critic's phases before RL are computed once for every row and seed that shares them
(:mod:`algos.trainer.critic_store`, in ``<runs>/.critic_phases/``), with the same numbers. A seed already
finished, or interrupted, resumes from its checkpoint (a finished run unpacked from a packed campaign, which
has none, is kept); a row whose config changed starts afresh. A seed that fails (a config the model cannot
run, a run stopped for non-finite updates) is reported and the block goes on with the others; the command
then exits 2 naming it.

Command line: ``python -m algos.campaign.seed_block --spec dapo_table1 --row clip_higher --seeds 0 1 2
--runs results/runs --model results/base_model [--step-scale 0.334] [--eval-points 11] [--set KEY=VALUE]
[--tuned PRESET:KEY=VALUE]``.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import yaml

from algos.campaign.ablations import Budget, add_budget_arguments, budget_from, read_spec, row_config_text
from algos.config.presets import ConfigError, checked_settings, load_config
from algos.config.schema import RLConfig
from algos.engine.checkpoint import latest_checkpoint
from algos.engine.models import ModelNotFoundError
from algos.trainer import run_files
from algos.trainer.resume import config_differences
from algos.trainer.train import NonFiniteTrainingError, train

log = logging.getLogger(__name__)
ROW_CONFIG_FILE = "row_config.yaml"
CRITIC_STORE_DIR = ".critic_phases"
"""Under the runs folder: the critic's phases before RL, computed once for the rows and seeds that share them."""
RUN_ERRORS = (ConfigError, ModelNotFoundError, ValueError, NonFiniteTrainingError)
"""The errors ``python -m algos.trainer.train`` reports in one line; any other is logged with its traceback."""


def seed_overrides(spec: str, row: str, seed: int, model: str | None) -> list[str]:
    """The settings that make a row's config one seed's run: the seed, its tracking names and the start model."""
    return [
        *([f"model.name_or_path={model}"] if model else []),
        f"seed={seed}",
        f"tracking.experiment={spec}",
        f"tracking.parent_run={row}",
        f"tracking.run_name=seed{seed}",
    ]


def finished_without_checkpoint(out: Path, cfg: RLConfig) -> bool:
    """A run of ``cfg`` that finished in ``out`` and kept only its files (:mod:`algos.campaign.archive`)."""
    return (
        (out / run_files.FINAL_FILE).is_file() and latest_checkpoint(out) is None and not config_differences(out, cfg)
    )


def train_block(
    spec_name: str, row_id: str, seeds: Sequence[int], runs_dir: Path, budget: Budget, model: str | None = None
) -> dict[int, str]:
    """Train ``seeds`` of the row one after the other; returns seed -> error for the seeds that failed.

    A bad spec, row or budget raises :class:`ConfigError` before any seed starts.
    """
    spec = read_spec(spec_name)
    text = row_config_text(spec, row_id, budget)
    settings = checked_settings(yaml.safe_load(text), f"{spec.name} / {row_id}")  # as if read from row_config.yaml
    failed = {}
    for seed in seeds:
        out = runs_dir / spec.name / row_id / f"seed{seed}"
        out.mkdir(parents=True, exist_ok=True)
        if os.environ.get("RANK", "0") == "0":  # the main process of a run under accelerate launch
            (out / ROW_CONFIG_FILE).write_text(text)
        started = time.perf_counter()
        try:
            cfg = load_config(settings=settings, overrides=seed_overrides(spec.name, row_id, seed, model))
            if finished_without_checkpoint(out, cfg):
                log.info("%s / %s / seed %d finished before (a packed campaign's run): kept", spec.name, row_id, seed)
                continue
            train(cfg, out, on_config_change="restart", critic_store=runs_dir / CRITIC_STORE_DIR)
        except Exception as error:  # one seed's failure must not cost the block's other seeds
            if isinstance(error, RUN_ERRORS):
                log.error("%s / %s / seed %d failed: %s", spec.name, row_id, seed, error)
            else:
                log.exception("%s / %s / seed %d failed", spec.name, row_id, seed)
            failed[seed] = f"{type(error).__name__}: {error}"
            continue
        log.info("%s / %s / seed %d finished in %.1f s", spec.name, row_id, seed, time.perf_counter() - started)
    return failed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m algos.campaign.seed_block", description=__doc__.split("\n\n")[0])
    parser.add_argument("--spec", required=True, help="spec name (python -m algos.campaign.ablations --list)")
    parser.add_argument("--row", required=True, help="the row whose seeds are trained")
    parser.add_argument("--seeds", type=int, nargs="+", required=True, help="the seeds, trained in this order")
    parser.add_argument("--runs", type=Path, default=Path("results/runs"), help="directory of <spec>/<row>/seed<n>/")
    parser.add_argument("--model", help="the model every seed starts from (model.name_or_path); default: the row's")
    add_budget_arguments(parser)
    args = parser.parse_args(argv)
    logging.basicConfig(format="%(levelname)s: %(message)s", level=logging.INFO)
    try:
        failed = train_block(args.spec, args.row, args.seeds, args.runs, budget_from(args), args.model)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if failed:
        lines = "; ".join(f"seed {seed}: {error}" for seed, error in failed.items())
        print(
            f"error: {len(failed)} of {len(args.seeds)} seeds of {args.spec} / {args.row} failed ({lines})",
            file=sys.stderr,
        )
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
