"""Finished runs loaded once: every file a report reads of a run directory, parsed into one record.

A run directory (:mod:`algos.trainer.run_files`) holds ``config.yaml``, ``final_metrics.json``,
``metrics.jsonl`` and ``run.json``. Every table, endpoint, figure and provenance line of a report reads
the :class:`FinishedRun` loaded here, so each file is parsed once per report, however many of them use it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from algos.trainer.run_files import CONFIG_FILE, FINAL_FILE, RUN_FILE, read_metrics

History = Sequence[Mapping[str, Any]]
"""One run's ``metrics.jsonl``: its lines in order, each a dict with a "step" and some metric keys."""


@dataclass(frozen=True)
class FinishedRun:
    """One finished run's files. directory: ``.../seed<n>``. config: the resolved config (``config.yaml``).
    final: ``final_metrics.json``. history: ``metrics.jsonl``, one dict per logged line. record: ``run.json``
    (provenance), None where the run wrote none."""

    directory: Path
    config: dict[str, Any]
    final: dict[str, float]
    history: list[dict[str, Any]]
    record: dict[str, Any] | None

    @property
    def seed(self) -> int:
        """The seed of a run directory named ``seed<n>``."""
        return int(self.directory.name.removeprefix("seed"))

    @property
    def steps(self) -> int:
        """The RL steps the run was configured for (its ``run.steps``, after any step scaling)."""
        return self.config["run"]["steps"]


def load_run(directory: Path) -> FinishedRun:
    """Every file of the finished run in ``directory``, each read once; a missing config or final file is named."""
    missing = [str(directory / name) for name in (CONFIG_FILE, FINAL_FILE) if not (directory / name).is_file()]
    if missing:
        raise FileNotFoundError(f"not a finished run: missing {', '.join(missing)}")
    record = directory / RUN_FILE
    return FinishedRun(
        directory=directory,
        config=yaml.safe_load((directory / CONFIG_FILE).read_text()),
        final=json.loads((directory / FINAL_FILE).read_text()),
        history=read_metrics(directory),
        record=json.loads(record.read_text()) if record.is_file() else None,
    )


def finished_runs(runs_dir: Path, spec: str, row: str, seeds: int | Sequence[int]) -> list[FinishedRun]:
    """The runs of ``row`` of ``spec`` under ``runs_dir`` that have final metrics, for seeds 0..seeds-1 (or the
    given seeds) in order."""
    candidates = [runs_dir / spec / row / f"seed{seed}" for seed in seed_list(seeds)]
    return [load_run(run) for run in candidates if (run / FINAL_FILE).is_file()]


def seed_list(seeds: int | Sequence[int]) -> list[int]:
    """Seeds 0..seeds-1 for a count, the seeds themselves for a sequence."""
    return list(range(seeds)) if isinstance(seeds, int) else list(seeds)
