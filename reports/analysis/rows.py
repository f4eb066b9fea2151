"""The rows of an ablation spec on its table's metric: each row's finished runs, their estimate over seeds,
the comparison with the row it is compared with, and the benchmark scores of its runs.

Ours is the spec's metric at the final step of every run (declared up front, never the best step); the
interval is Student t over seeds, and Δ a paired t when both rows ran the same seeds (Welch otherwise;
Stein's test for a planned campaign). Judgements are left to :mod:`reports.analysis.family`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from algos.campaign.ablations import AblationSpec, Row
from algos.trainer.run_files import FINAL_FILE
from reports.analysis.runs import FinishedRun, finished_runs
from reports.analysis.scores import Score, read_score
from reports.statistics.comparisons import Comparison, Estimate, seed_estimate
from reports.statistics.verdicts import Judgement, compare_seeds

SELECTION = "final step of every run"


@dataclass(frozen=True)
class RowResult:
    """One row's finished seeds and the spec's metric on them, seed-ordered.

    values: seed -> the spec's metric. paper_delta: the paper's row minus its compared row, as a fraction
    (None without both numbers). scores: benchmark -> the scores of the row's runs that were scored on it,
    seed-ordered. judgement: set once the report's family is judged.
    """

    row: Row
    runs: tuple[FinishedRun, ...]
    values: dict[int, float]
    estimate: Estimate | None
    comparison: Comparison | None
    paper_delta: float | None
    scores: dict[str, tuple[Score, ...]] = field(default_factory=dict)
    judgement: Judgement | None = None

    def benchmark_estimate(self, benchmark: str) -> Estimate | None:
        """Mean [CI] over seeds of the benchmark's headline score; None when no run was scored on it."""
        scores = self.scores.get(benchmark, ())
        return seed_estimate([score.headline[1] for score in scores]) if scores else None


def measure_rows(
    spec: AblationSpec,
    runs_dir: Path,
    seeds: int | Mapping[str, int | Sequence[int]],
    eval_dir: Path | None = None,
    benchmarks: Sequence[str] = (),
    pilot_seeds: int | None = None,
) -> list[RowResult]:
    """Every row's estimate, its comparison with the row it is compared with, and its runs' benchmark scores.

    seeds: seeds per row (0..n-1), or row -> its seed count or seeds (a planned or designed campaign). benchmarks: scored from ``eval_dir``
    (needed when any is given). pilot_seeds: the plan's pilot, whose comparisons are Stein's tests.
    """
    runs_of: dict[str, tuple[FinishedRun, ...]] = {}
    metric_of: dict[str, dict[int, float]] = {}
    for row in spec.rows:
        runs = finished_runs(runs_dir, spec.name, row.id, seeds if isinstance(seeds, int) else seeds.get(row.id, 0))
        missing = [str(run.directory) for run in runs if spec.metric not in run.final]
        if missing:
            raise ValueError(
                f"metric '{spec.metric}' of spec '{spec.name}' is not in {FINAL_FILE} of: {', '.join(missing)}"
            )
        runs_of[row.id] = tuple(runs)
        metric_of[row.id] = {run.seed: run.final[spec.metric] for run in runs}
    results = []
    for row in spec.rows:
        mine, theirs = metric_of[row.id], metric_of[row.compare_to] if row.compare_to else {}
        results.append(
            RowResult(
                row=row,
                runs=runs_of[row.id],
                values=mine,
                estimate=seed_estimate(list(mine.values())) if mine else None,
                comparison=compare_seeds(mine, theirs, pilot_seeds),
                paper_delta=paper_delta(spec, row),
                scores={b: _scores(runs_of[row.id], runs_dir, eval_dir, b) for b in benchmarks},
            )
        )
    return results


def paper_delta(spec: AblationSpec, row: Row) -> float | None:
    """The paper's number of ``row`` minus its compared row's, as a fraction; None without both."""
    if not row.compare_to or row.paper is None or spec.row(row.compare_to).paper is None:
        return None
    return (row.paper - spec.row(row.compare_to).paper) / 100


def _scores(runs: Sequence[FinishedRun], runs_dir: Path, eval_dir: Path, benchmark: str) -> tuple[Score, ...]:
    """Scores on ``benchmark`` of the runs that have them (``eval_dir`` mirrors ``runs_dir``)."""
    directories = [eval_dir / run.directory.relative_to(runs_dir) / benchmark for run in runs]
    return tuple(read_score(directory) for directory in directories if directory.is_dir())
