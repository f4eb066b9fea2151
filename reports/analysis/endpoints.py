"""The declared endpoints of an ablation spec, measured on its runs: a table, figure panels and diagnostics.

An endpoint (:class:`algos.campaign.ablations.Endpoint`) is a metric averaged over a window of steps. Each run
gives one value (the mean of the metric over the window's logged steps); a row's value is the mean
over seeds with its Student-t interval; its Δ to the row it is compared with is a paired t over
shared seeds (Welch for different seed sets, Stein's test for a planned campaign); and the verdict,
judged with every other comparison of the table as one family (:mod:`reports.verdicts`), says whether
that Δ points the way the paper argues (``agrees``), the other way (``disagrees``), or neither
(``inconclusive``, with the effect it could have detected).

Windows are declared at a row's full length and scaled like the runs' step counts: the factor is the
runs' own ``run.steps`` over the row's, read from each run's ``config.yaml``.

The diagnostics table gives, per row, the quantities a run can be tuned on without looking at
another row (clip fractions, KL to π_old, truncation, zero-variance groups), the steps at which
dynamic sampling trained short, and the error of the critic RL started from; ``run_warnings``
names every short step and every non-finite value a run logged.
"""

from __future__ import annotations

import hashlib
import math
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from algos.campaign.ablations import AblationSpec, Endpoint, Row
from algos.trainer.run_files import CONFIG_FILE, read_metrics
from reports.render.figures import (
    FIGURE_SIZE_IN,
    SeedCurve,
    draw_row,
    legend_below,
    panel_grid,
    png_bytes,
    seed_curve,
)
from reports.stats import MINUS, Comparison, Estimate, format_probability, seed_estimate
from reports.verdicts import Judgement, compare_seeds, p_cells

WINDOW_COLOR = "tab:orange"


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


def seed_of(run: Path) -> int:
    """The seed of a run directory named ``seed<n>``."""
    return int(run.name.removeprefix("seed"))


def window_mean(history: Sequence[Mapping[str, Any]], metric: str, window: tuple[int, int]) -> float | None:
    """Mean of ``metric`` over the steps of ``window`` at which it was logged (the last line of a step wins)."""
    by_step = {line["step"]: line[metric] for line in history if line.get(metric) is not None}
    values = [value for step, value in by_step.items() if window[0] <= step <= window[1]]
    return float(np.mean(values)) if values else None


def step_factor(run: Path, row_steps: int) -> float:
    """How the run's step counts were scaled: its ``run.steps`` over the row's full-length ``row_steps``."""
    config = yaml.safe_load((run / CONFIG_FILE).read_text())
    return config["run"]["steps"] / row_steps


def measure(
    spec: AblationSpec,
    runs_of: Mapping[str, Sequence[Path]],
    row_steps: Mapping[str, int],
    pilot_seeds: int | None = None,
) -> list[EndpointResult]:
    """Every declared (row, endpoint) measured on the row's finished runs, in the spec's order.

    pilot_seeds: the campaign's seed plan pilot (None: not planned), see :func:`reports.verdicts.compare_seeds`.
    """
    histories = {run: read_metrics(run) for runs in runs_of.values() for run in runs}

    def values(row_id: str, endpoint: Endpoint) -> tuple[dict[int, float], tuple[int, int], bool]:
        found, window, final = {}, endpoint.window, False
        for run in runs_of.get(row_id, ()):
            factor = step_factor(run, row_steps[row_id])
            window = endpoint.scaled(factor).window
            final = window[0] == window[1] == round(row_steps[row_id] * factor)
            value = window_mean(histories[run], endpoint.metric, window)
            if value is not None:
                found[seed_of(run)] = value
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


def number(value: float) -> str:
    """A metric value in a table cell: three significant digits, typographic minus."""
    text = f"{value:.3g}"
    return ("0" if float(text) == 0 else text).replace("-", MINUS)


def estimate_cell(estimate: Estimate) -> str:
    if not estimate.has_interval:
        return f"{number(estimate.mean)} (n={estimate.n})"
    return f"{number(estimate.mean)} [{number(estimate.ci_low)}, {number(estimate.ci_high)}] (n={estimate.n})"


