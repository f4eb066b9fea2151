"""An ablation spec's report, built from its runs' own files: a Markdown page and a self-contained HTML page.

The table keeps the paper's row order: paper | ours, mean [95% CI] (n) | Δ to the compared row [CI]
| p, family-adjusted p, exact p | P(improvement) | agrees with the paper's direction? Ours is the
spec's metric at the final step of each run (declared up front, never the best step); the interval
is Student t over seeds, and Δ a paired t when both rows ran the same seeds (Welch otherwise; Stein's
test for a planned campaign). The table's comparisons and every declared endpoint form one family whose
p-values are adjusted together (Holm unless ``--adjust bh``); a direction is called only where the
adjusted p is at most 0.05, and an undecided cell says what effect it could have detected
(:mod:`reports.verdicts`). The page opens with a forest plot of every comparison
(:mod:`reports.render.forest`). Beside the table, the endpoint table measures what the spec declared each
row is judged by (:mod:`reports.analysis.endpoints`), and the diagnostics table what each run can be checked
by on its own.
Then: figure panels per endpoint, accuracy against responses generated for dynamic-sampling rows,
curves with seed bands, and the provenance of every number (the spec file's hash, git commits,
config hashes, package versions, hardware, seeds, wall time, run ids). Warnings on top name a spec
edited since its last commit, dynamic-sampling steps that trained short and non-finite values.
Nothing is rerun: reports read ``config.yaml``, ``final_metrics.json``, ``metrics.jsonl`` and
``run.json`` of each run directory.

Benchmarks on which the runs' final policies were scored (``<eval>/<spec>/<row>/seed<n>/<benchmark>/``,
written by :mod:`eval.run.evaluate`) add one column each, mean [95% CI] (n) of the benchmark's headline
score over the row's scored seeds, and their protocols are stated under the table.

Command line: ``python -m reports.ablation --spec dapo_table1 --runs results/runs --out results/reports
[--eval results/eval --benchmarks aime24 math500] [--adjust holm|bh] [--plan results/plans/dapo_table1.json]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from algos.campaign.ablations import AblationSpec, Row, read_spec
from algos.config.presets import ConfigError
from algos.config.schema import RunConfig
from algos.trainer.run_files import CONFIG_FILE, FINAL_FILE, RUN_FILE
from algos.trainer.sft import RECIPE_FILE
from algos.trainer.task_properties import TARGETS, within_target
from reports.analysis import endpoints
from reports.benchmarks import Score, protocol_summary, read_score
from reports.render.figures import figure_grid
from reports.render.forest import forest_plot
from reports.render.pages import Page, Table, run_report, write_page
from reports.seed_plan import read_plan
from reports.stats import (
    ADJUSTMENTS,
    LEVEL,
    Comparison,
    Estimate,
    format_comparison,
    format_estimate,
    format_probability,
    seed_estimate,
)
from reports.verdicts import Claim, Judgement, compare_seeds, judge, p_cells, resolution_note

SELECTION = "final step of every run"


@dataclass(frozen=True)
class RowResult:
    """One row's finished seeds: their run directories, final metrics and the spec's metric, seed-ordered.

    values: seed -> the spec's metric. scores: benchmark -> the scores of the row's runs that were scored
    on it, seed-ordered. judgement: set once the report's family is judged (:func:`judged`).
    """

    row: Row
    runs: tuple[Path, ...]
    finals: tuple[dict[str, float], ...]
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


@dataclass(frozen=True)
class Analysis:
    """A spec's rows and endpoints measured, compared and judged as one family."""

    rows: list[RowResult]
    endpoints: list[endpoints.EndpointResult]

    @property
    def family_size(self) -> int:
        judged = [r.judgement for r in self.rows if r.judgement] + [e.judgement for e in self.endpoints if e.judgement]
        return max((j.family_size for j in judged), default=0)


def finished_runs(runs_dir: Path, spec: AblationSpec, row: Row, seeds: int) -> list[Path]:
    """Run directories of ``row`` with final metrics, for seeds 0..seeds-1 in order."""
    candidates = [runs_dir / spec.name / row.id / f"seed{seed}" for seed in range(seeds)]
    return [run for run in candidates if (run / FINAL_FILE).is_file()]


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
    results = collect(spec, runs_dir, seeds, eval_dir, benchmarks, pilot_seeds)
    measured = measured_endpoints(spec, results, pilot_seeds)
    return Analysis(*judged(spec, results, measured, method))


