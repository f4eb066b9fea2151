"""A comparison of searches: one sweep searched by several samplers and pruners, each with several sampler seeds,
every study's winner judged by its objective on fresh seeds, set against what the study cost.

For each study (``results/search/<sweep>/<sampler>-<pruner>/seed<k>/``): its trials' states, its cost (the recorded
seconds of every run it trained, pruned ones included: each run's ``perf/train_seconds_total`` at its last logged
step plus its held-out evaluations' ``perf/eval_seconds``), and its winner (the best completed trial by its tuning
mean) retrained on the fresh seeds: the confirmed objective, its mean over them, and Δ against the preset's runs of
the sweep's own confirmation on the same seeds (paired by seed), in points; the winner's curse beside it (the
winner's tuning mean less its mean on the fresh seeds, on the search's own objective). Per search, over its sampler
seeds: the mean and 95 % Student-t interval of the cost in core-hours, of the confirmed Δ, and of the confirmed Δ per
core-hour, the measure the default search is chosen by (:func:`favoured_search`).

Writes ``results/search/<sweep>/comparison.md``, ``comparison.html`` and ``comparison.json``.

Command line: ``python -m reports.search_comparison --sweep dapo_default --searches tpe/median random/median --seeds
1 2 3 --results results``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from algos.campaign.sweep_confirmation import read_plan, run_directory
from algos.campaign.sweeps import PRESET_CONFIGURATION, SweepSpec, read_records, read_sweep
from algos.config.presets import ConfigError
from algos.engine.commit import git_commit
from algos.trainer.run_files import FINAL_FILE, METRICS_FILE, read_metrics, write_json
from reports.render.cells import format_estimate
from reports.render.figures import png_bytes
from reports.render.pages import Page, run_report, write_page
from reports.statistics.comparisons import seed_estimate

SECONDS_PER_HOUR = 3600.0


def study_directory(results: Path, sweep: str, search: str, seed: int) -> Path:
    sampler, pruner = search.split("/")
    return results / "search" / sweep / f"{sampler}-{pruner}" / f"seed{seed}"


def run_seconds(run: Path) -> float:
    """The recorded seconds of one run, finished or pruned: its training at the last logged step, and its held-out
    evaluations."""
    rows = read_metrics(run, METRICS_FILE)
    training = [row["perf/train_seconds_total"] for row in rows if "perf/train_seconds_total" in row]
    return (training[-1] if training else 0.0) + sum(row.get("perf/eval_seconds", 0.0) for row in rows)


def study_record(spec: SweepSpec, study: Path, preset: Path) -> dict[str, Any]:
    """One study's trials, cost and confirmed winner (see the module's docstring); ``preset``: the directory of the
    preset's confirmation runs."""
    records = read_records(study)
    runs = sorted((study / "trials").glob("trial*/seed*"))
    plan = read_plan(study)
    winner = plan["configurations"][0]  # the preset where the study completed no trial: it found nothing
    reference = [_final(preset / f"seed{seed}") for seed in plan["seeds"]]
    found = winner["name"] != PRESET_CONFIGURATION
    fresh = [_final(run_directory(study, winner["name"], seed)) for seed in plan["seeds"]] if found else reference
    metric, objective = plan["metric"], plan["objective"]
    differences = [mine[metric] - theirs[metric] for mine, theirs in zip(fresh, reference, strict=True)]
    fresh_objective = [run[objective] for run in fresh if objective in run]
    seconds = sum(run_seconds(run) for run in runs)
    return {
        "study": str(study),
        "states": dict(Counter(record["state"] for record in records)),
        "runs": len(runs),
        "core_hours": seconds / SECONDS_PER_HOUR,
        "winner": winner["name"],
        "params": winner["params"],
        "tuning_mean": winner["tuning_mean"],
        "fresh_objective": float(np.mean(fresh_objective)) if fresh_objective else None,
        "confirmed": float(np.mean([run[metric] for run in fresh])),
        "confirmed_delta": float(np.mean(differences)),
        "seeds": plan["seeds"],
    }


def _final(run: Path) -> dict[str, float]:
    if not (run / FINAL_FILE).is_file():
        raise FileNotFoundError(f"{run} has not finished (no {FINAL_FILE})")
    return json.loads((run / FINAL_FILE).read_text())


def comparison_record(spec: SweepSpec, searches: Sequence[str], seeds: Sequence[int], results: Path) -> dict[str, Any]:
    """Every study of every search, and per search its means over the sampler seeds."""
    preset = results / "sweeps" / spec.name / "confirmation" / PRESET_CONFIGURATION
    summary = {}
    for search in searches:
        studies = [study_record(spec, study_directory(results, spec.name, search, seed), preset) for seed in seeds]
        per_hour = [study["confirmed_delta"] / study["core_hours"] for study in studies]
        summary[search] = {
            "studies": studies,
            "core_hours": [study["core_hours"] for study in studies],
            "confirmed_delta": [study["confirmed_delta"] for study in studies],
            "delta_per_core_hour": per_hour,
            "pruned": [study["states"].get("PRUNED", 0) for study in studies],
            "curse": [
                study["tuning_mean"] - study["fresh_objective"]
                for study in studies
                if study["fresh_objective"] is not None and study["tuning_mean"] is not None
            ],
        }
    return {"sweep": spec.name, "seeds": list(seeds), "searches": summary, "favoured": favoured_search(summary)}


