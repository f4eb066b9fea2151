"""Training curves of ablation rows across seeds, as PNG bytes ready to embed in a self-contained report.

The DAPO paper (Yu et al. 2025) argues for each component with a curve rather than a single number:
held-out accuracy over training, entropy kept from collapsing by Clip-Higher, response length and the
share of truncated responses under overlong shaping, and how often the low and high clips are active.
``CURVES`` lists those metrics; ``figure_grid`` draws one figure per metric, made of small panels:
one panel per ablation row, the row in colour over the row it is compared with in grey, all panels
on one y scale. Each row's effect is read in its own panel, not picked out of ten overlaid curves.

A row's line is the mean over its seeds at every step that all of its seeds logged, and a shaded band
spans the minimum to the maximum over those seeds, so the reader sees the spread of every run, not only
an average (as ``reports.statistics.comparisons`` does for final numbers, the number of runs is always shown). Legends
sit outside the panels, below them, never over the data.

Figures are drawn on ``matplotlib.figure.Figure`` objects rendered by the Agg canvas, never through
``pyplot``: nothing is registered in pyplot's global figure list, so nothing can stay open or leak
between calls, and no interactive backend is ever touched.
"""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

from reports.analysis.runs import History

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

FIGURE_SIZE_IN = (6.0, 3.5)  # a figure of one axes (600 x 350 pixels at DPI)
PANEL_SIZE_IN = (2.4, 1.8)  # one row's panel; four fit across a report page (1000 px)
PANEL_COLUMNS = 4
LEGEND_HEIGHT_IN = 0.6
DPI = 100
ROW_COLOR = "tab:blue"
REFERENCE_COLOR = "0.45"


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


def figure_grid(
    histories_by_row: Mapping[str, Sequence[History]], compared: Mapping[str, str] | None = None
) -> list[tuple[str, bytes]]:
    """(title, PNG) of a panel figure for every metric of ``CURVES`` that some row has, in ``CURVES`` order.

    histories_by_row: row label -> its seeds' histories; compared: row label -> the label of the row it is
    compared with, drawn in grey in its panel. Panels keep the mapping's order; a row with no step shared
    by all its seeds gets no panel, and a metric no row has gets no figure.
    """
    figures = []
    for key, title in CURVES.items():
        curves = row_curves(histories_by_row, key)
        if curves:
            figures.append((title, png_bytes(panels_figure(curves, title, compared or {}))))
    return figures


def png_data_uri(png: bytes) -> str:
    """``png`` as a data URI, for an ``<img src=...>`` in an HTML file that needs no other files."""
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def panel_grid(panels: int, title: str, share_y: bool = True) -> tuple[Figure, list[Axes]]:
    """A figure of ``panels`` small axes sharing x (and y), up to ``PANEL_COLUMNS`` a line, room for a legend below.

    share_y: one y scale for all panels (the same metric in every panel); False when panels show different metrics.

    The pixel size depends only on the number of panels: columns x ``PANEL_SIZE_IN`` wide, lines x its
    height plus ``LEGEND_HEIGHT_IN`` tall, at ``DPI``. The lowest panel of each column carries the step axis.
    """
    columns = min(PANEL_COLUMNS, panels)
    lines = math.ceil(panels / columns)
    width, height = PANEL_SIZE_IN
    figure = Figure(figsize=(columns * width, lines * height + LEGEND_HEIGHT_IN), dpi=DPI, layout="constrained")
    grid = figure.subplots(lines, columns, sharex=True, sharey=share_y, squeeze=False)
    axes = list(grid.flat)
    for unused in axes[panels:]:
        unused.set_visible(False)
    for lowest in axes[max(0, panels - columns) : panels]:
        lowest.xaxis.set_tick_params(labelbottom=True)  # above an empty slot, sharex would hide them
        lowest.set_xlabel("step", fontsize="x-small")
    figure.suptitle(title, fontsize="medium")
    return figure, axes[:panels]


def draw_row(axes: Axes, curve: SeedCurve, reference: SeedCurve | None) -> None:
    """The row's curve in colour over its compared row's in grey, each a mean line with its min–max band."""
    for shown, color, style in ((reference, REFERENCE_COLOR, "--"), (curve, ROW_COLOR, "-")):
        if shown is None:
            continue
        sparse = len(shown.steps) < 30  # evaluation curves: a few points, each worth seeing
        axes.plot(shown.steps, shown.mean, style, color=color, marker="." if sparse else None, linewidth=1.2)
        if shown.n_seeds > 1:
            axes.fill_between(shown.steps, shown.low, shown.high, color=color, alpha=0.2, linewidth=0)
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes.tick_params(labelsize="x-small")
    axes.grid(alpha=0.3)


def legend_below(figure: Figure, extra: Sequence[tuple[Artist, str]] = ()) -> None:
    """The figure's one legend, outside the panels below them: what colour, grey, line and band mean."""
    entries = [
        (Line2D([], [], color=ROW_COLOR), "row: mean over its n seeds"),
        (Patch(color=ROW_COLOR, alpha=0.2), "row: min–max over seeds"),
        (Line2D([], [], color=REFERENCE_COLOR, linestyle="--"), "row it is compared with: mean"),
        (Patch(color=REFERENCE_COLOR, alpha=0.2), "compared row: min–max"),
        *extra,
    ]
    handles, labels = zip(*entries, strict=True)
    figure.legend(handles, labels, loc="outside lower center", ncols=3, fontsize="x-small", frameon=False)


def panel_title(row: str, curve: SeedCurve, reference: str | None) -> str:
    """``row (n=3)``, with ``vs <compared row>`` on a second line when it has one."""
    return f"{row} (n={curve.n_seeds})" + (f"\nvs {reference}" if reference else "")


def panels_figure(curves: Mapping[str, SeedCurve], title: str, compared: Mapping[str, str]) -> Figure:
    """A panel per row of ``curves`` (row label -> curve), each over its compared row's curve, one legend below."""
    figure, panels = panel_grid(len(curves), title)
    for axes, (row, curve) in zip(panels, curves.items(), strict=True):
        reference = compared.get(row)
        draw_row(axes, curve, curves.get(reference) if reference else None)
        axes.set_title(panel_title(row, curve, reference), fontsize="x-small")
    legend_below(figure)
    return figure


def png_bytes(figure: Figure) -> bytes:
    """``figure`` as PNG bytes at its own size (no tight bounding box, so the pixel size stays fixed)."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()
