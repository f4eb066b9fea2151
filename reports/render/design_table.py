"""The design section that opens an ablation report: per compared row, its declared primary comparison, the
smallest effect it was sized for, the seeds it ran, the share of the level it is tested at, the effect those
seeds could detect, its verdict, and, where undecided, the seeds per row that would decide it at the spread
these runs show."""

from __future__ import annotations

import math

from algos.campaign.ablations import AblationSpec, Row
from algos.trainer.metrics import metric_unit
from reports.analysis.family import Analysis
from reports.planning.fixed_design import seeds_for
from reports.statistics.comparisons import POWER, Comparison, Direction
from reports.statistics.verdicts import Judgement

HEADER = [
    "row",
    "primary comparison",
    "smallest effect",
    "seeds",
    "share of α",
    "secondaries",
    "detectable at these seeds",
    "verdict",
    "to decide",
]
UNDECIDED = (Direction.INCONCLUSIVE, Direction.NOT_SHOWN)


def note(spec: AblationSpec, sequential: bool = False) -> str:
    """How the family is controlled, in one paragraph under the table."""
    if spec.design is None:
        return "This spec declares no design: it describes, and tests nothing."
    if sequential:
        return (
            "The spec declares the design (a warning above says so where it changed after the runs). Each primary is "
            "judged look by look at α/m (Bonferroni over the table's m primaries; 5 % family-wise): it agrees or "
            "disagrees with the paper's direction where the two-sided test of Δ = 0 crosses its boundary, and is "
            "equivalent where both one-sided tests of |Δ| ≥ margin do (the level spent over the looks by the "
            "declared Lan-DeMets function), and stops at the first look that decides it; 'seeds' are those it "
            "stopped at, and its row of the table shows Δ on them. The secondaries are a family of their own at 5 %, "
            "on every seed both rows ran. 'To decide': for a primary undecided at its last look, the seeds per row "
            "that would decide it at the spread and Δ these runs show."
        )
    rule = (
        "gated: a row's secondary comparisons (its other endpoints) share what its primary passes on once it is "
        "rejected, and the last passes it on to the other rows' primaries (graphical procedure, Bretz et al. 2009)"
        if spec.design.secondary == "gated"
        else "separate: the secondary comparisons are a second family, also at 5 % family-wise"
    )
    return (
        "The spec declares the design (a warning above says so where it changed after the runs). The table's family "
        "is its primary comparisons, 5 % family-wise, each "
        f"holding α/m; secondaries {rule}. 'Detectable' is the effect these seeds detect with 80 % power at the "
        "primary's share of α, from their own spread; 'to decide' the seeds per row that would detect the smallest "
        "effect at that spread."
    )


def design_cells(spec: AblationSpec, analysis: Analysis) -> list[list[str]]:
    """One line per compared row's primary comparison."""
    cells = []
    for row in spec.rows:
        if row.primary is None:
            continue
        comparison, judgement = _primary_result(row, analysis)
        scale, unit = _scale(spec, row)
        secondaries = sum(
            1
            for e in analysis.endpoints
            if e.row.id == row.id and e.judgement and e.judgement.role == "secondary" and e.judgement.verdict
        ) + sum(
            1
            for r in analysis.rows
            if r.row.id == row.id and r.judgement and r.judgement.role == "secondary" and r.judgement.verdict
        )
        cells.append(
            [
                row.label,
                f"{row.primary.describe(spec.metric, row.endpoints)} vs {spec.row(row.compare_to).label}",
                f"{_number(row.primary.smallest_effect * scale)}{unit}",
                str(comparison.n) if comparison else "not run",
                f"{judgement.test_level:.3g}" if judgement and judgement.test_level else "—",
                str(secondaries),
                f"{_number(judgement.detectable * scale)}{unit}"
                if judgement and judgement.detectable is not None
                else "—",
                judgement.cell(comparison, scale, unit) if judgement else "—",
                _to_decide(row, comparison, judgement),
            ]
        )
    return cells


def _primary_result(row: Row, analysis: Analysis) -> tuple[Comparison | None, Judgement | None]:
    if row.primary.endpoint is None:
        result = next(r for r in analysis.rows if r.row.id == row.id)
        return result.comparison, result.judgement
    endpoint = row.endpoints[row.primary.endpoint]
    for result in analysis.endpoints:
        if result.row.id == row.id and result.endpoint == endpoint:
            return result.comparison, result.judgement
    return None, None


def _to_decide(row: Row, comparison: Comparison | None, judgement: Judgement | None) -> str:
    """Seeds per row that would detect the smallest effect at the observed spread, for an undecided primary; for a
    sequential one, that would decide it either way at the observed spread and Δ (a direction at |Δ|, or
    equivalence with |Δ| inside the margin: the fewer)."""
    if comparison is None or judgement is None or judgement.verdict not in UNDECIDED:
        return "—"
    if comparison.se is None or comparison.df is None or not judgement.test_level:
        return "no spread to size from"
    sd = comparison.se * math.sqrt(comparison.n)
    if judgement.stop is not None:
        observed = abs(comparison.delta.mean)
        direction = seeds_for(sd, observed, judgement.test_level, POWER, None)[0] if observed > 0 else None
        inside = judgement.stop.margin - observed
        equivalence = seeds_for(sd, inside, judgement.test_level, POWER, "non_inferior")[0] if inside > 0 else None
        found = [n for n in (direction, equivalence) if n]
        return f"≈ {min(found)} seeds per row" if found else "more than 500 seeds per row"
    seeds, _ = seeds_for(sd, row.primary.smallest_effect, judgement.test_level, POWER, row.primary.claim)
    return f"≈ {seeds} seeds per row" if seeds else "more than 500 seeds per row"


def _scale(spec: AblationSpec, row: Row) -> tuple[float, str]:
    metric = spec.metric if row.primary.endpoint is None else row.endpoints[row.primary.endpoint].metric
    return (100.0, " points") if metric_unit(metric) == "share" else (1.0, "")


def _number(value: float) -> str:
    return f"{value:.2g}" if abs(value) < 10 else f"{value:.0f}"