ENDPOINT_HEADER = [
    "row",
    "endpoint (steps)",
    "ours: mean [95% CI] (n)",
    "Δ [95% CI] vs compared row",
    "p",
    "p adjusted",
    "exact p",
    "P(improvement)",
    "expected",
    "agrees?",
    "source",
]


def endpoint_cells(spec: AblationSpec, results: Sequence[EndpointResult]) -> list[list[str]]:
    """The endpoint table's rows as text cells."""
    cells = []
    for result in results:
        comparison, row, judgement = result.comparison, result.row, result.judgement
        delta = comparison.delta if comparison else None
        cells.append(
            [
                row.label,
                f"{result.endpoint.metric} ({result.window[0]}–{result.window[1]})",
                estimate_cell(result.estimate) if result.estimate else "no data",
                f"{delta_text(delta)} vs {spec.row(row.compare_to).label}" if delta else "—",
                *p_cells(comparison, judgement),
                format_probability(comparison.p_improvement) if comparison else "—",
                result.endpoint.direction if row.compare_to else "—",
                judgement.cell(comparison) if judgement else "—",
                result.endpoint.source,
            ]
        )
    return cells


def delta_text(delta: Estimate) -> str:
    """A Δ in a metric's units: signed mean and its interval (none at n = 1)."""
    mean = f"{'+' if delta.mean > 0 else ''}{number(delta.mean)}"
    return f"{mean} [{number(delta.ci_low)}, {number(delta.ci_high)}]" if delta.has_interval else mean


def endpoint_figure(
    spec: AblationSpec, results: Sequence[EndpointResult], runs_of: Mapping[str, Sequence[Path]]
) -> bytes | None:
    """One panel per (row, endpoint): the row's curve over its compared row's (mean, min–max band), window shaded."""
    panels = [result for result in results if result.values]
    if not panels:
        return None
    figure, axes_list = panel_grid(
        len(panels),
        "Each row (colour) over the row it is compared with (grey); the declared window shaded",
        share_y=False,
    )
    histories = {run: read_metrics(run) for runs in runs_of.values() for run in runs}

    def curve(row_id: str, metric: str) -> SeedCurve | None:
        return seed_curve([histories[run] for run in runs_of.get(row_id, ())], metric)

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


DIAGNOSTIC_HEADER = ["row", *(column for _, column, _, _ in DIAGNOSTICS)]


def diagnostic_cells(spec: AblationSpec, runs_of: Mapping[str, Sequence[Path]]) -> list[list[str]]:
    """Per row: each diagnostic's mean over seeds of the runs' summaries (— where no run logged it)."""
    cells = []
    for row in spec.rows:
        histories = [read_metrics(run) for run in runs_of.get(row.id, ())]
        line = [row.label]
        for metric, _, how, scale in DIAGNOSTICS:
            values = [v for v in (run_summary(h, metric, how) for h in histories) if v is not None]
            line.append(number(scale * float(np.mean(values))) if values else "—")
        cells.append(line)
    return cells


def run_warnings(spec: AblationSpec, runs_of: Mapping[str, Sequence[Path]]) -> list[str]:
    """Every step at which dynamic sampling trained short, and every non-finite value a run logged."""
    warnings = []
    for row in spec.rows:
        for run in runs_of.get(row.id, ()):
            history = read_metrics(run)
            short = [line["step"] for line in history if line.get("rollout/short_batch")]
            if short:
                warnings.append(
                    f"{row.label}, seed {seed_of(run)}: dynamic sampling reached its round cap and trained on a short "
                    f"batch at steps {', '.join(map(str, short))}"
                )
            bad = sorted(
                {
                    key
                    for line in history
                    for key, value in line.items()
                    if isinstance(value, float) and not math.isfinite(value)
                }
            )
            if bad:
                warnings.append(f"{row.label}, seed {seed_of(run)}: non-finite values logged for {', '.join(bad)}")
    return warnings


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


def accuracy_per_sample_figure(spec: AblationSpec, runs_of: Mapping[str, Sequence[Path]], metric: str) -> bytes | None:
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
        histories = [read_metrics(run) for run in runs_of.get(row_id, ())]
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
