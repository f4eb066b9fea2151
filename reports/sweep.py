"""A sweep's report and its best parameters, read from the study and the trials' own records.

Writes into the sweep's directory: ``report.md`` (figures in ``report_figures/``), a self-contained
``report.html``, and ``best_params.yaml``, a workflow config file that hands the best trial's
parameters to every ablation or comparison row built on the sweep's preset::

    snakemake ablations --configfile results/sweeps/dapo_default/best_params.yaml

The report shows how many trials completed, were pruned or failed, the best trials with the mean
objective over their seeds and its 95% Student-t CI (none for one seed), and Optuna's optimisation history, parameter
importances and slice plots.

Command line: ``python -m reports.sweep --sweep dapo_default --out results/sweeps/dapo_default``.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import matplotlib
import optuna
import yaml

from algos.campaign.sweeps import SweepSpec, as_overrides, open_storage, read_sweep
from algos.config.presets import ConfigError
from algos.engine.provenance import git_commit
from reports.render.cells import format_estimate
from reports.render.pages import Page, run_report, write_page
from reports.statistics.comparisons import seed_estimate

matplotlib.use("Agg")
TOP_TRIALS = 5
BEST_FILE = "best_params.yaml"


def read_records(out: Path) -> list[dict[str, Any]]:
    """The finished slots' records (one per trial), by trial number."""
    records = [json.loads(path.read_text()) for path in (out / "slots").glob("slot*.json")]
    return sorted(records, key=lambda record: record["trial"])


def best_records(spec: SweepSpec, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Completed trials, best objective first."""
    complete = [record for record in records if record["state"] == "COMPLETE"]
    return sorted(complete, key=lambda record: record["value"], reverse=spec.direction == "maximize")


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


def best_params_text(spec: SweepSpec, best: dict[str, Any]) -> str:
    """A workflow config file that gives rows built on the sweep's preset the best trial's values."""
    header = (
        f"# Best trial {best['trial']} of sweep '{spec.name}': {spec.metric} = {best['value']:.4f} "
        f"(mean of {len(best['seed_values'])} seeds).\n"
        f"# Use: snakemake ablations --configfile <this file>; rows built on '{spec.preset}' start from these.\n"
    )
    return header + yaml.safe_dump(
        {"ablations": {"tuned": {spec.preset: as_overrides(best["params"])}}}, sort_keys=False
    )


def write_sweep_report(spec: SweepSpec, out: Path, storage: str | None = None) -> list[Path]:
    """Write the report pages and ``best_params.yaml`` (when a trial completed) into ``out``."""
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
    written = list(write_page(page, out, "report"))
    if best:
        path = out / BEST_FILE
        path.write_text(best_params_text(spec, best[0]))
        written.append(path)
    return written


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
