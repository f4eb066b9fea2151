"""A/A calibration on real runs: how often the verdict procedure calls a direction between two halves of
one row's seeds, where there is none to find.

One row (naive GRPO of DAPO Table 1 by default) is trained with many seeds. Each split draws two
disjoint halves of the table's seed count (seeds taken at random, labelled A and B) and applies the
report's whole verdict procedure to A against B: every quantity the spec's report compares (its metric
at the last step and each distinct declared endpoint) is tested, paired by position as a table pairs
by seed index, and the p-values are adjusted together (Holm unless told otherwise). A split is a false
positive when any adjusted p-value is at most the level. The rate over many splits estimates the
procedure's family-wise false-positive rate on these runs; its interval is a jackknife over seeds
(each seed left out in turn, the splits redrawn from the rest), since splits of one set of seeds are
not independent. Welch's t (the unpaired path) is measured beside it.

Command line: ``python -m reports.calibration --spec dapo_table1 --row naive_grpo --runs results/runs
--seeds 12 --half 3 --out results/reports``.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure
from scipy import stats

from algos.campaign.ablations import AblationSpec, Endpoint, read_spec
from algos.config.presets import ConfigError
from reports.analysis.endpoints import step_factor, window_mean
from reports.analysis.runs import FinishedRun, finished_runs
from reports.render.figures import DPI, png_bytes
from reports.render.pages import Page, run_report, write_page
from reports.stats import ADJUSTMENTS, LEVEL, adjust, paired_t, welch_t

TESTS: dict[str, Callable] = {
    "paired t (as a table pairs seeds)": lambda a, b: paired_t(a, b, distribution_free=False).p_value,
    "Welch t (different seed sets)": lambda a, b: welch_t(a, b, distribution_free=False).p_value,
}


def quantities(spec: AblationSpec) -> list[tuple[str, Endpoint | None]]:
    """What the spec's report compares: (name, endpoint), the table's metric first (endpoint None), then
    each distinct declared (metric, window)."""
    found: dict[tuple[str, tuple[int, int]], Endpoint] = {}
    for row in spec.rows:
        for endpoint in row.endpoints:
            found.setdefault((endpoint.metric, endpoint.window), endpoint)
    return [(f"{spec.metric} at the last step", None)] + [
        (f"{metric} over steps {window[0]}-{window[1]} (of {spec_steps(spec)})", endpoint)
        for (metric, window), endpoint in found.items()
    ]


def spec_steps(spec: AblationSpec) -> int:
    return spec.config(spec.rows[0].id).run.steps


def seed_values(spec: AblationSpec, row_id: str, runs: Sequence[FinishedRun]) -> np.ndarray:
    """Each quantity on each run: (runs, quantities); nan where a run did not log it."""
    steps = spec.config(row_id).run.steps
    table = []
    for run in runs:
        line = []
        for _, endpoint in quantities(spec):
            if endpoint is None:
                line.append(run.final[spec.metric])
                continue
            value = window_mean(run.history, endpoint.metric, endpoint.scaled(step_factor(run, steps)).window)
            line.append(np.nan if value is None else value)
        table.append(line)
    return np.asarray(table, dtype=float)


def false_positive_rates(
    values: np.ndarray, half: int, splits: int, seed: int, test: Callable, method: str = "holm", level: float = LEVEL
) -> tuple[float, np.ndarray]:
    """Over ``splits`` random A/A splits of the rows of ``values`` (seeds, quantities): the share whose
    family of adjusted p-values calls any direction, and each quantity's share of raw p ≤ level."""
    if values.shape[0] < 2 * half:
        raise ValueError(
            f"an A/A split of {half} + {half} seeds needs at least {2 * half} seeds, got {values.shape[0]}"
        )
    rng = np.random.default_rng(seed)
    family_hits, raw_hits = 0, np.zeros(values.shape[1])
    for _ in range(splits):
        order = rng.permutation(values.shape[0])
        first, second = values[order[:half]], values[order[half : 2 * half]]
        p_values = [
            test(first[:, q], second[:, q]) if np.all(np.isfinite(values[:, q])) else None
            for q in range(values.shape[1])
        ]
        family_hits += any(p is not None and p <= level for p in adjust(p_values, method))
        raw_hits += [p is not None and p <= level for p in p_values]
    return family_hits / splits, raw_hits / splits


def jackknife_interval(
    values: np.ndarray, half: int, splits: int, seed: int, test: Callable, method: str = "holm"
) -> tuple[float, float, float]:
    """The family-wise rate with a 95 % jackknife interval over seeds: (rate, low, high), clipped to [0, 1]."""
    rate, _ = false_positive_rates(values, half, splits, seed, test, method)
    seeds = values.shape[0]
    left_out = [
        false_positive_rates(np.delete(values, i, axis=0), half, splits, seed + 1 + i, test, method)[0]
        for i in range(seeds)
    ]
    spread = math.sqrt((seeds - 1) / seeds * float(np.sum((np.asarray(left_out) - np.mean(left_out)) ** 2)))
    half_width = stats.t.ppf(0.975, seeds - 1) * spread
    return rate, max(0.0, rate - half_width), min(1.0, rate + half_width)


