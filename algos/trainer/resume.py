"""Whether a run directory may be continued by the config at hand, and starting it afresh when it may not.

A run directory records the hash of the config it was started with (``run.json``'s ``config_hash``,
over every section but ``tracking``). A checkpoint is resumed only by that same config: any other
(the seed, a toggle, the step count) would train the remaining steps under a mix of both while the
directory's files still describe the first, so it either fails, naming the keys that differ, or,
when asked, discards the old run and starts from scratch.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Literal, get_args

import yaml

from algos.config.presets import config_hash, config_to_dict, flatten
from algos.config.schema import RLConfig
from algos.engine.checkpoint import CHECKPOINT_DIR, Checkpoint, latest_checkpoint
from algos.trainer import run_files

OnConfigChange = Literal["fail", "restart"]
ON_CONFIG_CHANGE: tuple[OnConfigChange, ...] = get_args(OnConfigChange)

RUN_OUTPUTS = (
    run_files.CONFIG_FILE,
    run_files.RUN_FILE,
    run_files.METRICS_FILE,
    run_files.CRITIC_METRICS_FILE,
    run_files.FINAL_FILE,
)
"""The files a run writes to its directory (anything else there, such as a row's input config, stays)."""


class ConfigChangedError(ValueError):
    """A run directory holds a run of a different config than the one asked to resume it."""


def changed_keys(recorded: dict[str, Any], current: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """Dotted keys outside ``tracking`` whose value differs: key -> (recorded, current); a missing side is None."""
    old, new = flatten(recorded), flatten(current)
    keys = sorted(key for key in set(old) | set(new) if not key.startswith("tracking."))
    return {key: (old.get(key), new.get(key)) for key in keys if old.get(key) != new.get(key)}


def config_differences(out: Path, cfg: RLConfig) -> dict[str, tuple[Any, Any]]:
    """How ``cfg`` differs from the config ``out``'s run was started with ({} when its hash matches)."""
    run_file, config_file = out / run_files.RUN_FILE, out / run_files.CONFIG_FILE
    recorded_hash = json.loads(run_file.read_text()).get("config_hash") if run_file.is_file() else None
    if recorded_hash == config_hash(cfg):
        return {}
    recorded = yaml.safe_load(config_file.read_text()) if config_file.is_file() else {}
    current = yaml.safe_load(yaml.safe_dump(config_to_dict(cfg)))  # the form config.yaml holds it in
    return changed_keys(recorded, current) or {"config_hash": (recorded_hash, config_hash(cfg))}


def checkpoint_to_resume(out: Path, cfg: RLConfig, on_config_change: OnConfigChange = "fail") -> Checkpoint | None:
    """The checkpoint ``cfg`` continues in ``out``, or None to start from scratch.

    A checkpoint of a different config raises :class:`ConfigChangedError` naming the keys that differ,
    or with ``on_config_change="restart"`` is discarded together with the run's files.
    """
    checkpoint = latest_checkpoint(out)
    differences = config_differences(out, cfg) if checkpoint else {}
    if not differences:
        return checkpoint
    if on_config_change == "restart":
        discard_run(out)
        return None
    listed = ", ".join(f"{key}: {old!r} -> {new!r}" for key, (old, new) in differences.items())
    raise ConfigChangedError(
        f"{out} holds a run of a different config ({listed}); resume it with the config it was started with, "
        "choose another output directory, or pass --on-config-change restart to discard it and start afresh"
    )


def discard_run(out: Path) -> None:
    """Remove the run's checkpoints and files from ``out``, so that a new run starts there from scratch."""
    for suffix in ("", ".partial", ".previous"):
        shutil.rmtree(out / f"{CHECKPOINT_DIR}{suffix}", ignore_errors=True)
    for name in RUN_OUTPUTS:
        run_files.clear(out, name)