def judged(
    spec: AblationSpec, results: list[RowResult], measured: list[endpoints.EndpointResult], method: str
) -> tuple[list[RowResult], list[endpoints.EndpointResult]]:
    """Rows and endpoints with their judgements: the table's comparisons and the endpoints as one family.

    An endpoint on the table's metric at the runs' last step is the table's own comparison, counted once.
    """
    claims = [Claim((r.row.id, spec.metric, "final"), r.comparison, r.paper_delta) for r in results] + [
        Claim(
            (e.row.id, spec.metric, "final")
            if e.final and e.endpoint.metric == spec.metric
            else (e.row.id, e.endpoint.metric, e.window),
            e.comparison,
            (1.0 if e.endpoint.direction == "up" else -1.0) if e.row.compare_to else None,
        )
        for e in measured
    ]
    judgements = judge(claims, method)
    rows = [dataclasses.replace(r, judgement=j) for r, j in zip(results, judgements[: len(results)], strict=True)]
    ends = [dataclasses.replace(e, judgement=j) for e, j in zip(measured, judgements[len(results) :], strict=True)]
    return rows, ends


def collect(
    spec: AblationSpec,
    runs_dir: Path,
    seeds: int | Mapping[str, int],
    eval_dir: Path | None = None,
    benchmarks: Sequence[str] = (),
    pilot_seeds: int | None = None,
) -> list[RowResult]:
    """Every row's estimate, its comparison with the row it is compared with, and its runs' benchmark scores.

    benchmarks: scored from ``eval_dir`` (needed when any is given). Judgements are left to :func:`judged`.
    """
    runs_of: dict[str, tuple[Path, ...]] = {}
    finals_of: dict[str, tuple[dict[str, float], ...]] = {}
    metric_of: dict[str, dict[int, float]] = {}
    for row in spec.rows:
        runs = finished_runs(runs_dir, spec, row, seeds if isinstance(seeds, int) else seeds.get(row.id, 0))
        finals = [json.loads((run / FINAL_FILE).read_text()) for run in runs]
        missing = [str(run) for run, final in zip(runs, finals, strict=True) if spec.metric not in final]
        if missing:
            raise ValueError(
                f"metric '{spec.metric}' of spec '{spec.name}' is not in {FINAL_FILE} of: {', '.join(missing)}"
            )
        runs_of[row.id], finals_of[row.id] = tuple(runs), tuple(finals)
        metric_of[row.id] = {
            endpoints.seed_of(run): final[spec.metric] for run, final in zip(runs, finals, strict=True)
        }
    results = []
    for row in spec.rows:
        mine, theirs = metric_of[row.id], metric_of[row.compare_to] if row.compare_to else {}
        paper_delta = (
            (row.paper - spec.row(row.compare_to).paper) / 100
            if row.compare_to and row.paper is not None and spec.row(row.compare_to).paper is not None
            else None
        )
        results.append(
            RowResult(
                row=row,
                runs=runs_of[row.id],
                finals=finals_of[row.id],
                values=mine,
                estimate=seed_estimate(list(mine.values())) if mine else None,
                comparison=compare_seeds(mine, theirs, pilot_seeds),
                paper_delta=paper_delta,
                scores={b: _scores(runs_of[row.id], runs_dir, eval_dir, b) for b in benchmarks},
            )
        )
    return results


def _scores(runs: Sequence[Path], runs_dir: Path, eval_dir: Path, benchmark: str) -> tuple[Score, ...]:
    """Scores on ``benchmark`` of the runs that have them (``eval_dir`` mirrors ``runs_dir``)."""
    directories = [eval_dir / run.relative_to(runs_dir) / benchmark for run in runs]
    return tuple(read_score(directory) for directory in directories if directory.is_dir())


def measured_endpoints(
    spec: AblationSpec, results: list[RowResult], pilot_seeds: int | None = None
) -> list[endpoints.EndpointResult]:
    """Every declared endpoint measured on the rows' finished runs (windows scaled to the runs' own length)."""
    runs_of = {result.row.id: result.runs for result in results}
    steps = {row.id: spec.config(row.id).run.steps for row in spec.rows}
    return endpoints.measure(spec, runs_of, steps, pilot_seeds)