def logged(names: Sequence[str], values: np.ndarray) -> tuple[list[str], np.ndarray]:
    """The quantities every run logged, and their columns."""
    keep = np.all(np.isfinite(values), axis=0)
    return [name for name, kept in zip(names, keep, strict=True) if kept], values[:, keep]


def spread_figure(names: Sequence[str], values: np.ndarray) -> bytes:
    """One panel per quantity: each seed's value (dots) around their mean (line)."""
    figure = Figure(figsize=(9.0, 1.1 * len(names) + 0.6), dpi=DPI, layout="constrained")
    for index, (name, column) in enumerate(zip(names, values.T, strict=True)):
        axes = figure.add_subplot(len(names), 1, index + 1)
        axes.plot(column, np.zeros_like(column), "o", alpha=0.6)
        axes.axvline(float(np.mean(column)), color="black", linewidth=0.8)
        axes.set_yticks([])
        axes.set_title(name, fontsize="x-small", loc="left")
        axes.tick_params(axis="x", labelsize="x-small")
    figure.suptitle("Each quantity over the row's seeds", fontsize="small")
    return png_bytes(figure)


def write_calibration(
    spec_name: str, row_id: str, runs_dir: Path, out_dir: Path, seeds: int, half: int, splits: int, method: str
) -> tuple[Path, Path]:
    """Run the calibration and write ``calibration.md`` and ``.html`` into ``out_dir``."""
    spec = read_spec(spec_name)
    row = spec.row(row_id)
    runs = finished_runs(runs_dir, spec.name, row.id, seeds)
    if len(runs) < 2 * half:
        raise FileNotFoundError(
            f"{spec.name}/{row.id} has {len(runs)} finished seeds of {seeds}; the calibration needs {2 * half}"
        )
    values = seed_values(spec, row.id, runs)
    names = [name for name, _ in quantities(spec)]
    headline, cells = [], []
    raw_rates = {}
    for label, test in TESTS.items():
        rate, low, high = jackknife_interval(values, half, splits, 0, test, method)
        _, raw_rates[label] = false_positive_rates(values, half, splits, 0, test, method)
        headline.append(f"{label}: {rate:.3f} [{low:.3f}, {high:.3f}]")
    for q, name in enumerate(names):
        column = values[:, q]
        if not np.all(np.isfinite(column)):
            cells.append([name, "not logged by every run", "—", *("—" for _ in TESTS)])
            continue
        cells.append(
            [
                name,
                f"{np.mean(column):.4g}",
                f"{np.std(column, ddof=1):.3g}",
                *(f"{raw_rates[label][q]:.3f}" for label in TESTS),
            ]
        )
    verdict = "at or under" if all(float(line.split(": ")[1].split()[0]) <= LEVEL for line in headline) else "ABOVE"
    page = Page(
        title=f"A/A calibration: {row.label} of {spec.title}",
        introduction=(
            f"{len(runs)} seeds of one row, {splits} random splits into two labelled halves of {half} seeds, each "
            f"judged by the report's procedure over {len(names)} quantities adjusted by {method}. Family-wise "
            f"false-positive rate (level {LEVEL}), 95 % jackknife interval over seeds — "
            + "; ".join(headline)
            + f". Measured rate {verdict} the level."
        ),
        header=["quantity", "mean over seeds", "sd over seeds", *(f"raw p ≤ {LEVEL}: {label}" for label in TESTS)],
        cells=cells,
        note=(
            "Raw rates are each quantity's own test before adjustment; the family-wise rate above counts a split as a "
            "false positive when any adjusted p-value is at most the level. A quantity whose seeds are all equal "
            "has no test."
        ),
        figures=[("Each quantity's seeds", spread_figure(*logged(names, values)))],
        origin={
            "spec": spec.name,
            "row": row.id,
            "runs": [str(run.directory) for run in runs],
            "half": half,
            "splits": splits,
            "adjustment": method,
        },
    )
    return write_page(page, out_dir, "calibration")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reports.calibration", description=__doc__.split("\n\n")[0])
    parser.add_argument("--spec", default="dapo_table1", help="ablation spec whose report procedure is calibrated")
    parser.add_argument("--row", default="naive_grpo", help="the row trained with many seeds")
    parser.add_argument(
        "--runs", type=Path, default=Path("results/runs"), help="directory holding <spec>/<row>/seed<n>/"
    )
    parser.add_argument("--seeds", type=int, default=12, help="seeds of the row (0..seeds-1)")
    parser.add_argument("--half", type=int, default=3, help="seeds per half: the table's seed count")
    parser.add_argument("--splits", type=int, default=1000, help="random A/A splits")
    parser.add_argument("--adjust", choices=ADJUSTMENTS, default="holm", help="the family's p-value adjustment")
    parser.add_argument("--out", type=Path, default=Path("results/reports"), help="directory for the report")
    args = parser.parse_args(argv)
    return run_report(
        lambda: write_calibration(
            args.spec, args.row, args.runs, args.out, args.seeds, args.half, args.splits, args.adjust
        ),
        (ConfigError, ValueError, FileNotFoundError),
    )


if __name__ == "__main__":
    sys.exit(main())
