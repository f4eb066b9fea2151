"""The plain files every run writes to its output directory, readable without MLflow.

config.yaml          the resolved config
run.json             tags: preset, seed, config hash, git commit, package versions, hardware; the environment
                     (CPU, kernels in use, threads, every package: algos.engine.provenance.environment)
metrics.jsonl        one JSON object per logged step: {"step": n, "<metric>": value, ...}
critic_metrics.jsonl the critic's reward-model fit and value pretraining before RL, one object per phase step
final_metrics.json   held-out accuracies of the base and of the final policy, checkpoint path
checkpoint/          the last resumable checkpoint (see algos.engine.checkpoint)
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

CONFIG_FILE = "config.yaml"
RUN_FILE = "run.json"
METRICS_FILE = "metrics.jsonl"
CRITIC_METRICS_FILE = "critic_metrics.jsonl"
FINAL_FILE = "final_metrics.json"


def write_json(path: Path, payload: Mapping[str, Any]) -> None:
    """Write ``payload`` atomically (a reader never sees half a file)."""
    partial = path.with_suffix(path.suffix + ".partial")
    partial.write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n")
    partial.replace(path)


def tracker_run_id(out: Path) -> str | None:
    """The tracking run (MLflow's run id) of the run in ``out``; None when it was not tracked or never started."""
    path = out / RUN_FILE
    return json.loads(path.read_text()).get("tracker_run_id") if path.exists() else None


def write_config(out: Path, config: Mapping[str, Any]) -> None:
    partial = out / (CONFIG_FILE + ".partial")
    partial.write_text(yaml.safe_dump(dict(config), sort_keys=False))
    partial.replace(out / CONFIG_FILE)


def append_metrics(out: Path, step: int, metrics: Mapping[str, float], name: str = METRICS_FILE) -> None:
    with (out / name).open("a") as handle:
        handle.write(json.dumps({"step": step, **metrics}, sort_keys=True) + "\n")


def clear(out: Path, name: str) -> None:
    """Remove the file ``name`` of the run directory, if there is one."""
    (out / name).unlink(missing_ok=True)


def read_metrics(out: Path, name: str = METRICS_FILE) -> list[dict[str, float]]:
    """Every row of ``metrics.jsonl`` (or another metrics file ``name``) in order ([] when it does not exist)."""
    path = out / name
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def replayable_metrics(out: Path, name: str = METRICS_FILE) -> list[dict[str, float]]:
    """:func:`read_metrics` without the ``perf/`` keys: what a rerun of the run must give exactly (timings and
    memory differ from run to run)."""
    return [{k: v for k, v in row.items() if not k.startswith("perf/")} for row in read_metrics(out, name)]


def truncate_metrics(out: Path, last_step: int) -> None:
    """Drop rows logged after ``last_step`` (work lost with a kill, redone after resuming)."""
    rows = [row for row in read_metrics(out) if row["step"] <= last_step]
    partial = out / (METRICS_FILE + ".partial")
    partial.write_text("".join(json.dumps(row, sort_keys=True) + "\n" for row in rows))
    partial.replace(out / METRICS_FILE)
