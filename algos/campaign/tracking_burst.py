"""Many training jobs logging to one MLflow store at once, and what the store kept: a check of a store before a
campaign relies on it (a tracking server on PostgreSQL for a cluster; a SQLite file, as on one machine).

``python -m algos.campaign.tracking_burst --uri http://host:5000 --jobs 16 --model results/base_model --out DIR``
starts ``--jobs`` tiny training runs (the trainer's own command, a few steps each) at the same moment, each logging
to ``--uri`` in an experiment of this burst's own, waits for them, and counts what the store holds against what each
run wrote to its own files: runs, metric values (every metric of every step in ``metrics.jsonl``), parameters (the
flattened ``config.yaml``), tags (``run.json``'s) and artifacts, and how many runs the store marks finished. It
prints the counts as JSON and exits 1 where a job failed or anything is missing.
"""

from __future__ import annotations

import argparse
import ast
import json
import math
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from algos.config.presets import flatten, read_yaml
from algos.trainer import run_files
from algos.trainer.tracking_view import RECORD_ONLY

JOB_SETTINGS = (
    "tracking.backend=mlflow",
    "run.steps=3",
    "run.eval_every=1",
    "run.eval_problems=8",
    "rollout.prompts_per_step=4",
    "rollout.group_size=4",
    "rollout.max_new_tokens=20",
)
"""What makes each job tiny: three steps, each evaluated, on a few problems (overrides given after them win)."""
ARTIFACTS = (run_files.CONFIG_FILE, run_files.METRICS_FILE, run_files.FINAL_FILE)
COUNTED = ("runs", "finished", "metric_values", "params", "tags", "artifacts")


def job_command(index: int, uri: str, experiment: str, model: str, out: Path, overrides: Sequence[str]) -> list[str]:
    """The trainer's command of job ``index``: its own seed, run name and directory."""
    return [
        sys.executable,
        "-m",
        "algos.trainer.train",
        "--preset",
        "grpo",
        "--out",
        str(out / f"job{index}"),
        *JOB_SETTINGS,
        f"model.name_or_path={model}",
        f"seed={index}",
        f"tracking.uri={uri}",
        f"tracking.experiment={experiment}",
        f"tracking.run_name=job{index}",
        *overrides,
    ]


def run_burst(uri: str, jobs: int, model: str, out: Path, overrides: Sequence[str] = ()) -> dict[str, Any]:
    """Start ``jobs`` training jobs at once, wait for all, then count what the store holds (see the module)."""
    experiment = f"burst-{uuid.uuid4().hex[:8]}"
    out.mkdir(parents=True, exist_ok=True)
    environment = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    started = time.perf_counter()
    processes = []
    for index in range(jobs):
        log = open(out / f"job{index}.log", "w")  # noqa: SIM115 (closed once the job ends)
        command = job_command(index, uri, experiment, model, out, overrides)
        processes.append((subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=environment), log))
    failures = {}
    for index, (process, log) in enumerate(processes):
        process.wait()
        log.close()
        if process.returncode != 0:
            lines = (out / f"job{index}.log").read_text().strip().splitlines()
            failures[f"job{index}"] = lines[-1] if lines else f"exit status {process.returncode}"
    seconds = time.perf_counter() - started
    counts = count_logged(uri, experiment, [out / f"job{index}" for index in range(jobs)])
    return {
        "uri": _shown(uri),
        "experiment": experiment,
        "jobs": jobs,
        "failed_jobs": failures,
        "seconds": round(seconds, 1),
        **counts,
        "lost": sum(counts[name]["expected"] - counts[name]["logged"] for name in COUNTED),
    }


