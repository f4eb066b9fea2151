"""What each run can be checked by on its own, and what a report must warn about in its runs.

The diagnostics are the quantities a setting may be tuned on without looking at another row (clip
fractions, KL to π_old, truncation, zero-variance groups), the steps at which dynamic sampling trained
short, and the error of the critic RL started from. :func:`run_warnings` names every short step and
every non-finite value a run logged.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from algos.campaign.ablations import AblationSpec, Row
from reports.analysis.endpoints import window_mean
from reports.analysis.runs import FinishedRun

DIAGNOSTICS = (
    ("actor/clip_frac_high", "up-clip %", "mean", 100.0),
    ("actor/clip_frac_low", "down-clip %", "mean", 100.0),
    ("actor/approx_kl_old_max", "KL to π_old (max update)", "mean", 1.0),
    ("rollout/truncated_frac", "truncated %", "mean", 100.0),
    ("rollout/all_correct_groups_frac", "all-correct groups %", "mean", 100.0),
    ("rollout/all_wrong_groups_frac", "all-wrong groups %", "mean", 100.0),
    ("rollout/short_batch", "short DS steps", "sum", 1.0),
    ("critic/value_error", "critic error at step 0", "initial", 1.0),
)
"""(metric, column, how a run is summarised: mean over RL steps / sum over RL steps / value at step 0, scale)."""


def run_summary(history: Sequence[Mapping[str, Any]], metric: str, how: str) -> float | None:
    """One run's summary of ``metric`` (see :data:`DIAGNOSTICS`); None when it logged none."""
    if how == "initial":
        return window_mean(history, metric, (0, 0))
    values = [line[metric] for line in history if line["step"] > 0 and line.get(metric) is not None]
    if not values:
        return None
    return float(np.sum(values) if how == "sum" else np.mean(values))


def row_diagnostics(
    spec: AblationSpec, runs_of: Mapping[str, Sequence[FinishedRun]]
) -> list[tuple[Row, list[float | None]]]:
    """Per row, in the spec's order: each diagnostic's mean over seeds of the runs' summaries (None where no run
    logged it), in the metric's units."""
    found = []
    for row in spec.rows:
        runs = runs_of.get(row.id, ())
        means = []
        for metric, _, how, _ in DIAGNOSTICS:
            values = [v for v in (run_summary(run.history, metric, how) for run in runs) if v is not None]
            means.append(float(np.mean(values)) if values else None)
        found.append((row, means))
    return found


def run_warnings(spec: AblationSpec, runs_of: Mapping[str, Sequence[FinishedRun]]) -> list[str]:
    """Every step at which dynamic sampling trained short, and every non-finite value a run logged."""
    warnings = []
    for row in spec.rows:
        for run in runs_of.get(row.id, ()):
            short = [line["step"] for line in run.history if line.get("rollout/short_batch")]
            if short:
                warnings.append(
                    f"{row.label}, seed {run.seed}: dynamic sampling reached its round cap and trained on a short "
                    f"batch at steps {', '.join(map(str, short))}"
                )
            bad = sorted(
                {
                    key
                    for line in run.history
                    for key, value in line.items()
                    if isinstance(value, float) and not math.isfinite(value)
                }
            )
            if bad:
                warnings.append(f"{row.label}, seed {run.seed}: non-finite values logged for {', '.join(bad)}")
    return warnings
