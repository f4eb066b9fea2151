"""An ablation spec's report, built from its runs' own files: a Markdown page and a self-contained HTML page.

The page opens with a forest plot of every comparison (:mod:`reports.render.forest`), then the spec's
table (:mod:`reports.render.tables`): per row, ours at the final step of every run with its interval
over seeds, the Δ to the compared row with its p-values, and whether it agrees with the paper's
direction, judged with every declared endpoint as one family (:mod:`reports.analysis.family`). Beside
it, the endpoint table measures what the spec declared each row is judged by, and the diagnostics table
what each run can be checked by on its own. Then figure panels per endpoint, accuracy against responses
generated for dynamic-sampling rows, curves with seed bands, and the provenance of every number
(:mod:`reports.analysis.provenance`). Warnings on top name a spec edited since its last commit,
dynamic-sampling steps that trained short, non-finite values and runs from more than one environment.
Nothing is rerun: each run's files are read once (:mod:`reports.analysis.runs`).

Benchmarks on which the runs' final policies were scored (``<eval>/<spec>/<row>/seed<n>/<benchmark>/``,
written by :mod:`eval.run.evaluate`) add one column each, mean [95% CI] (n) of the benchmark's headline
score over the row's scored seeds, and their protocols are stated under the table.

Command line: ``python -m reports.ablation --spec dapo_table1 --runs results/runs --out results/reports
[--eval results/eval --benchmarks aime24 math500] [--adjust holm|bh] [--plan results/plans/dapo_table1.json]``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from algos.campaign.ablations import read_spec
from algos.config.presets import ConfigError
from reports.analysis.campaign import analyse_campaign
from reports.analysis.diagnostics import row_diagnostics, run_warnings
from reports.analysis.provenance import declaration_warnings, environment_warnings, provenance, spec_file_state
from reports.analysis.sequential import SequentialState
from reports.render import design_table, tables
from reports.render.endpoint_figures import accuracy_per_sample_figure, endpoint_figure
from reports.render.figures import figure_grid
from reports.render.forest import forest_plot
from reports.render.pages import Page, Table, run_report, write_page
from reports.statistics.comparisons import LEVEL
from reports.statistics.multiplicity import ADJUSTMENTS
from reports.statistics.verdicts import resolution_note


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
    method: the family's p-value adjustment. plan: a seed plan written by :mod:`reports.plan_seeds` (its
    seeds per row replace ``seeds``, its comparisons are Stein's tests).
    """
    spec = read_spec(spec_name)
    benchmarks = benchmarks if eval_dir else ()
    campaign = analyse_campaign(spec, runs_dir, seeds, plan, eval_dir, benchmarks, method)
    analysis, planned, state, record = campaign.analysis, campaign.planned, campaign.sequential, campaign.record
    results, runs_of = analysis.rows, analysis.runs_of
    protocols = tables.benchmark_protocols(results, benchmarks)
    digest, spec_warning = spec_file_state(spec.path)
    seed_counts = sorted({len(result.runs) for result in results if result.runs})
    origin = provenance(spec, results)
    forest = forest_plot(spec, analysis)
    figures = [
        (title, png)
        for title, png in (
            ("Endpoints over training", endpoint_figure(analysis.endpoints, runs_of)),
            (
                "Accuracy against responses generated (DAPO Fig. 6)",
                accuracy_per_sample_figure(spec, runs_of, spec.metric),
            ),
        )
        if png is not None
    ]
    figures += figure_grid(
        {result.row.label: [run.history for run in result.runs] for result in results if result.runs},
        {row.label: spec.row(row.compare_to).label for row in spec.rows if row.compare_to},
    )
    page = Page(
        title=spec.title,
        introduction=" ".join(
            [
                f"{tables.introduction(spec)} Spec file {spec.path.name}, SHA-256 {digest}.",
                *(resolution_note(n, analysis.family_size) for n in seed_counts[:1] if state is None),
                *([planned.summary] if planned else []),
                *([sequential_summary(record, state)] if state else []),
            ]
        ),
        header=[*tables.HEADER, *(f"{benchmark}: mean [95% CI] (n)" for benchmark in benchmarks)],
        cells=tables.table_cells(spec, results, benchmarks),
        note=" ".join([tables.NOTE, *(f"{b} ({'; '.join(lines) or 'not scored'})." for b, lines in protocols.items())]),
        tables=[
            Table(
                "Endpoints declared in the spec",
                tables.ENDPOINT_HEADER,
                tables.endpoint_cells(spec, analysis.endpoints),
                tables.ENDPOINT_NOTE,
            ),
            Table(
                "Diagnostics per row",
                tables.DIAGNOSTIC_HEADER,
                tables.diagnostic_cells(row_diagnostics(spec, runs_of)),
                tables.DIAGNOSTIC_NOTE,
            ),
        ],
        warnings=[
            *([spec_warning] if spec_warning else []),
            *run_warnings(spec, runs_of),
            *environment_warnings(origin["environments"]),
            *declaration_warnings(spec.path, origin["git commits"]),
            *(planned.unresolved if planned else []),
            *([open_warning(state)] if state and not state.finished else []),
        ],
        figures=figures,
        first=[
            Table(
                "Study design",
                design_table.HEADER,
                design_table.design_cells(spec, analysis),
                design_table.note(spec, state is not None),
            )
        ]
        if spec.design
        else [],
        lead=("Every comparison at a glance: Δ with its 95% CI, coloured by verdict", forest) if forest else None,
        origin={
            "spec file": {"path": str(spec.path), "sha256": digest},
            **origin,
            "statistics": {
                "adjustment": method,
                "primary comparisons": analysis.family_size,
                "secondary comparisons": spec.design.secondary if spec.design else None,
                "level": LEVEL,
            },
            **({"benchmark protocols": protocols} if benchmarks else {}),
        },
    )
    return write_page(page, out_dir, spec.name)


def sequential_summary(plan: dict, state: SequentialState) -> str:
    """What the group-sequential campaign did, in a sentence or two, for the report's introduction."""
    stopped = [s for s in state.comparisons if s.result is not None]
    counts = {}
    for s in stopped:
        counts[str(s.result.verdict)] = counts.get(str(s.result.verdict), 0) + 1
    words = ", ".join(f"{n} {verdict}" for verdict, n in sorted(counts.items())) or "none yet"
    if plan.get("maxima") == "variance":
        maxima = (
            f"the level spent over every look to the cap of {state.looks[-1]}, each primary's maximum re-sized at every "
            "look from the spread of its seeds"
        )
    else:
        maxima = "each primary's looks up to the most its basis spread asks"
    return (
        f"A group-sequential design ({plan['spending'].replace('_', '-')} spending of α/{len(state.comparisons)} "
        f"= {plan['level']:.3g} per primary, looks at {', '.join(map(str, state.looks))} seeds, {maxima}; seeds "
        f"numbered from {state.first_seed}): each primary stopped at the first look that decided it, or undecided at "
        f"its maximum. {len(stopped)} of {len(state.comparisons)} primaries stopped: {words}."
    )


def open_warning(state: SequentialState) -> str:
    """The campaign stopped before every primary was decided: which are open, and the seeds their next look needs."""
    waiting = [f"{s.row} vs {s.compared_with}" for s in state.comparisons if s.result is None]
    needs = ", ".join(f"{row} {n}" for row, n in state.next_seeds.items())
    return (
        f"the sequential campaign is not finished: {len(waiting)} primaries are open after look {state.looks_done} "
        f"({'; '.join(waiting)}); the next look needs seeds per row: {needs}. Rerun the campaign to finish it."
    )


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
