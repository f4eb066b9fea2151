"""A sweep's confirmation: its best trials and the preset retrained on fresh seeds, each trial judged against the
preset (better, equivalent, worse or undecided), the winner's curse measured, and the tuned values a table may use.

Reads the confirmation's plan and runs (:mod:`algos.campaign.sweep_confirmation`) and writes into the sweep's
directory:

- ``confirmation.md`` and a self-contained ``confirmation.html``: per configuration its mean objective over the
  search's tuning seeds beside its mean over the fresh seeds (the winner's curse: how much the search's choice
  flattered it), its fresh-seed mean on the confirmation's metric, and against the preset, paired by seed, Δ with
  its interval at the comparison's share of the level and the verdict, on critical values calibrated over the
  envelope of seed shapes (:mod:`reports.statistics.confirmation`);
- ``confirmation.json``: the same as a record;
- ``best_params.yaml``: a workflow config file. Where a configuration was confirmed better than the preset, it
  gives every row built on the preset that configuration's values (the best fresh-seed mean among those confirmed
  better); otherwise it says that the preset stands, and a workflow given it stops naming the sweep
  (:func:`algos.campaign.ablations.campaign_budget`).

Command line: ``python -m reports.sweep_confirmation --sweep dapo_default --out results/sweeps/dapo_default``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import yaml
from matplotlib.figure import Figure

from algos.campaign.ablations import PRESET_STANDS
from algos.campaign.sweep_confirmation import read_plan, run_directory
from algos.campaign.sweeps import PRESET_CONFIGURATION, SweepSpec, as_overrides, read_sweep
from algos.config.presets import ConfigError
from algos.engine.commit import git_commit
from algos.trainer.run_files import FINAL_FILE, write_json
from reports.render.cells import format_comparison, format_estimate
from reports.render.figures import png_bytes
from reports.render.pages import Page, run_report, write_page
from reports.statistics.comparisons import seed_estimate
from reports.statistics.confirmation import Confirmed, Verdict, confirm

BEST_FILE = "best_params.yaml"
RECORD_FILE = "confirmation.json"


def confirmation_record(spec: SweepSpec, out: Path) -> tuple[dict[str, Any], dict[str, Confirmed]]:
    """Every configuration's tuning and fresh-seed numbers and each trial's verdict against the preset, as a record,
    and each trial's judgement by name."""
    plan = read_plan(out)
    fresh = {entry["name"]: _fresh_values(out, entry["name"], plan["seeds"]) for entry in plan["configurations"]}
    preset = [run[plan["metric"]] for run in fresh[PRESET_CONFIGURATION]]
    entries, judged = [], {}
    for entry in plan["configurations"]:
        values = fresh[entry["name"]]
        record = {
            **entry,
            "fresh_objective": [run.get(plan["objective"]) for run in values],
            "fresh_metric": [run[plan["metric"]] for run in values],
        }
        if entry["name"] != PRESET_CONFIGURATION:
            maximize = plan["direction"] == "maximize"
            confirmed = confirm(
                record["fresh_metric"], preset, plan["compared"], plan["level"], plan["margin"], maximize
            )
            delta = confirmed.comparison.delta
            record.update(
                delta=delta.mean,
                ci_low=delta.ci_low,
                ci_high=delta.ci_high,
                p_value=confirmed.comparison.p_value,
                equivalence_p=confirmed.equivalence_p,
                share=confirmed.level,
                verdict=str(confirmed.verdict),
            )
            judged[entry["name"]] = confirmed
        entries.append(record)
    better = [entry for entry in entries if entry.get("verdict") == Verdict.BETTER]
    sign = 1.0 if plan["direction"] == "maximize" else -1.0
    winner = max(better, key=lambda entry: sign * sum(entry["fresh_metric"])) if better else None
    return {**plan, "configurations": entries, "winner": winner["name"] if winner else None}, judged


def _fresh_values(out: Path, configuration: str, seeds: list[int]) -> list[dict[str, float]]:
    missing = [seed for seed in seeds if not (run_directory(out, configuration, seed) / FINAL_FILE).is_file()]
    if missing:
        raise FileNotFoundError(f"{out}: confirmation runs of {configuration} not finished: seeds {missing}")
    return [json.loads((run_directory(out, configuration, seed) / FINAL_FILE).read_text()) for seed in seeds]


def best_params_text(spec: SweepSpec, record: dict[str, Any]) -> str:
    """The workflow config file of the confirmed winner's values, or the one that says the preset stands."""
    seeds = f"{len(record['seeds'])} fresh seeds ({record['seeds'][0]}-{record['seeds'][-1]})"
    winner = next((entry for entry in record["configurations"] if entry["name"] == record["winner"]), None)
    if winner is None:
        header = (
            f"# Sweep '{spec.name}': no configuration of its top {record['compared']} was confirmed better than preset "
            f"'{spec.preset}' on {seeds}; the preset stands.\n"
            "# A workflow given this file stops: drop it to run the preset (confirmation.md has each verdict).\n"
        )
        tuned = {"sweep": spec.name, "configuration": None, "verdict": PRESET_STANDS, "settings": []}
    else:
        header = (
            f"# Sweep '{spec.name}': {winner['name']} confirmed better than preset '{spec.preset}' on {seeds}: "
            f"{record['metric']} {100 * winner['delta']:+.1f} points [{100 * winner['ci_low']:.1f}, "
            f"{100 * winner['ci_high']:.1f}].\n"
            f"# Use: snakemake ablations --configfile <this file>; rows built on '{spec.preset}' start from these.\n"
        )
        tuned = {
            "sweep": spec.name,
            "configuration": winner["name"],
            "verdict": winner["verdict"],
            "settings": as_overrides(winner["params"]),
        }
    return header + yaml.safe_dump({"ablations": {"tuned": {spec.preset: tuned}}}, sort_keys=False)