def favoured_search(summary: dict[str, dict[str, Any]]) -> str:
    """The search the measure favours, by the rule declared before the comparison ran: among the searches whose
    winners beat the preset on average (mean confirmed Δ above 0), the most confirmed points per core-hour (its mean
    confirmed Δ over its mean cost); where none does, nothing the searches found held at this budget, and the
    cheapest search (least mean core-hours)."""
    gaining = [search for search, entry in summary.items() if np.mean(entry["confirmed_delta"]) > 0]
    if gaining:
        return max(gaining, key=lambda search: points_per_core_hour(summary[search]))
    return min(summary, key=lambda search: float(np.mean(summary[search]["core_hours"])))


def points_per_core_hour(entry: dict[str, Any]) -> float:
    """A search's mean confirmed Δ over its mean cost in core-hours."""
    return float(np.mean(entry["confirmed_delta"]) / np.mean(entry["core_hours"]))


def comparison_figure(record: dict[str, Any]) -> bytes:
    """Each study's cost against its winner's confirmed Δ, one colour a search; each search's mean as a cross."""
    figure = Figure(figsize=(8.0, 4.5))
    axes = figure.add_subplot()
    for index, (search, entry) in enumerate(record["searches"].items()):
        colour = f"C{index}"
        axes.scatter(entry["core_hours"], [100 * d for d in entry["confirmed_delta"]], color=colour, alpha=0.6)
        axes.scatter(
            [np.mean(entry["core_hours"])], [100 * np.mean(entry["confirmed_delta"])], color=colour, marker="x", s=90,
            label=search,
        )  # fmt: skip
    axes.axhline(0.0, color="0.6", linewidth=1)
    axes.set_xlabel("search cost (core-hours, recorded)")
    axes.set_ylabel("winner's confirmed Δ vs the preset (points)")
    axes.set_title("Each study's cost and what its winner held on fresh seeds (× the search's mean)")
    axes.legend(loc="center left", bbox_to_anchor=(1.02, 0.5), frameon=False)
    return png_bytes(figure)


def write_comparison(spec: SweepSpec, searches: Sequence[str], seeds: Sequence[int], results: Path) -> list[Path]:
    """Write the comparison's page and record into ``results/search/<sweep>/``."""
    record = comparison_record(spec, searches, seeds, results)
    cells = []
    for search, entry in record["searches"].items():
        cells.append(
            [
                search,
                format_estimate(seed_estimate(entry["core_hours"]), scale=1, digits=2),
                f"{np.mean(entry['pruned']):.1f}",
                format_estimate(seed_estimate(entry["confirmed_delta"])),
                f"{100 * points_per_core_hour(entry):+.2f}",
                format_estimate(seed_estimate(entry["delta_per_core_hour"])),
                format_estimate(seed_estimate(entry["curse"])) if len(entry["curse"]) > 1 else "—",
            ]
        )
    fresh = record["searches"][searches[0]]["studies"][0]["seeds"]
    out = results / "search" / spec.name
    page = Page(
        title=f"Searches compared on sweep {spec.name}: what each found that held, per core-hour",
        introduction=(
            f"Sweep {spec.name} ({spec.trials} trials of {spec.seeds} tuning seeds) searched by each sampler/pruner "
            f"with the sampler seeds {', '.join(map(str, seeds))}, one study each; each study's best completed trial "
            f"retrained on the fresh seeds {fresh[0]}-{fresh[-1]} and set against the preset's runs of the sweep's "
            f"confirmation on the same seeds ({spec.confirmation.metric}, paired by seed). The measure favours "
            f"{record['favoured']} (declared rule: among searches whose winners beat the preset on average, the most "
            "confirmed points per core-hour; where none does, the cheapest)."
        ),
        header=[
            "search (sampler/pruner)",
            "cost: core-hours [95 % CI] (studies)",
            "trials pruned, mean",
            "winner's confirmed Δ vs preset, points",
            "points per core-hour (mean Δ / mean cost)",
            "per study: Δ per core-hour",
            "winner's curse, points",
        ],
        cells=cells,
        note=(
            "Means over the sampler seeds with 95 % Student-t intervals (n = the studies). Cost: the recorded seconds "
            "of every run a study trained, pruned ones included, training plus held-out evaluations. The winner's "
            "curse: the winner's mean over its tuning seeds less its mean on the fresh seeds, on the search's objective."
        ),
        figures=[("Cost and confirmed Δ, study by study", comparison_figure(record))],
        origin={"git_commit": git_commit(), "record": "comparison.json"},
    )
    written = list(write_page(page, out, "comparison"))
    write_json(out / "comparison.json", record)
    return [*written, out / "comparison.json"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reports.search_comparison", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sweep", required=True, help="the sweep compared (it declares a confirmation)")
    parser.add_argument("--searches", nargs="+", required=True, help="sampler/pruner of each search")
    parser.add_argument("--seeds", type=int, nargs="+", required=True, help="the sampler seeds, one study each")
    parser.add_argument("--results", type=Path, default=Path("results"), help="the workflow's results folder")
    args = parser.parse_args(argv)
    return run_report(
        lambda: write_comparison(read_sweep(args.sweep), args.searches, args.seeds, args.results),
        (ConfigError, ValueError, FileNotFoundError),
    )


if __name__ == "__main__":
    sys.exit(main())