def table_cells(spec: AblationSpec, results: list[RowResult], benchmarks: Sequence[str] = ()) -> list[list[str]]:
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


def benchmark_protocols(results: list[RowResult], benchmarks: Sequence[str]) -> dict[str, list[str]]:
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


def provenance(spec: AblationSpec, results: list[RowResult]) -> dict[str, Any]:
    """Where every number came from, read from the runs' own files."""
    runs = [run for result in results for run in result.runs]
    record_of = {run: json.loads((run / RUN_FILE).read_text()) for run in runs if (run / RUN_FILE).is_file()}
    records = list(record_of.values())
    finals = [final for result in results for final in result.finals]
    versions = sorted(
        {
            f"{key.removeprefix('version.')} {value}"
            for record in records
            for key, value in record.items()
            if key.startswith("version.")
        }
    )
    return {
        "spec": spec.name,
        "paper": spec.paper,
        "paper metric": spec.paper_metric,
        "our metric": f"{spec.metric} ({SELECTION})",
        "git commits": sorted({record.get("git_commit", "unknown") for record in records}),
        "config hashes": {
            result.row.id: sorted({record_of[run].get("config_hash", "?") for run in result.runs if run in record_of})
            for result in results
        },
        "packages": versions,
        "hardware": sorted({record.get("hardware", "unknown") for record in records}),
        "environments": environments(records),
        "seeds": {result.row.id: len(result.runs) for result in results},
        "held-out evaluation": evaluation_schedule(results),
        "training seconds (sum)": round(sum(final.get("perf/train_seconds_total", 0.0) for final in finals), 1),
        "run ids": [record["tracker_run_id"] for record in records if record.get("tracker_run_id")],
        "run directories": [str(run) for run in runs],
    }