def curse_figure(record: dict[str, Any]) -> bytes:
    """Each configuration's objective over the tuning seeds and over the fresh seeds, joined: the winner's curse."""
    figure = Figure(figsize=(7.0, 3.6))
    axes = figure.add_subplot()
    for entry in record["configurations"]:
        fresh = [value for value in entry["fresh_objective"] if value is not None]
        fresh_mean = 100 * sum(fresh) / len(fresh) if fresh else None
        if entry["tuning_mean"] is not None and fresh_mean is not None:
            axes.plot([0, 1], [100 * entry["tuning_mean"], fresh_mean], marker="o", label=entry["name"])
        elif fresh_mean is not None:
            axes.plot([1], [fresh_mean], marker="s", color="black", label=entry["name"])
    axes.set_xticks([0, 1], ["tuning seeds (the search's)", "fresh seeds"])
    axes.set_xlim(-0.3, 1.3)
    axes.set_ylabel(f"{record['objective']} (%)")
    axes.set_title("The winner's curse: the search's means against the same configurations on fresh seeds")
    axes.legend(loc="center left", bbox_to_anchor=(1.02, 0.5), frameon=False)
    return png_bytes(figure)


def write_confirmation(spec: SweepSpec, out: Path) -> list[Path]:
    """Write the confirmation's page, record and ``best_params.yaml`` into ``out``."""
    record, judged = confirmation_record(spec, out)
    level, compared = record["level"], max(record["compared"], 1)  # a search that completed no trial compares none
    cells = []
    for entry in record["configurations"]:
        tuning = format_estimate(seed_estimate(entry["tuning_values"])) if entry["tuning_values"] else "— (not a trial)"
        fresh = [value for value in entry["fresh_objective"] if value is not None]
        fresh_objective = format_estimate(seed_estimate(fresh)) if fresh else "—"
        curse = (
            f"{100 * (entry['tuning_mean'] - sum(fresh) / len(fresh)):+.1f}"
            if fresh and entry["tuning_mean"] is not None
            else "—"
        )
        if entry["name"] == PRESET_CONFIGURATION:
            versus = verdict = "—"
        else:
            versus = format_comparison(judged[entry["name"]].comparison)
            verdict = entry["verdict"]
        params = (
            ", ".join(f"{key}={_value(value)}" for key, value in entry["params"].items()) or f"preset {spec.preset}"
        )
        cells.append(
            [
                entry["name"],
                params,
                tuning,
                fresh_objective,
                curse,
                format_estimate(seed_estimate(entry["fresh_metric"])),
                versus,
                verdict,
            ]
        )
    winner = record["winner"]
    outcome = (
        f"{winner} was confirmed better than the preset: best_params.yaml gives its values to the rows built on "
        f"'{spec.preset}'."
        if winner
        else "No configuration was confirmed better than the preset: best_params.yaml says the preset stands."
    )
    page = Page(
        title=f"Confirmation of sweep {spec.name}: {spec.title}",
        introduction=(
            f"The search's {compared} best completed trials (by their mean {record['objective']} over the tuning "
            f"seeds 0-{spec.seeds - 1}) and preset {spec.preset}'s own configuration, each retrained on the fresh seeds "
            f"{record['seeds'][0]}-{record['seeds'][-1]}, which the search never saw. Each trial is compared with the "
            f"preset on {record['metric']}, paired by seed, at {level:g}/{compared} = {level / compared:.3g} (Bonferroni "
            f"over the {compared}): better or worse where the paired t statistic crosses a direction's critical value, "
            f"equivalent where both one-sided statistics at ±{100 * record['margin']:g} points cross theirs, else "
            "undecided; the critical values are calibrated over the envelope of seed shapes (normal, heavy-tailed, "
            f"skewed either way), so they lie above the t distribution's. {outcome}"
        ),
        header=[
            "configuration",
            "values",
            f"{record['objective']}: tuning seeds",
            "fresh seeds",
            "winner's curse (tuning − fresh, points)",
            f"{record['metric']}: fresh seeds",
            f"Δ vs preset [{100 * (1 - level / compared):.3g} % CI]",
            "verdict",
        ],
        cells=cells,
        note=(
            "Means in percent with 95 % Student-t intervals over seeds; Δ vs the preset is paired on the fresh "
            "seeds, its interval the mean ± the calibrated critical value × its standard error at the comparison's "
            "share of the level, so it excludes 0 exactly where a direction is called. The winner's curse compares one configuration's objective on the search's seeds "
            "and on fresh seeds: the search picked the trials whose tuning seeds happened to run high."
        ),
        figures=[("The winner's curse", curse_figure(record))],
        origin={"git_commit": git_commit(), "plan": str(out / "confirmation" / "plan.json"), "record": RECORD_FILE},
    )
    written = list(write_page(page, out, "confirmation"))
    write_json(out / RECORD_FILE, record)
    (out / BEST_FILE).write_text(best_params_text(spec, record))
    return [*written, out / RECORD_FILE, out / BEST_FILE]


def _value(value: Any) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reports.sweep_confirmation", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sweep", required=True, help="sweep spec (python -m algos.campaign.sweeps --list)")
    parser.add_argument("--out", required=True, type=Path, help="the study's directory")
    args = parser.parse_args(argv)
    return run_report(
        lambda: write_confirmation(read_sweep(args.sweep), args.out), (ConfigError, ValueError, FileNotFoundError)
    )


if __name__ == "__main__":
    sys.exit(main())
