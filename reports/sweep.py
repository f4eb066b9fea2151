"""A sweep's search report, read from the study and the trials' own records.

Writes into the sweep's directory ``report.md`` (figures in ``report_figures/``) and a self-contained
``report.html``: how many trials completed, were pruned or failed, the best trials with the mean objective over their
seeds and its 95% Student-t CI (none for one seed), and Optuna's optimisation history, parameter importances and slice
plots. The search's best means are biased upward (the winner's curse): tuned values come only from the sweep's
confirmation on fresh seeds (:mod:`reports.sweep_confirmation`), never from this report.

Command line: ``python -m reports.sweep --sweep dapo_default --out results/sweeps/dapo_default``.
"""

from __future__ import annotations

import argparse
import io
import sys
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import matplotlib
import optuna

from algos.campaign.sweeps import SweepSpec, best_records, open_storage, read_records, read_sweep
from algos.config.presets import ConfigError
from algos.engine.commit import git_commit
from reports.render.cells import format_estimate
from reports.render.pages import Page, run_report, write_page
from reports.statistics.comparisons import seed_estimate

matplotlib.use("Agg")
TOP_TRIALS = 5


def table_cells(spec: SweepSpec, best: list[dict[str, Any]]) -> list[list[str]]:
    """One row per best trial: its number, parameters, objective mean [CI] (n) and per-seed values."""
    rows = []
    for record in best[:TOP_TRIALS]:
        params = [_format_value(record["params"][dimension.key]) for dimension in spec.space]
        seeds = ", ".join(f"{100 * value:.1f}" for value in record["seed_values"])
        rows.append([str(record["trial"]), *params, format_estimate(seed_estimate(record["seed_values"])), seeds])
    return rows


def _format_value(value: Any) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def figures(study: optuna.Study) -> list[tuple[str, bytes]]:
    """Optimisation history, parameter importances (with two or more completed trials) and slice plots."""
    from matplotlib import pyplot
    from optuna.visualization import matplotlib as plots

    complete = [t for t in study.get_trials(deepcopy=False) if t.state == optuna.trial.TrialState.COMPLETE]
    if not complete:
        return []
    wanted = [("Optimisation history", plots.plot_optimization_history), ("Slice plots", plots.plot_slice)]
    if len(complete) >= 2:
        wanted.insert(1, ("Parameter importances (fANOVA)", plots.plot_param_importances))
    rendered = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        for title, plot in wanted:
            axes = plot(study)
            panels = list(axes.flat) if hasattr(axes, "flat") else [axes]
            figure = panels[0].figure
            figure.set_size_inches(max(8.0, 3.5 * len(panels) + 2), 4.5)  # room for every panel and the colour bar
            buffer = io.BytesIO()
            figure.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
            pyplot.close(figure)
            rendered.append((title, buffer.getvalue()))
    return rendered


def write_sweep_report(spec: SweepSpec, out: Path, storage: str | None = None) -> list[Path]:
    """Write the report pages into ``out``."""
    try:
        study = optuna.load_study(study_name=spec.name, storage=open_storage(storage, out))
    except KeyError:
        where = storage or str(out / "study.journal")
        raise ConfigError(
            f"there is no study '{spec.name}' in {where}; run its trials first (snakemake sweep)"
        ) from None
    records = read_records(out)
    best = best_records(spec, records)
    states = Counter(t.state.name for t in study.get_trials(deepcopy=False))
    counts = ", ".join(f"{states.get(name, 0)} {name.lower()}" for name in ("COMPLETE", "PRUNED", "FAIL", "RUNNING"))
    introduction = (
        f"Preset {spec.preset}; objective: {spec.direction} {spec.metric} (final step, mean over {spec.seeds} "
        f"seed(s)); {len(study.trials)} trials in the study: {counts}. Budget: {', '.join(spec.budget) or 'preset'}."
    )
    page = Page(
        title=spec.title,
        introduction=introduction,
        header=["trial", *(dimension.key for dimension in spec.space), "objective: mean [95% CI] (n)", "per seed (%)"],
        cells=table_cells(spec, best),
        note="The best completed trials; 95% CIs are Student t over each trial's seeds (no interval for one seed).",
        figures=figures(study),
        origin={
            "git_commit": git_commit(),
            "optuna": optuna.__version__,
            "sampler": dict(spec.sampler),
            "pruner": dict(spec.pruner),
            "storage": storage or str(out / "study.journal"),
            "trials": [
                {key: record[key] for key in ("trial", "state", "params", "value", "runs")} for record in records
            ],
        },
    )
    return list(write_page(page, out, "report"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reports.sweep", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sweep", required=True, help="sweep spec (python -m algos.campaign.sweeps --list)")
    parser.add_argument("--out", required=True, type=Path, help="the study's directory")
    parser.add_argument("--storage", help="Optuna storage URL (default: the journal file in --out)")
    args = parser.parse_args(argv)
    return run_report(
        lambda: write_sweep_report(read_sweep(args.sweep), args.out, args.storage), (ConfigError, ValueError)
    )


if __name__ == "__main__":
    sys.exit(main())