def count_logged(uri: str, experiment: str, runs: Sequence[Path]) -> dict[str, dict[str, int]]:
    """Expected (from each run's files) against logged (in the store) runs, metric values, params, tags, artifacts."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    found = client.get_experiment_by_name(experiment)
    stored = {}
    if found is not None:
        stored = {run.info.run_name: run for run in client.search_runs([found.experiment_id], max_results=10_000)}
    counts = {name: {"expected": 0, "logged": 0} for name in COUNTED}
    for out in runs:
        logged = stored.get(out.name)
        counts["runs"]["expected"] += 1
        counts["finished"]["expected"] += 1
        counts["runs"]["logged"] += logged is not None
        counts["finished"]["logged"] += logged is not None and logged.info.status == "FINISHED"
        for name, (expected, kept) in _run_counts(client, out, logged).items():
            counts[name]["expected"] += expected
            counts[name]["logged"] += kept
    return counts


def _run_counts(client: Any, out: Path, logged: Any) -> dict[str, tuple[int, int]]:
    """name -> (expected, logged) for one run; a run the store lacks keeps everything its files hold unlogged."""
    rows = run_files.read_metrics(out)
    metric_values = {(key, row["step"], value) for row in rows for key, value in row.items() if key != "step"}
    config_file, run_file = out / run_files.CONFIG_FILE, out / run_files.RUN_FILE
    params = (
        {key: str(value) for key, value in flatten(read_yaml(config_file)).items()} if config_file.is_file() else {}
    )
    tags = (
        {key: str(value) for key, value in json.loads(run_file.read_text()).items() if key not in RECORD_ONLY}
        if run_file.is_file()
        else {}
    )
    if logged is None:
        return {
            "metric_values": (len(metric_values), 0),
            "params": (len(params), 0),
            "tags": (len(tags), 0),
            "artifacts": (len(ARTIFACTS), 0),
        }
    run_id = logged.info.run_id
    stored_values = set()
    for key in {key for key, _, _ in metric_values}:
        stored_values |= {(key, point.step, point.value) for point in client.get_metric_history(run_id, key)}
    artifacts = {artifact.path for artifact in client.list_artifacts(run_id)}
    return {
        "metric_values": (len(metric_values), sum(_stored(point, stored_values) for point in metric_values)),
        "params": (len(params), sum(_same_param(logged.data.params.get(key), value) for key, value in params.items())),
        "tags": (len(tags), sum(logged.data.tags.get(key) == value for key, value in tags.items())),
        "artifacts": (len(ARTIFACTS), len(artifacts & set(ARTIFACTS))),
    }


def _stored(point: tuple[str, int, float], stored: set[tuple[str, int, float]]) -> bool:
    key, step, value = point
    if isinstance(value, float) and math.isnan(value):
        return any(k == key and s == step and math.isnan(v) for k, s, v in stored)
    return (key, step, float(value)) in stored


def _same_param(stored: str | None, written: str) -> bool:
    """Whether a logged parameter is the config's value: the trainer logs a tuple where config.yaml holds a list."""
    return stored is not None and _literal(stored) == _literal(written)


def _literal(text: str) -> Any:
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text
    return list(value) if isinstance(value, tuple) else value


def _shown(uri: str) -> str:
    """The URI with any password hidden."""
    if "@" not in uri or "://" not in uri:
        return uri
    scheme, rest = uri.split("://", 1)
    credentials, host = rest.rsplit("@", 1)
    return f"{scheme}://{credentials.split(':', 1)[0]}:***@{host}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m algos.campaign.tracking_burst", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--uri", required=True, help="MLflow tracking URI (http://host:5000, sqlite:///path/mlflow.db)")
    parser.add_argument("--jobs", type=int, default=16, help="training jobs started at once (default 16)")
    parser.add_argument("--model", required=True, help="model every job starts from (e.g. results/base_model)")
    parser.add_argument("--out", type=Path, required=True, help="folder of the jobs' run directories and logs")
    parser.add_argument("overrides", nargs="*", help="key=value overrides of every job, e.g. task.max_steps=3")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    report = run_burst(args.uri, args.jobs, args.model, args.out, args.overrides)
    print(json.dumps(report, indent=2))
    return 1 if report["failed_jobs"] or report["lost"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