def environments(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The runs' environments by fingerprint (:func:`algos.engine.provenance.environment`): CPUs, kernels, threads, runs."""
    found: dict[str, Any] = {}
    for record in records:
        environment = record.get("environment")
        if environment is None:
            found.setdefault("unrecorded", {"runs": 0})["runs"] += 1
            continue
        entry = found.setdefault(
            environment["fingerprint"],
            {
                "cpu models": [],
                "cpu flags": environment["cpu_flags"],
                "cpu capability": environment["cpu_capability"],
                "kernel settings": environment["kernel_settings"],
                "threads": environment["threads"],
                "python": environment["python"],
                "packages": environment["packages"],
                "runs": 0,
            },
        )
        entry["runs"] += 1
        if environment["cpu_model"] not in entry["cpu models"]:
            entry["cpu models"].append(environment["cpu_model"])
    return found


def environment_warnings(found: Mapping[str, Any]) -> list[str]:
    """One warning when the runs came from more than one environment (:func:`environments`), naming what differs."""
    if len(found) < 2:
        return []
    recorded = [entry for key, entry in found.items() if key != "unrecorded"]
    differing = sorted(
        {
            field
            for field in ("cpu capability", "kernel settings", "threads", "python")
            if len({json.dumps(entry[field], sort_keys=True) for entry in recorded}) > 1
        }
        | {
            f"package {name}"
            for name in {name for entry in recorded for name in entry["packages"]}
            if len({entry["packages"].get(name) for entry in recorded}) > 1
        }
    )
    runs = ", ".join(f"{key}: {entry['runs']} runs" for key, entry in found.items())
    what = f"; they differ in {', '.join(differing)}" if differing else ""
    return [
        f"the runs came from {len(found)} environments ({runs}){what}: numbers may not be comparable bit for bit "
        "across them (see 'environments' in the provenance)"
    ]


def row_figure_inputs(spec: AblationSpec, results: list[RowResult]) -> tuple[dict[str, list[Path]], dict[str, str]]:
    """What ``figure_grid`` draws: row label -> its runs (rows that ran), and row label -> its compared row's label."""
    runs = {result.row.label: list(result.runs) for result in results if result.runs}
    compared = {row.label: spec.row(row.compare_to).label for row in spec.rows if row.compare_to}
    return runs, compared


def evaluation_schedule(results: list[RowResult]) -> list[str]:
    """The held-out evaluations behind the curves, as the runs' configs set them (one line per distinct setting)."""
    schedules = set()
    for result in results:
        for run in result.runs:
            if not (run / CONFIG_FILE).is_file():
                continue
            settings = RunConfig(**yaml.safe_load((run / CONFIG_FILE).read_text()).get("run", {}))
            steps, every = settings.steps, settings.eval_every or settings.steps
            points = len(range(0, steps, every)) + 1  # steps 0, every, 2 every, ... and the last
            schedules.add(
                f"{points} evaluations over {steps} steps (every {every}), "
                f"{settings.eval_problems} problems each, {settings.final_eval_problems or settings.eval_problems} "
                "at the last step"
            )
    return sorted(schedules)


def base_model_table(results: list[RowResult]) -> Table | None:
    """What the task gave RL to act on: the measured properties of the base the runs started from, if it is built-in."""
    configs = [run / CONFIG_FILE for result in results for run in result.runs if (run / CONFIG_FILE).is_file()]
    if not configs:
        return None
    source = Path(yaml.safe_load(configs[0].read_text())["model"]["name_or_path"]) / RECIPE_FILE
    if not source.is_file():
        return None
    measured = json.loads(source.read_text()).get("properties", {})
    cells = [
        [
            key,
            description,
            _target_text(low, high),
            f"{measured[key]:.3g}",
            "yes" if within_target(key, measured[key]) else "no",
        ]
        for key, (low, high, description) in TARGETS.items()
        if key in measured
    ]
    note = (
        f"Measured on the base's own samples ({measured.get('problems')} validation problems x "
        f"G = {measured.get('group_size')} at T = 1), read from {source}."
    )
    return Table("What the task gives RL to act on: the base model's properties", BASE_HEADER, cells, note)


BASE_HEADER = ["property", "what it is", "target", "base", "within?"]


def _target_text(low: float | None, high: float | None) -> str:
    if low is not None and high is not None:
        return f"{low:g}–{high:g}"
    return f"≥ {low:g}" if low is not None else f"≤ {high:g}"


def introduction(spec: AblationSpec) -> str:
    """What the table compares: the paper's metric and ours, and the kind of table."""
    return (
        f"{spec.paper}. Paper metric: {spec.paper_metric}. Ours: {spec.metric}, {SELECTION}; "
        f"table kind: {spec.kind.replace('_', '-')}."
    )


NOTE = (
    "95% CIs are Student t over seeds; Δ is a paired t on per-seed differences when both rows ran the same seeds "
    "(Welch's t otherwise; Stein's two-stage t for a planned campaign). p: its two-sided p-value; p adjusted: "
    "over the report's family (this table's comparisons and every declared endpoint); exact p: the sign-flip "
    "(paired) or permutation (unpaired) p-value, with the least it can be at this n where that exceeds 0.05. "
    "P(improvement) is P(row > compared row) over seed pairs. A direction is called where the adjusted p is at "
    "most 0.05; an undecided cell gives the Δ it could have detected with 80% power."
)
ENDPOINT_NOTE = (
    "Each run's value is the metric's mean over the window's steps (declared in the spec before the runs; scaled "
    "with the campaign's step count); Δ, p-values and verdicts as in the table above, in the same family. agrees: "
    "Δ significant (adjusted) on the side the paper argues; disagrees: on the other side; inconclusive: not "
    "significant, with the Δ it could have detected, or a side has one run."
)
DIAGNOSTIC_NOTE = (
    "Means over seeds of each run's mean over its RL steps (short DS steps: the sum; critic error: its RMS error "
    "against Monte-Carlo returns at step 0, the critic RL starts from). These are the quantities a setting may be "
    "tuned on, each read within its own row."
)


def write_report(
    spec_name: str,
    runs_dir: Path,
    out_dir: Path,
    seeds: int,
    eval_dir: Path | None = None,
    benchmarks: Sequence[str] = (),
    method: str = "holm",
    plan: Path | None = None,
) -> tuple[Path, Path]:
    """Write ``{spec}.md`` (with its figures in ``{spec}_figures/``) and ``{spec}.html`` into ``out_dir``.

    eval_dir, benchmarks: where the runs' benchmark scores are, and which benchmarks get a column.
    method: the family's p-value adjustment. plan: a seed plan written by :mod:`reports.seed_plan` (its
    seeds per row replace ``seeds``, its comparisons are Stein's tests).
    """
    spec = read_spec(spec_name)
    benchmarks = benchmarks if eval_dir else ()
    planned = read_plan(plan) if plan else None
    analysis = analyse(
        spec,
        runs_dir,
        planned.seeds if planned else seeds,
        eval_dir,
        benchmarks,
        method,
        planned.pilot_seeds if planned else None,
    )
    results, measured = analysis.rows, analysis.endpoints
    protocols = benchmark_protocols(results, benchmarks)
    runs_of = {result.row.id: result.runs for result in results}
    digest, spec_warning = endpoints.spec_file_state(spec.path)
    seed_counts = sorted({len(result.runs) for result in results if result.runs})
    extra_figures = [
        (title, png)
        for title, png in (
            (
                "Endpoints over training",
                endpoints.endpoint_figure(spec, measured, runs_of),
            ),
            (
                "Accuracy against responses generated (DAPO Fig. 6)",
                endpoints.accuracy_per_sample_figure(spec, runs_of, spec.metric),
            ),
        )
        if png is not None
    ]
    origin = provenance(spec, results)
    page = Page(
        title=spec.title,
        introduction=" ".join(
            [
                f"{introduction(spec)} Spec file {spec.path.name}, SHA-256 {digest}.",
                *(resolution_note(n, analysis.family_size, method) for n in seed_counts[:1]),
                *([planned.summary] if planned else []),
            ]
        ),
        header=[*HEADER, *(f"{benchmark}: mean [95% CI] (n)" for benchmark in benchmarks)],
        cells=table_cells(spec, results, benchmarks),
        note=" ".join([NOTE, *(f"{b} ({'; '.join(lines) or 'not scored'})." for b, lines in protocols.items())]),
        tables=[
            Table(
                "Endpoints declared in the spec",
                endpoints.ENDPOINT_HEADER,
                endpoints.endpoint_cells(spec, measured),
                ENDPOINT_NOTE,
            ),
            Table(
                "Diagnostics per row",
                endpoints.DIAGNOSTIC_HEADER,
                endpoints.diagnostic_cells(spec, runs_of),
                DIAGNOSTIC_NOTE,
            ),
        ],
        warnings=[
            *([spec_warning] if spec_warning else []),
            *endpoints.run_warnings(spec, runs_of),
            *environment_warnings(origin["environments"]),
            *(planned.unresolved if planned else []),
        ],
        figures=extra_figures + figure_grid(*row_figure_inputs(spec, results)),
        lead=_titled(
            "Every comparison at a glance: Δ with its 95% CI, coloured by verdict", forest_plot(spec, analysis)
        ),
        origin={
            "spec file": {"path": str(spec.path), "sha256": digest},
            **origin,
            "statistics": {"adjustment": method, "family size": analysis.family_size, "level": LEVEL},
            **({"benchmark protocols": protocols} if benchmarks else {}),
        },
    )
    return write_page(page, out_dir, spec.name)


def _titled(title: str, png: bytes | None) -> tuple[str, bytes] | None:
    return (title, png) if png is not None else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reports.ablation", description=__doc__.split("\n\n")[0])
    parser.add_argument("--spec", required=True, help="ablation spec (python -m algos.campaign.ablations --list)")
    parser.add_argument(
        "--runs", type=Path, default=Path("results/runs"), help="directory holding <spec>/<row>/seed<n>/"
    )
    parser.add_argument("--out", type=Path, default=Path("results/reports"), help="directory for the reports")
    parser.add_argument("--seeds", type=int, default=3, help="seeds per row (0..seeds-1)")
    parser.add_argument("--eval", type=Path, help="directory holding <spec>/<row>/seed<n>/<benchmark>/ scores")
    parser.add_argument("--benchmarks", nargs="*", default=[], help="benchmarks that get a column (with --eval)")
    parser.add_argument("--adjust", choices=ADJUSTMENTS, default="holm", help="p-value adjustment over the family")
    parser.add_argument("--plan", type=Path, help="the campaign's seed plan (results/plans/<spec>.json), if planned")
    args = parser.parse_args(argv)
    return run_report(
        lambda: write_report(
            args.spec, args.runs, args.out, args.seeds, args.eval, args.benchmarks, args.adjust, args.plan
        ),
        (ConfigError, ValueError, FileNotFoundError),
    )


if __name__ == "__main__":
    sys.exit(main())
