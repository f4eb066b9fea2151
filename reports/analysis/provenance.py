"""Where every number of a report came from, read from the runs' own files: the spec file's state, git
commits, config hashes, package versions, hardware and environments, seeds, the evaluation schedule,
training time and run ids."""

from __future__ import annotations

import hashlib
import json
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from algos.campaign.ablations import AblationSpec
from algos.config.schema import RunConfig
from reports.analysis.rows import SELECTION, RowResult


def provenance(spec: AblationSpec, results: Sequence[RowResult]) -> dict[str, Any]:
    """Where every number came from, read from the runs' own files."""
    runs = [run for result in results for run in result.runs]
    records = [run.record for run in runs if run.record is not None]
    versions = sorted(
        {
            f"{key.removeprefix('version.')} {value}"
            for record in records
            for key, value in record.items()
            if key.startswith("version.")
        }
    )
    return {
        "spec": spec.name,
        "paper": spec.paper,
        "paper metric": spec.paper_metric,
        "our metric": f"{spec.metric} ({SELECTION})",
        "git commits": sorted({record.get("git_commit", "unknown") for record in records}),
        "config hashes": {
            result.row.id: sorted({run.record.get("config_hash", "?") for run in result.runs if run.record is not None})
            for result in results
        },
        "packages": versions,
        "hardware": sorted({record.get("hardware", "unknown") for record in records}),
        "environments": environments(records),
        "seeds": {result.row.id: len(result.runs) for result in results},
        "held-out evaluation": evaluation_schedule(results),
        "training seconds (sum)": round(sum(run.final.get("perf/train_seconds_total", 0.0) for run in runs), 1),
        "run ids": [record["tracker_run_id"] for record in records if record.get("tracker_run_id")],
        "run directories": [str(run.directory) for run in runs],
    }


def environments(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The runs' environments by fingerprint (:func:`algos.engine.provenance.environment`): CPUs, kernels, threads, runs."""
    found: dict[str, Any] = {}
    for record in records:
        environment = record.get("environment")
        if environment is None:
            found.setdefault("unrecorded", {"runs": 0})["runs"] += 1
            continue
        entry = found.setdefault(
            environment["fingerprint"],
            {
                "cpu models": [],
                "cpu flags": environment["cpu_flags"],
                "cpu capability": environment["cpu_capability"],
                "kernel settings": environment["kernel_settings"],
                "threads": environment["threads"],
                "python": environment["python"],
                "packages": environment["packages"],
                "runs": 0,
            },
        )
        entry["runs"] += 1
        if environment["cpu_model"] not in entry["cpu models"]:
            entry["cpu models"].append(environment["cpu_model"])
    return found


def environment_warnings(found: Mapping[str, Any]) -> list[str]:
    """One warning when the runs came from more than one environment (:func:`environments`), naming what differs."""
    if len(found) < 2:
        return []
    recorded = [entry for key, entry in found.items() if key != "unrecorded"]
    differing = sorted(
        {
            field
            for field in ("cpu capability", "kernel settings", "threads", "python")
            if len({json.dumps(entry[field], sort_keys=True) for entry in recorded}) > 1
        }
        | {
            f"package {name}"
            for name in {name for entry in recorded for name in entry["packages"]}
            if len({entry["packages"].get(name) for entry in recorded}) > 1
        }
    )
    runs = ", ".join(f"{key}: {entry['runs']} runs" for key, entry in found.items())
    what = f"; they differ in {', '.join(differing)}" if differing else ""
    return [
        f"the runs came from {len(found)} environments ({runs}){what}: numbers may not be comparable bit for bit "
        "across them (see 'environments' in the provenance)"
    ]


def evaluation_schedule(results: Sequence[RowResult]) -> list[str]:
    """The held-out evaluations behind the curves, as the runs' configs set them (one line per distinct setting)."""
    schedules = set()
    for result in results:
        for run in result.runs:
            settings = RunConfig(**run.config.get("run", {}))
            steps, every = settings.steps, settings.eval_every or settings.steps
            points = len(range(0, steps, every)) + 1  # steps 0, every, 2 every, ... and the last
            schedules.add(
                f"{points} evaluations over {steps} steps (every {every}), "
                f"{settings.eval_problems} problems each, {settings.final_eval_problems or settings.eval_problems} "
                "at the last step"
            )
    return sorted(schedules)


def spec_file_state(path: Path) -> tuple[str, str | None]:
    """The spec file's SHA-256 (first 16 hex digits) and a warning when git reports it changed since its last commit."""
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    try:
        status = subprocess.run(
            ["git", "status", "--porcelain", "--", path.name],
            cwd=path.parent,
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return digest, f"could not ask git whether {path.name} has uncommitted changes"
    if status:
        return digest, (
            f"{path.name} has uncommitted changes ({status.split()[0]}): its endpoints or rows may have been "
            "edited after these runs; commit the spec before reading the verdicts"
        )
    return digest, None


DECLARED_ROW_FIELDS = ("id", "paper", "claim", "endpoints", "compare_to")
"""What a row declares for the verdicts (its configs are guarded by the runs' config hashes)."""


def declarations(text: str) -> dict:
    """The parts of a spec's YAML text the verdicts are judged by: the metric, the design, the spec's endpoints and
    each row's paper number, claim, endpoints and compared row."""
    body = yaml.safe_load(text) or {}
    rows = body.get("rows") or []
    return {
        "metric": body.get("metric"),
        "design": body.get("design"),
        "endpoints": body.get("endpoints"),
        "rows": [{key: row.get(key) for key in DECLARED_ROW_FIELDS} for row in rows if isinstance(row, dict)],
    }


def declaration_warnings(path: Path, commits: list[str]) -> list[str]:
    """A warning per commit the runs were trained at whose version of the spec declared other verdicts than the
    spec now does (a design, endpoint, paper number or claim changed after the runs existed)."""
    now = declarations(path.read_text())
    warnings = []
    for commit in commits:
        if commit == "unknown":
            continue
        try:
            then = subprocess.run(
                ["git", "show", f"{commit}:./{path.name}"],
                cwd=path.parent,
                capture_output=True,
                text=True,
                check=True,
                timeout=30,
            ).stdout
        except (OSError, subprocess.SubprocessError):
            warnings.append(f"could not read {path.name} at the runs' commit {commit[:10]} to compare its declarations")
            continue
        if declarations(then) != now:
            warnings.append(
                f"{path.name} declares its design, endpoints, paper numbers or claims differently from its version at "
                f"the runs' commit {commit[:10]}: these verdicts are judged under declarations made after the runs "
                "existed"
            )
    return warnings
