"""A spec's whole analysis: its rows on the table's metric and its declared endpoints, judged as one family.

The table's comparisons (rows with a paper number) and every declared endpoint form one family whose
p-values are adjusted together (Holm unless ``bh``); a direction is called only where the adjusted p
is at most 0.05, and an undecided comparison says what effect it could have detected
(:mod:`reports.verdicts`). Every report and command that needs a spec's numbers reads them from
:func:`analyse`, which reads each run's files once (:mod:`reports.analysis.runs`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from algos.campaign.ablations import AblationSpec
from reports.analysis.endpoints import EndpointResult, measure
from reports.analysis.rows import RowResult, measure_rows
from reports.analysis.runs import FinishedRun
from reports.stats import ADJUSTMENTS
from reports.verdicts import Claim, judge_family


@dataclass(frozen=True)
class Analysis:
    """A spec's rows and endpoints measured, compared and judged as one family."""

    rows: list[RowResult]
    endpoints: list[EndpointResult]

    @property
    def family_size(self) -> int:
        judged = [r.judgement for r in self.rows if r.judgement] + [e.judgement for e in self.endpoints if e.judgement]
        return max((j.family_size for j in judged), default=0)

    @property
    def runs_of(self) -> dict[str, tuple[FinishedRun, ...]]:
        """Row id -> its finished runs, seed-ordered."""
        return {result.row.id: result.runs for result in self.rows}


def analyse(
    spec: AblationSpec,
    runs_dir: Path,
    seeds: int | Mapping[str, int],
    eval_dir: Path | None = None,
    benchmarks: Sequence[str] = (),
    method: str = "holm",
    pilot_seeds: int | None = None,
) -> Analysis:
    """The whole report's numbers: rows, endpoints, and every comparison judged as one family.

    seeds: seeds per row, or row -> seeds (a planned campaign). pilot_seeds: the plan's pilot, whose
    comparisons are Stein's tests (None: not planned).
    """
    if method not in ADJUSTMENTS:
        raise ValueError(f"unknown p-value adjustment '{method}'; choose one of: {', '.join(ADJUSTMENTS)}")
    rows = measure_rows(spec, runs_dir, seeds, eval_dir, benchmarks, pilot_seeds)
    runs_of = {result.row.id: result.runs for result in rows}
    steps = {row.id: spec.config(row.id).run.steps for row in spec.rows}
    return Analysis(*judged(spec, rows, measure(spec, runs_of, steps, pilot_seeds), method))


def judged(
    spec: AblationSpec, rows: list[RowResult], measured: list[EndpointResult], method: str
) -> tuple[list[RowResult], list[EndpointResult]]:
    """Rows and endpoints with their judgements: the table's comparisons and the endpoints as one family.

    An endpoint on the table's metric at the runs' last step is the table's own comparison, counted once.
    """
    claims = [Claim((r.row.id, spec.metric, "final"), r.comparison, r.paper_delta) for r in rows] + [
        Claim(
            (e.row.id, spec.metric, "final")
            if e.final and e.endpoint.metric == spec.metric
            else (e.row.id, e.endpoint.metric, e.window),
            e.comparison,
            (1.0 if e.endpoint.direction == "up" else -1.0) if e.row.compare_to else None,
        )
        for e in measured
    ]
    judgements = judge_family(claims, method)
    judged_rows = [dataclasses.replace(r, judgement=j) for r, j in zip(rows, judgements[: len(rows)], strict=True)]
    ends = [dataclasses.replace(e, judgement=j) for e, j in zip(measured, judgements[len(rows) :], strict=True)]
    return judged_rows, ends
