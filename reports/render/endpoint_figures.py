"""The figures of an ablation report's endpoints: one panel per declared (row, endpoint) with its window
shaded, and accuracy against responses generated for dynamic-sampling rows (DAPO Fig. 6)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from algos.campaign.ablations import AblationSpec, Row
from reports.analysis.endpoints import EndpointResult
from reports.analysis.runs import FinishedRun
from reports.render.figures import FIGURE_SIZE_IN, SeedCurve, draw_row, legend_below, panel_grid, png_bytes, seed_curve

WINDOW_COLOR = "tab:orange"


def endpoint_figure(results: Sequence[EndpointResult], runs_of: Mapping[str, Sequence[FinishedRun]]) -> bytes | None:
    """One panel per (row, endpoint): the row's curve over its compared row's (mean, min–max band), window shaded.

    runs_of: row id -> its finished runs. None when no endpoint was measured.
    """
    panels = [result for result in results if result.values]
    if not panels:
        return None
    figure, axes_list = panel_grid(
        len(panels),
        "Each row (colour) over the row it is compared with (grey); the declared window shaded",
        share_y=False,
    )

    def curve(row_id: str, metric: str) -> SeedCurve | None:
        return seed_curve([run.history for run in runs_of.get(row_id, ())], metric)

    for axes, result in zip(axes_list, panels, strict=True):
        metric, row = result.endpoint.metric, result.row
        mine = curve(row.id, metric)
        reference = curve(row.compare_to, metric) if row.compare_to else None
        if mine is not None:
            draw_row(axes, mine, reference)
        axes.axvspan(result.window[0] - 0.5, result.window[1] + 0.5, color=WINDOW_COLOR, alpha=0.15, linewidth=0)
        axes.set_title(f"{row.label}\n{metric}", fontsize="x-small")
    legend_below(figure, [(Patch(color=WINDOW_COLOR, alpha=0.15), "the endpoint's declared window")])
    return png_bytes(figure)


def accuracy_per_sample_figure(
    spec: AblationSpec, runs_of: Mapping[str, Sequence[FinishedRun]], metric: str
) -> bytes | None:
    """DAPO Fig. 6: ``metric`` against responses generated so far, for each dynamic-sampling row and its compared row.

    x is the mean over seeds of ``rollout/samples_generated_total`` at each evaluation step (0 at step
    0), y the mean of ``metric``; a dynamic-sampling row pays for its filtered groups in samples.
    """
    dynamic = [row for row in spec.rows if spec.config(row.id).dynamic_sampling.enabled]
    shown = list(dict.fromkeys([r.id for row in dynamic for r in (row, *_compared(spec, row))]))
    if not shown:
        return None
    curves = {}
    for row_id in shown:
        histories = [run.history for run in runs_of.get(row_id, ())]
        points = _samples_and_metric(histories, metric)
        if points:
            curves[f"{spec.row(row_id).label} (n={len(histories)})"] = points
    if not curves:
        return None
    figure = Figure(figsize=FIGURE_SIZE_IN, dpi=100, layout="constrained")
    axes = figure.add_subplot()
    for label, points in curves.items():
        samples, values = zip(*points, strict=True)
        axes.plot(samples, values, marker=".", label=label)
    axes.set_xlabel("responses generated")
    axes.set_ylabel(metric)
    axes.set_title(f"{metric} against responses generated (DAPO Fig. 6)")
    axes.grid(alpha=0.3)
    figure.legend(loc="outside lower center", ncols=2, fontsize="x-small", frameon=False)
    return png_bytes(figure)


def _compared(spec: AblationSpec, row: Row) -> tuple[Row, ...]:
    return (spec.row(row.compare_to),) if row.compare_to else ()


def _samples_and_metric(histories: Sequence[Sequence[Mapping[str, Any]]], metric: str) -> list[tuple[float, float]]:
    """(mean samples generated, mean metric) at every step where all seeds logged the metric."""
    per_seed = []
    for history in histories:
        by_step = {}
        for line in history:
            if line.get(metric) is not None:
                by_step[line["step"]] = (line.get("rollout/samples_generated_total", 0.0), line[metric])
        per_seed.append(by_step)
    if not per_seed:
        return []
    steps = sorted(set.intersection(*(set(by_step) for by_step in per_seed)))
    return [
        (float(np.mean([s[step][0] for s in per_seed])), float(np.mean([s[step][1] for s in per_seed])))
        for step in steps
    ]
