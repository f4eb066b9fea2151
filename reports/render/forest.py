"""The forest plot that opens an ablation report: every comparison's Δ with its interval, at a glance.

One panel per compared quantity (the table's metric, then each declared endpoint metric), one line per
row: Δ (dot) with its 95 % interval, coloured by its verdict; the grey band around zero spans ± the
effect the comparison could have detected (80 % power at the family's per-comparison level), so a
short interval inside the band reads "no effect this large", a long one "these seeds cannot tell";
a triangle at the panel's edge marks the direction the paper argues (▶ up, ◀ down); ★ marks each row's
declared primary comparison (the others are secondary).
"""

from __future__ import annotations

from collections.abc import Sequence

from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from algos.campaign.ablations import AblationSpec
from reports.analysis.family import Analysis
from reports.render.figures import DPI, png_bytes
from reports.statistics.comparisons import Comparison, Direction
from reports.statistics.verdicts import Judgement

VERDICT_COLORS = {
    Direction.AGREES: "tab:green",
    Direction.DISAGREES: "tab:red",
    Direction.INCONCLUSIVE: "0.35",
    Direction.NO_PAPER_NUMBER: "tab:blue",
    Direction.EQUIVALENT: "tab:olive",
    Direction.NON_INFERIOR: "tab:olive",
    Direction.NOT_SHOWN: "0.6",
}
BAND_COLOR = "0.88"
MARGIN_COLOR = "#e4ecc4"
LINE_HEIGHT_IN = 0.32
PANEL_PADDING_IN = 0.9
WIDTH_IN = 9.0

Line = tuple[str, Comparison, Judgement | None, float | None]
"""(row label, comparison, judgement, argued direction: +1 up, −1 down, None none)."""


def forest_plot(spec: AblationSpec, analysis: Analysis) -> bytes | None:
    """The report's forest plot as PNG bytes; None when no row has a comparison."""
    panels = comparison_panels(spec, analysis)
    if not panels:
        return None
    heights = [max(1, len(lines)) * LINE_HEIGHT_IN + PANEL_PADDING_IN for _, _, lines in panels]
    figure = Figure(figsize=(WIDTH_IN, sum(heights) + 0.7), dpi=DPI, layout="constrained")
    grid = figure.add_gridspec(len(panels), 1, height_ratios=heights)
    for index, (title, scale, lines) in enumerate(panels):
        draw_panel(figure.add_subplot(grid[index]), title, scale, lines)
    figure.legend(
        handles=[
            *(
                Line2D([], [], color=color, marker="o", linestyle="-", label=str(word))
                for word, color in VERDICT_COLORS.items()
            ),
            Patch(color=BAND_COLOR, label="± detectable effect (80 % power)"),
            *(
                [Patch(color=MARGIN_COLOR, label="± equivalence margin (sequential primary)")]
                if any(r.judgement and r.judgement.stop for r in [*analysis.rows, *analysis.endpoints])
                else []
            ),
            Line2D([], [], color="black", marker=">", linestyle="none", label="paper argues up (◀: down)"),
            Line2D([], [], linestyle="none", label="★ the row's primary comparison"),
        ],
        loc="outside lower center",
        ncols=3,
        fontsize="x-small",
        frameon=False,
    )
    return png_bytes(figure)


def comparison_panels(spec: AblationSpec, analysis: Analysis) -> list[tuple[str, float, list[Line]]]:
    """(panel title, scale, lines): the table's metric in points first, then each endpoint metric in its units."""
    table = [
        (
            _label(r.row.label, r.judgement),
            r.comparison,
            r.judgement,
            None if r.paper_delta is None else _sign(r.paper_delta),
        )
        for r in analysis.rows
        if r.comparison is not None
    ]
    panels = [(f"{spec.metric} at the last step, Δ in points", 100.0, table)] if table else []
    metrics = list(dict.fromkeys(e.endpoint.metric for e in analysis.endpoints if e.comparison is not None))
    for metric in metrics:
        lines = [
            (
                _label(f"{e.row.label} ({e.window[0]}–{e.window[1]})", e.judgement),
                e.comparison,
                e.judgement,
                1.0 if e.endpoint.direction == "up" else -1.0,
            )
            for e in analysis.endpoints
            if e.endpoint.metric == metric and e.comparison is not None
        ]
        panels.append((f"endpoint {metric}, Δ over its window", 1.0, lines))
    return panels


def draw_panel(axes, title: str, scale: float, lines: Sequence[Line]) -> None:
    """One panel: a line per comparison (top to bottom in table order), zero line, bands and argued directions."""
    for y, (_, comparison, judgement, argued) in enumerate(reversed(lines)):
        delta = comparison.delta
        if judgement is not None and judgement.stop is not None:
            band = judgement.stop.margin * scale
            axes.fill_between([-band, band], y - 0.35, y + 0.35, color=MARGIN_COLOR, linewidth=0)
        elif judgement is not None and judgement.detectable is not None:
            band = judgement.detectable * scale
            axes.fill_between([-band, band], y - 0.35, y + 0.35, color=BAND_COLOR, linewidth=0)
        color = (
            VERDICT_COLORS[judgement.verdict]
            if judgement and judgement.verdict
            else VERDICT_COLORS[Direction.NO_PAPER_NUMBER]
        )
        if delta.has_interval:
            axes.plot([delta.ci_low * scale, delta.ci_high * scale], [y, y], color=color, linewidth=1.6)
        axes.plot([delta.mean * scale], [y], "o", color=color, markersize=5)
        if argued:
            axes.plot(
                [1.01],
                [y],
                marker=">" if argued > 0 else "<",
                color="black",
                transform=axes.get_yaxis_transform(),
                clip_on=False,
            )
    axes.axvline(0.0, color="black", linewidth=0.8)
    axes.set_yticks(range(len(lines)), [label for label, *_ in reversed(lines)], fontsize="x-small")
    axes.set_ylim(-0.6, len(lines) - 0.4)
    axes.tick_params(axis="x", labelsize="x-small")
    axes.set_title(title, fontsize="small", loc="left")
    axes.grid(axis="x", alpha=0.3)


def _label(text: str, judgement: Judgement | None) -> str:
    """A line's label, marked ★ where it is its row's declared primary comparison."""
    return f"★ {text}" if judgement is not None and judgement.role == "primary" else text


def _sign(value: float) -> float | None:
    return 1.0 if value > 0 else -1.0 if value < 0 else None
