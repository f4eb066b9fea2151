"""Training curves of ablation rows across seeds, as PNG bytes ready to embed in a self-contained report.

The DAPO paper (Yu et al. 2025) argues for each component with a curve rather than a single number:
held-out accuracy over training, entropy kept from collapsing by Clip-Higher, response length and the
share of truncated responses under overlong shaping, and how often the low and high clips are active.
``CURVES`` lists those metrics; ``figure_grid`` draws one figure per metric with one line per ablation row.

A row's line is the mean over its seeds at every step that all of its seeds logged, and a shaded band
spans the minimum to the maximum over those seeds, so the reader sees the spread of every run, not only
an average (as ``reports.stats`` does for final numbers, the number of runs is always shown).

Figures are drawn on ``matplotlib.figure.Figure`` objects rendered by the Agg canvas, never through
``pyplot``: nothing is registered in pyplot's global figure list, so nothing can stay open or leak
between calls, and no interactive backend is ever touched.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from algos.run_files import read_metrics

CURVES: dict[str, str] = {
    "eval/test/accuracy_t1": "held-out accuracy (test, T = 1)",
    "rollout/reward_mean": "reward mean",
    "actor/entropy": "entropy",
    "rollout/response_length_mean": "response length mean (tokens)",
    "rollout/truncated_frac": "truncated fraction",
    "actor/clip_frac_low": "clip fraction low",
    "actor/clip_frac_high": "clip fraction high",
}
"""Metric key -> axis title, in the order the figures appear in a report."""

FIGURE_SIZE_IN = (6.0, 3.5)
DPI = 100  # with the fixed size: every PNG is 600 x 350 pixels, whatever its content

History = Sequence[Mapping[str, Any]]
"""One run's ``metrics.jsonl``: its lines in order, each a dict with a "step" and some metric keys."""


@dataclass(frozen=True)
class SeedCurve:
    """One row's curve for one metric, aggregated over its seeds.

    steps: shape (S,), increasing, the steps at which every seed logged the metric.
    mean, low, high: shape (S,), the mean, minimum and maximum over seeds at each of those steps.
    n_seeds: the number of seeds behind every point.
    """

    steps: np.ndarray
    mean: np.ndarray
    low: np.ndarray
    high: np.ndarray
    n_seeds: int


def seed_curve(histories: Sequence[History], key: str) -> SeedCurve | None:
    """Aggregate ``key`` over seeds, one history per seed.

    A step enters the curve only when every seed logged ``key`` at that step (a value of None counts as
    not logged); if a step appears on several lines of one history, the last value wins. Returns None when
    there are no histories or no step is shared by all of them.
    """
    by_seed = [{line["step"]: line[key] for line in history if line.get(key) is not None} for history in histories]
    if not by_seed:
        return None
    steps = sorted(set.intersection(*(set(by_step) for by_step in by_seed)))
    if not steps:
        return None
    values = np.array([[by_step[step] for step in steps] for by_step in by_seed], dtype=float)  # (n_seeds, S)
    return SeedCurve(
        steps=np.array(steps),
        mean=values.mean(axis=0),
        low=values.min(axis=0),
        high=values.max(axis=0),
        n_seeds=len(by_seed),
    )


def row_curves(histories_by_row: Mapping[str, Sequence[History]], key: str) -> dict[str, SeedCurve]:
    """``seed_curve`` of every row (row label -> its seeds' histories) that has one, in the mapping's order."""
    curves = {row: seed_curve(histories, key) for row, histories in histories_by_row.items()}
    return {row: curve for row, curve in curves.items() if curve is not None}


def curve_with_seed_band(runs_by_row: Mapping[str, Sequence[Path]], key: str, title: str) -> bytes:
    """One PNG of ``key`` against step, one line per row of ``runs_by_row`` (row label -> its seeds' run dirs).

    Rows keep the mapping's order; a row with no step shared by all its seeds is left out. Raises
    ValueError when no row has data for ``key`` (``figure_grid`` skips such keys instead).
    """
    curves = row_curves(_read_histories(runs_by_row), key)
    if not curves:
        raise ValueError(f"no run in rows {list(runs_by_row)} logged {key!r} at a step shared by all its seeds")
    return _render(curves, title)


def figure_grid(runs_by_row: Mapping[str, Sequence[Path]]) -> list[tuple[str, bytes]]:
    """(title, PNG) for every metric of ``CURVES`` that some row has, in ``CURVES`` order."""
    histories = _read_histories(runs_by_row)
    figures = []
    for key, title in CURVES.items():
        curves = row_curves(histories, key)
        if curves:
            figures.append((title, _render(curves, title)))
    return figures


def png_data_uri(png: bytes) -> str:
    """``png`` as a data URI, for an ``<img src=...>`` in an HTML file that needs no other files."""
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def _read_histories(runs_by_row: Mapping[str, Sequence[Path]]) -> dict[str, list[list[dict[str, Any]]]]:
    return {row: [read_metrics(Path(run)) for run in runs] for row, runs in runs_by_row.items()}


def _render(curves: Mapping[str, SeedCurve], title: str) -> bytes:
    figure = Figure(figsize=FIGURE_SIZE_IN, dpi=DPI, layout="tight")
    axes = figure.add_subplot()
    for row, curve in curves.items():
        sparse = len(curve.steps) < 30  # evaluation curves: a few points, each worth seeing
        (line,) = axes.plot(curve.steps, curve.mean, marker="." if sparse else None, label=f"{row} (n={curve.n_seeds})")
        if curve.n_seeds > 1:
            axes.fill_between(curve.steps, curve.low, curve.high, color=line.get_color(), alpha=0.2, linewidth=0)
    axes.set_xlabel("step")
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes.set_ylabel(title)
    axes.set_title(title)
    axes.grid(alpha=0.3)
    has_band = any(curve.n_seeds > 1 for curve in curves.values())
    legend_title = "line: mean; band: min–max over n seeds" if has_band else "line: mean over n seeds"
    axes.legend(title=legend_title, fontsize="small", title_fontsize="small")
    return png_bytes(figure)


def png_bytes(figure: Figure) -> bytes:
    """``figure`` as PNG bytes at its own size (no tight bounding box, so the pixel size stays fixed)."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()
