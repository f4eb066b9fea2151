"""The declared endpoints of an ablation spec, measured on its finished runs.

An endpoint (:class:`algos.campaign.ablations.Endpoint`) is a metric averaged over a window of steps. Each run
gives one value (the mean of the metric over the window's logged steps); a row's value is the mean
over seeds with its Student-t interval; its Δ to the row it is compared with is a paired t over
shared seeds (Welch for different seed sets, Stein's test for a planned campaign); and the verdict,
judged with every other comparison of the table as one family (:mod:`reports.analysis.family`), says
whether that Δ points the way the paper argues (``agrees``), the other way (``disagrees``), or neither
(``inconclusive``, with the effect it could have detected).

Windows are declared at a row's full length and scaled like the runs' step counts: the factor is the
runs' own ``run.steps`` over the row's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from algos.campaign.ablations import AblationSpec, Endpoint, Row
from reports.analysis.runs import FinishedRun
from reports.statistics.comparisons import Comparison, Estimate, seed_estimate
from reports.statistics.verdicts import Judgement, compare_seeds


@dataclass(frozen=True)
class EndpointResult:
    """One (row, endpoint): per-seed window means, their estimate, and the comparison with the compared row.

    values, reference: seed -> window mean of the row and of the row it is compared with (empty: none).
    final: the window is the runs' last step alone. judgement: set once the report's family is judged.
    """

    row: Row
    endpoint: Endpoint
    window: tuple[int, int]
    values: dict[int, float]
    reference: dict[int, float]
    estimate: Estimate | None
    comparison: Comparison | None
    final: bool = False
    judgement: Judgement | None = None


def window_mean(history: Sequence[Mapping[str, Any]], metric: str, window: tuple[int, int]) -> float | None:
    """Mean of ``metric`` over the steps of ``window`` at which it was logged (the last line of a step wins)."""
    by_step = {line["step"]: line[metric] for line in history if line.get(metric) is not None}
    values = [value for step, value in by_step.items() if window[0] <= step <= window[1]]
    return float(np.mean(values)) if values else None


def step_factor(run: FinishedRun, row_steps: int) -> float:
    """How the run's step counts were scaled: its ``run.steps`` over the row's full-length ``row_steps``."""
    return run.steps / row_steps


def measure(
    spec: AblationSpec,
    runs_of: Mapping[str, Sequence[FinishedRun]],
    row_steps: Mapping[str, int],
    pilot_seeds: int | None = None,
) -> list[EndpointResult]:
    """Every declared (row, endpoint) measured on the row's finished runs, in the spec's order.

    runs_of: row id -> its finished runs. row_steps: row id -> its full-length ``run.steps``.
    pilot_seeds: the campaign's seed plan pilot (None: not planned), see :func:`reports.statistics.verdicts.compare_seeds`.
    """

    def values(row_id: str, endpoint: Endpoint) -> tuple[dict[int, float], tuple[int, int], bool]:
        found, window, final = {}, endpoint.window, False
        for run in runs_of.get(row_id, ()):
            factor = step_factor(run, row_steps[row_id])
            window = endpoint.scaled(factor).window
            final = window[0] == window[1] == round(row_steps[row_id] * factor)
            value = window_mean(run.history, endpoint.metric, window)
            if value is not None:
                found[run.seed] = value
        return found, window, final

    results = []
    for row in spec.rows:
        for endpoint in row.endpoints:
            mine, window, final = values(row.id, endpoint)
            theirs = values(row.compare_to, endpoint)[0] if row.compare_to else {}
            results.append(
                EndpointResult(
                    row=row,
                    endpoint=endpoint,
                    window=window,
                    values=mine,
                    reference=theirs,
                    estimate=seed_estimate(list(mine.values())) if mine else None,
                    comparison=compare_seeds(mine, theirs, pilot_seeds),
                    final=final,
                )
            )
    return results
