"""A spec's whole analysis: its rows on the table's metric and its declared endpoints, judged under its design.

Each compared row's primary comparison and its secondary ones (the table's metric where a mechanism
endpoint is primary, and every other declared endpoint) are judged as the spec's design declares
(:mod:`reports.statistics.verdicts`): a direction is called only where the adjusted p is at most 0.05, and an
undecided comparison says what effect it could have detected. Every report and command that needs a spec's numbers reads them from
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
from reports.analysis.sequential import SequentialState
from reports.statistics.comparisons import LEVEL
from reports.statistics.multiplicity import ADJUSTMENTS
from reports.statistics.verdicts import PRIMARY, SECONDARY, Claim, Judgement, Stop, judge_family


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
    seeds: int | Mapping[str, int | Sequence[int]],
    eval_dir: Path | None = None,
    benchmarks: Sequence[str] = (),
    method: str = "holm",
    pilot_seeds: int | None = None,
    sequential: SequentialState | None = None,
) -> Analysis:
    """The whole report's numbers: rows, endpoints, and every comparison judged as one family.

    seeds: seeds per row (0..n-1), or row -> its seed count or seeds (a planned or designed campaign). pilot_seeds: the plan's pilot, whose
    comparisons are Stein's tests (None: not planned). sequential: a group-sequential campaign's decisions; its
    primaries are judged look by look (each shown on the seeds it stopped at), its secondaries as their own family.
    """
    if method not in ADJUSTMENTS:
        raise ValueError(f"unknown p-value adjustment '{method}'; choose one of: {', '.join(ADJUSTMENTS)}")
    rows = measure_rows(spec, runs_dir, seeds, eval_dir, benchmarks, pilot_seeds)
    runs_of = {result.row.id: result.runs for result in rows}
    steps = {row.id: spec.config(row.id).run.steps for row in spec.rows}
    rows, endpoints = judged(spec, rows, measure(spec, runs_of, steps, pilot_seeds), method, sequential is not None)
    if sequential is not None:
        rows, endpoints = with_sequential_primaries(spec, rows, endpoints, sequential)
    return Analysis(rows, endpoints)


def judged(
    spec: AblationSpec, rows: list[RowResult], measured: list[EndpointResult], method: str, sequential: bool = False
) -> tuple[list[RowResult], list[EndpointResult]]:
    """Rows and endpoints with their judgements under the spec's design (:func:`reports.statistics.verdicts.judge_family`).

    An endpoint on the table's metric at the runs' last step is the table's own comparison, counted once.
    A spec without a design tests nothing. ``sequential``: the primaries are decided look by look elsewhere
    (:func:`with_sequential_primaries`), so only the secondaries are judged here, as their own family.
    """
    claims = [_row_claim(spec, r) for r in rows] + [_endpoint_claim(spec, e) for e in measured]
    secondary = spec.design.secondary if spec.design else "separate"
    if sequential:  # a primary's hypothesis, reached again as an endpoint, is the primary's alone
        primaries = {c.key for c in claims if c.role == PRIMARY}
        claims = [dataclasses.replace(c, comparison=None) if c.key in primaries else c for c in claims]
    judgements = judge_family(claims, secondary, method)
    judged_rows = [dataclasses.replace(r, judgement=j) for r, j in zip(rows, judgements[: len(rows)], strict=True)]
    ends = [dataclasses.replace(e, judgement=j) for e, j in zip(measured, judgements[len(rows) :], strict=True)]
    return judged_rows, ends


def _row_claim(spec: AblationSpec, result: RowResult) -> Claim:
    """The table's comparison of a row: primary unless the row flags an endpoint; a margin claim where declared."""
    primary = result.row.primary if spec.design else None
    on_table = primary is not None and primary.endpoint is None
    return Claim(
        (result.row.id, spec.metric, "final"),
        result.comparison,
        result.paper_delta if spec.design else None,
        result.row.id,
        PRIMARY if on_table else SECONDARY,
        primary.claim if on_table else None,
        primary.smallest_effect if on_table and primary.claim else None,
    )


def _endpoint_claim(spec: AblationSpec, result: EndpointResult) -> Claim:
    """A declared endpoint's comparison: the row's primary where flagged, secondary otherwise."""
    row, endpoint = result.row, result.endpoint
    if result.final and endpoint.metric == spec.metric:
        key = (row.id, spec.metric, "final")
    else:
        key = (row.id, endpoint.metric, result.window)
    primary = (
        row.primary is not None and row.primary.endpoint is not None and row.endpoints[row.primary.endpoint] == endpoint
    )
    expected = (1.0 if endpoint.direction == "up" else -1.0) if row.compare_to and spec.design else None
    return Claim(key, result.comparison, expected, row.id, PRIMARY if primary else SECONDARY)


def with_sequential_primaries(
    spec: AblationSpec, rows: list[RowResult], endpoints: list[EndpointResult], state: SequentialState
) -> tuple[list[RowResult], list[EndpointResult]]:
    """Each primary shown as its group-sequential decision: its comparison on the seeds it stopped at, and its verdict
    with where it stopped (:class:`reports.statistics.verdicts.Stop`); an open primary has no verdict yet."""
    decided = {s.row: s for s in state.comparisons}
    family = len(state.comparisons)

    def judgement(comparison_state):
        result = comparison_state.result
        design = comparison_state.design
        looks = sum(seeds <= comparison_state.maximum for seeds in design.looks)  # as far as its maximum, re-sized or not
        stop = None if result is None else Stop(result.look + 1, max(looks, result.look + 1), result.seeds, design.margin)
        return Judgement(
            adjusted_p=None,
            detectable=None,
            verdict=None if result is None else result.verdict,
            family_size=family,
            level=LEVEL,
            role=PRIMARY,
            test_level=design.level,
            stop=stop,
        )

    def shown(comparison, comparison_state):
        return comparison if comparison_state.result is None else comparison_state.result.comparison

    new_rows = []
    for result in rows:
        primary = result.row.primary
        if primary is not None and primary.endpoint is None and result.row.id in decided:
            state_of = decided[result.row.id]
            result = dataclasses.replace(
                result, comparison=shown(result.comparison, state_of), judgement=judgement(state_of)
            )
        new_rows.append(result)
    new_endpoints = []
    for result in endpoints:
        primary = result.row.primary
        flagged = primary is not None and primary.endpoint is not None
        if flagged and result.row.endpoints[primary.endpoint] == result.endpoint and result.row.id in decided:
            state_of = decided[result.row.id]
            result = dataclasses.replace(
                result, comparison=shown(result.comparison, state_of), judgement=judgement(state_of)
            )
        new_endpoints.append(result)
    return new_rows, new_endpoints
