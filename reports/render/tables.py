"""An ablation report's tables as text cells: the spec's table, its declared endpoints and each row's
diagnostics, with the headers and the notes printed under them.

The table keeps the paper's row order: paper | ours, mean [95% CI] (n) | Δ to the compared row [CI]
| p, family-adjusted p, exact p | P(improvement) | agrees with the paper's direction?, then one column
per benchmark the runs were scored on.
"""

from __future__ import annotations

from collections.abc import Sequence

from algos.campaign.ablations import AblationSpec, Row
from reports.analysis.diagnostics import DIAGNOSTICS
from reports.analysis.endpoints import EndpointResult
from reports.analysis.rows import SELECTION, RowResult
from reports.analysis.scores import protocol_summary
from reports.render.cells import MINUS, format_comparison, format_estimate, format_p, format_probability
from reports.statistics.comparisons import Comparison, Estimate
from reports.statistics.verdicts import Judgement

HEADER = [
    "row",
    "paper",
    "ours: mean [95% CI] (n)",
    "Δ [95% CI]",
    "p",
    "p adjusted",
    "exact p",
    "P(improvement)",
    "agrees with paper?",
]
NOTE = (
    "95% CIs are Student t over seeds; Δ is a paired t on per-seed differences when both rows ran the same seeds "
    "(Welch's t otherwise; Stein's two-stage t for a planned campaign). p: its two-sided p-value; p adjusted: "
    "over the report's family (this table's comparisons and every declared endpoint); exact p: the sign-flip "
    "(paired) or permutation (unpaired) p-value, with the least it can be at this n where that exceeds 0.05. "
    "P(improvement) is P(row > compared row) over seed pairs. A direction is called where the adjusted p is at "
    "most 0.05; an undecided cell gives the Δ it could have detected with 80% power."
)
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
ENDPOINT_NOTE = (
    "Each run's value is the metric's mean over the window's steps (declared in the spec before the runs; scaled "
    "with the campaign's step count); Δ, p-values and verdicts as in the table above, in the same family. agrees: "
    "Δ significant (adjusted) on the side the paper argues; disagrees: on the other side; inconclusive: not "
    "significant, with the Δ it could have detected, or a side has one run."
)
DIAGNOSTIC_HEADER = ["row", *(column for _, column, _, _ in DIAGNOSTICS)]
DIAGNOSTIC_NOTE = (
    "Means over seeds of each run's mean over its RL steps (short DS steps: the sum; critic error: its RMS error "
    "against Monte-Carlo returns at step 0, the critic RL starts from). These are the quantities a setting may be "
    "tuned on, each read within its own row."
)


def introduction(spec: AblationSpec) -> str:
    """What the table compares: the paper's metric and ours, and the kind of table."""
    return (
        f"{spec.paper}. Paper metric: {spec.paper_metric}. Ours: {spec.metric}, {SELECTION}; "
        f"table kind: {spec.kind.replace('_', '-')}."
    )


def table_cells(spec: AblationSpec, results: Sequence[RowResult], benchmarks: Sequence[str] = ()) -> list[list[str]]:
    """The table's rows as text cells, in the paper's order, with one cell per benchmark at the end."""
    cells = []
    for result in results:
        row, comparison, judgement = result.row, result.comparison, result.judgement
        verdict = judgement.cell(comparison, 100, " points") if judgement and judgement.verdict else None
        cells.append(
            [
                row.label,
                "—" if row.paper is None else f"{row.paper:g}",
                format_estimate(result.estimate) if result.estimate else "not run",
                f"{format_comparison(comparison)} vs {spec.row(row.compare_to).label}" if comparison else "—",
                *p_cells(comparison, judgement),
                format_probability(comparison.p_improvement) if comparison else "—",
                verdict or ("no paper number" if comparison else "—"),
                *(_benchmark_cell(result, benchmark) for benchmark in benchmarks),
            ]
        )
    return cells


def _benchmark_cell(result: RowResult, benchmark: str) -> str:
    """Mean [CI] (n) of the row's headline scores on ``benchmark``, with the mean share of responses
    that stated no answer where the scores record it."""
    estimate = result.benchmark_estimate(benchmark)
    if estimate is None:
        return "not scored"
    shares = [score.unanswered for score in result.scores[benchmark] if score.unanswered is not None]
    return format_estimate(estimate) + (f"; no answer {100 * sum(shares) / len(shares):.1f} %" if shares else "")


def benchmark_protocols(results: Sequence[RowResult], benchmarks: Sequence[str]) -> dict[str, list[str]]:
    """Benchmark -> the distinct ``metric: protocol`` lines its scores were produced under (one, when all agree)."""
    return {
        benchmark: sorted(
            {
                f"{score.headline[0]}: {protocol_summary(score.protocol)}"
                for result in results
                for score in result.scores.get(benchmark, ())
            }
        )
        for benchmark in benchmarks
    }


def number(value: float) -> str:
    """A metric value in a table cell: three significant digits, typographic minus."""
    text = f"{value:.3g}"
    return ("0" if float(text) == 0 else text).replace("-", MINUS)


def estimate_cell(estimate: Estimate) -> str:
    if not estimate.has_interval:
        return f"{number(estimate.mean)} (n={estimate.n})"
    return f"{number(estimate.mean)} [{number(estimate.ci_low)}, {number(estimate.ci_high)}] (n={estimate.n})"


def delta_text(delta: Estimate) -> str:
    """A Δ in a metric's units: signed mean and its interval (none at n = 1)."""
    mean = f"{'+' if delta.mean > 0 else ''}{number(delta.mean)}"
    return f"{mean} [{number(delta.ci_low)}, {number(delta.ci_high)}]" if delta.has_interval else mean


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


def diagnostic_cells(diagnostics: Sequence[tuple[Row, Sequence[float | None]]]) -> list[list[str]]:
    """Per row: each diagnostic's mean over seeds in the column's scale (— where no run logged it).

    diagnostics: (row, one mean per :data:`~reports.analysis.diagnostics.DIAGNOSTICS` entry), as
    :func:`~reports.analysis.diagnostics.row_diagnostics` gives them.
    """
    return [
        [
            row.label,
            *(
                "—" if mean is None else number(scale * mean)
                for mean, (_, _, _, scale) in zip(means, DIAGNOSTICS, strict=True)
            ),
        ]
        for row, means in diagnostics
    ]


def p_cells(comparison: Comparison | None, judgement: Judgement) -> list[str]:
    """Raw p, adjusted p and the distribution-free p (with '(floor …)' where it can never reach the level)."""
    if comparison is None:
        return ["—", "—", "—"]
    exact = format_p(comparison.exact_p)
    if comparison.exact_p_floor is not None and comparison.exact_p_floor > judgement.level:
        exact += f" (≥ {comparison.exact_p_floor:.2g} at this n)"
    return [format_p(comparison.p_value), format_p(judgement.adjusted_p), exact]
