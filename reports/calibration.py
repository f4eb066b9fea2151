"""Negative and positive controls on real runs: how often the verdict procedure calls a direction between two
halves of one row's seeds, where there is none to find (A/A), and how often it calls a harm of known direction
against the rate its design predicts (positive control).

One row (naive GRPO of DAPO Table 1 by default) is trained with many seeds. Each A/A split draws two disjoint
halves of the table's seed count (seeds taken at random, labelled A and B) and applies the report's
procedure to A against B: every quantity the spec's report compares (its metric at the last step, the
row's primary, and each distinct declared endpoint, secondary) is tested, paired by position as a table
pairs by seed index, and judged under the spec's design (gated: the graph of
:mod:`reports.statistics.multiplicity` with the metric as the one primary; separate: two families, each adjusted by
Holm unless told otherwise). A split is a false positive when any adjusted p-value is at most the level.
The rate over many splits estimates the procedure's family-wise false-positive rate on these runs; its
interval is a jackknife over seeds (each seed left out in turn, the splits redrawn from the rest), since
splits of one set of seeds are not independent. Welch's t (the unpaired path) is measured beside it.

The positive control is the same row with a deliberately harmful change (by default a share of the
rewards replaced by coin flips), trained with the same seeds. Each split draws ``half`` seeds and tests the
control against the row on those seeds with the paired t at a primary's share of the level in the spec's
design (α/m); the observed detection rate is the share of splits that call the control's declared direction.
The predicted rate is the paired t's power at that share and ``half`` seeds for the effect and the spread
measured on all seeds (noncentral t). Both carry a jackknife interval over seeds.

Where the spec declares a group-sequential design, both controls are also judged by it, on halves of half the
row's seeds less one, so that the jackknife's replicates split too (its looks capped there, 4 and 5 seeds of 12): an A/A split is a false positive when its primary
is called up or down at the level α (one primary's whole family: the strictest case), and the control's draws are
detections where it is called in its direction at α/m; the predicted detection rate is the same procedure's on
normal per-seed differences with the effect and spread measured on all seeds.

Command line: ``python -m reports.calibration --spec dapo_table1 --row naive_grpo --runs results/runs
--seeds 12 --half 3 [--control-runs results/controls --direction down] --out results/reports``.
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
from algos.campaign.study_design import capped_looks
from algos.config.presets import ConfigError
from reports.analysis.endpoints import step_factor, window_mean
from reports.analysis.runs import FinishedRun, finished_runs
from reports.render.cells import MINUS
from reports.render.figures import DPI, png_bytes
from reports.render.pages import Page, run_report, write_page
from reports.statistics.comparisons import LEVEL, paired_t, welch_t
from reports.statistics.multiplicity import ADJUSTMENTS, adjust, adjusted_p_values, gated_graph
from reports.statistics.sequential import AGREE, DISAGREE, SequentialDesign, decide_paths, sequential_design

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


def family_adjusted(p_values: Sequence[float | None], rule: str, method: str = "holm") -> list[float | None]:
    """Adjusted p-values of one A/A family, the first being the primary: ``gated`` (the graph of
    :func:`reports.statistics.multiplicity.gated_graph`, the rest gated behind the first), ``separate`` (the first alone,
    the rest one family adjusted by ``method``) or ``one`` (all one family adjusted by ``method``). An undefined
    p-value stays None and passes nothing on."""
    if rule == "gated":
        graph = gated_graph([0], [list(range(1, len(p_values)))])
        adjusted = adjusted_p_values([1.0 if p is None else p for p in p_values], graph)
        return [None if p is None else a for p, a in zip(p_values, adjusted, strict=True)]
    if rule == "one":
        return adjust(p_values, method)
    return adjust(p_values[:1], method) + adjust(p_values[1:], method)


def false_positive_rates(
    values: np.ndarray,
    half: int,
    splits: int,
    seed: int,
    test: Callable,
    rule: str = "gated",
    method: str = "holm",
    level: float = LEVEL,
) -> tuple[float, np.ndarray]:
    """Over ``splits`` random A/A splits of the rows of ``values`` (seeds, quantities; the first quantity the
    primary): the share whose adjusted p-values (:func:`family_adjusted`) call any direction, and each
    quantity's share of raw p ≤ level."""
    _check_half(values, 2 * half)
    rng = np.random.default_rng(seed)
    family_hits, raw_hits = 0, np.zeros(values.shape[1])
    for _ in range(splits):
        order = rng.permutation(values.shape[0])
        first, second = values[order[:half]], values[order[half : 2 * half]]
        p_values = [
            test(first[:, q], second[:, q]) if np.all(np.isfinite(values[:, q])) else None
            for q in range(values.shape[1])
        ]
        family_hits += any(p is not None and p <= level for p in family_adjusted(p_values, rule, method))
        raw_hits += [p is not None and p <= level for p in p_values]
    return family_hits / splits, raw_hits / splits


def detection_rate(
    base: np.ndarray, control: np.ndarray, half: int, splits: int, seed: int, share: float, direction: float
) -> float:
    """Share of ``splits`` random draws of ``half`` seeds on which the paired t of ``control`` against ``base``
    (both (seeds,), seed-aligned) has p ≤ ``share`` with Δ on the side of ``direction`` (+1 up, −1 down)."""
    _check_half(base[:, None], half)
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(splits):
        chosen = rng.permutation(base.size)[:half]
        comparison = paired_t(control[chosen], base[chosen], distribution_free=False)
        hits += (
            comparison.p_value is not None
            and comparison.p_value <= share
            and np.sign(comparison.delta.mean) == direction
        )
    return hits / splits


def predicted_detection(base: np.ndarray, control: np.ndarray, half: int, share: float, direction: float) -> float:
    """The paired t's power at ``half`` seeds and level ``share`` to call ``direction``, for the mean and sd of
    the per-seed differences over all seeds: P(T beyond the critical value on that side), T noncentral t with
    ``half`` − 1 degrees of freedom and noncentrality Δ/(sd/√half)."""
    differences = control - base
    sd = float(np.std(differences, ddof=1))
    noncentrality = (
        float(np.mean(differences)) / (sd / math.sqrt(half)) if sd > 0 else math.inf * np.sign(np.mean(differences))
    )
    critical = stats.t.ppf(1 - share / 2, half - 1)
    power = (
        stats.nct.sf(critical, half - 1, noncentrality)
        if direction > 0
        else stats.nct.cdf(-critical, half - 1, noncentrality)
    )
    # scipy's noncentral t is nan far out in its tails, where the call is certain either way
    return float(power) if math.isfinite(power) else float(np.sign(noncentrality) == direction)


def sequential_split_design(spec: AblationSpec, half: int, level: float) -> SequentialDesign:
    """The spec's sequential design on ``half`` seeds a side: its looks capped at ``half`` (one look at ``half`` where
    that is below the first), its spending, and the primaries' margin (the design's, else its smallest effect)."""
    declared = spec.design.sequential
    margin = spec.design.margin or spec.design.smallest_effect
    looks = capped_looks(declared.looks, min(half, declared.looks[-1])) if half >= declared.looks[0] else (half,)
    return sequential_design(looks, level, margin, declared.spending)


def sequential_false_positive_rate(primary: np.ndarray, splits: int, seed: int, design: SequentialDesign) -> float:
    """Share of ``splits`` random A/A splits of ``primary`` (seeds,) into halves of the design's last look whose
    sequential decision calls a direction."""
    half = design.looks[-1]
    _check_half(primary[:, None], 2 * half)
    rng = np.random.default_rng(seed)
    orders = np.stack([rng.permutation(primary.size)[: 2 * half] for _ in range(splits)])  # (splits, 2 half)
    differences = primary[orders[:, :half]] - primary[orders[:, half:]]  # (splits, half)
    outcome, _ = decide_paths(differences, design, +1.0)
    return float(np.mean(np.isin(outcome, (AGREE, DISAGREE))))


def sequential_detection_rate(
    base: np.ndarray, control: np.ndarray, splits: int, seed: int, design: SequentialDesign, direction: float
) -> float:
    """Share of ``splits`` random draws of the design's last look's seeds on which the sequential decision calls
    ``control`` against ``base`` (both (seeds,), seed-aligned) in ``direction``."""
    half = design.looks[-1]
    _check_half(base[:, None], half)
    rng = np.random.default_rng(seed)
    chosen = np.stack([rng.permutation(base.size)[:half] for _ in range(splits)])  # (splits, half)
    outcome, _ = decide_paths(control[chosen] - base[chosen], design, direction)
    return float(np.mean(outcome == AGREE))


def predicted_sequential_detection(
    base: np.ndarray, control: np.ndarray, design: SequentialDesign, direction: float, draws: int = 20_000
) -> float:
    """The sequential decision's rate of calling ``direction`` on normal per-seed differences with the mean and sd
    measured on all seeds (a fixed simulation seed, so the prediction is reproducible)."""
    differences = control - base
    rng = np.random.default_rng(0)
    simulated = rng.normal(np.mean(differences), np.std(differences, ddof=1), (draws, design.looks[-1]))
    outcome, _ = decide_paths(simulated, design, direction)
    return float(np.mean(outcome == AGREE))


def jackknife(
    statistic: Callable[[np.ndarray, int], float], values: np.ndarray, seed: int
) -> tuple[float, float, float]:
    """``statistic(values, seed)`` with a 95 % jackknife interval over the rows (seeds) of ``values``:
    (estimate, low, high), clipped to [0, 1]; each left-out replicate draws with its own seed."""
    estimate = statistic(values, seed)
    seeds = values.shape[0]
    left_out = np.asarray([statistic(np.delete(values, i, axis=0), seed + 1 + i) for i in range(seeds)])
    spread = math.sqrt((seeds - 1) / seeds * float(np.sum((left_out - left_out.mean()) ** 2)))
    half_width = stats.t.ppf(0.975, seeds - 1) * spread
    return estimate, max(0.0, estimate - half_width), min(1.0, estimate + half_width)


def jackknife_interval(
    values: np.ndarray, half: int, splits: int, seed: int, test: Callable, rule: str = "gated", method: str = "holm"
) -> tuple[float, float, float]:
    """The family-wise A/A rate with a 95 % jackknife interval over seeds: (rate, low, high)."""
    return jackknife(lambda v, s: false_positive_rates(v, half, splits, s, test, rule, method)[0], values, seed)


def _check_half(values: np.ndarray, needed: int) -> None:
    if values.shape[0] < needed:
        raise ValueError(f"a split needs at least {needed} seeds, got {values.shape[0]}")


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


def control_lines(
    spec: AblationSpec, base: np.ndarray, control: np.ndarray, half: int, splits: int, direction: float
) -> tuple[str, dict[str, object]]:
    """The positive control's sentence and numbers: the measured effect, and the predicted and observed detection
    rates at ``half`` seeds and, where the seeds allow, twice as many."""
    share = LEVEL / max(1, sum(row.primary is not None for row in spec.rows))
    pair = np.column_stack([base, control])
    differences = control - base
    numbers: dict[str, object] = {
        "effect": float(np.mean(differences)),
        "sd": float(np.std(differences, ddof=1)),
        "share of the level": share,
    }
    rates = []
    for size in [n for n in (half, 2 * half) if n < base.size]:
        observed = jackknife(
            lambda v, s, n=size: detection_rate(v[:, 0], v[:, 1], n, splits, s, share, direction), pair, 0
        )
        predicted = jackknife(lambda v, _, n=size: predicted_detection(v[:, 0], v[:, 1], n, share, direction), pair, 0)
        numbers[f"{size} seeds"] = {"predicted": predicted, "observed": observed}
        rates.append(f"at {size} seeds predicted {_interval(predicted)}, observed {_interval(observed)}")
    effect = f"{numbers['effect']:+.4g}".replace("-", MINUS)
    sentence = (
        f"Positive control over {base.size} seeds: Δ = {effect} (sd of the per-seed differences "
        f"{numbers['sd']:.3g}). The share of draws in which the paired t at level {share:.3g} (α/m of the spec's "
        f"primaries) calls it {'up' if direction > 0 else 'down'}: "
        + "; ".join(rates)
        + f" ({splits} draws each; 95 % jackknife intervals over seeds)."
    )
    return sentence, numbers


def sequential_lines(
    spec: AblationSpec,
    primary: np.ndarray,
    splits: int,
    direction: float,
    base: np.ndarray | None = None,
    control: np.ndarray | None = None,
) -> tuple[str, dict[str, object]]:
    """The controls judged by the spec's sequential design (see the module's docstring): a sentence and its numbers."""
    half = (primary.size - 1) // 2  # two halves even with one seed left out (the jackknife)
    null_design = sequential_split_design(spec, half, LEVEL)
    rate = jackknife(lambda v, s: sequential_false_positive_rate(v[:, 0], splits, s, null_design), primary[:, None], 0)
    numbers: dict[str, object] = {"looks": list(null_design.looks), "spending": null_design.spending, "a/a": rate}
    sentence = (
        f"Under the spec's sequential design ({null_design.spending.replace('_', '-')} spending, looks at "
        f"{', '.join(map(str, null_design.looks))} seeds a side, margin ±{null_design.margin:g}): the A/A rate of a "
        f"direction called at level {LEVEL} is {_interval(rate)}"
    )
    if base is not None and control is not None:
        share = LEVEL / max(1, sum(row.primary is not None for row in spec.rows))
        design = sequential_split_design(spec, min(half, base.size), share)
        pair = np.column_stack([base, control])
        observed = jackknife(
            lambda v, s: sequential_detection_rate(v[:, 0], v[:, 1], splits, s, design, direction), pair, 0
        )
        predicted = jackknife(lambda v, _: predicted_sequential_detection(v[:, 0], v[:, 1], design, direction), pair, 0)
        numbers["positive control"] = {"share of the level": share, "predicted": predicted, "observed": observed}
        sentence += (
            f"; the positive control is called {'up' if direction > 0 else 'down'} at level {share:.3g} in "
            f"{_interval(observed)} of draws, predicted {_interval(predicted)}"
        )
    return sentence + f" ({splits} draws each; 95 % jackknife intervals over seeds).", numbers


def _interval(estimate: tuple[float, float, float]) -> str:
    return f"{estimate[0]:.3f} [{estimate[1]:.3f}, {estimate[2]:.3f}]"


def write_calibration(
    spec_name: str,
    row_id: str,
    runs_dir: Path,
    out_dir: Path,
    seeds: int,
    half: int,
    splits: int,
    method: str,
    control_dir: Path | None = None,
    direction: float = -1.0,
) -> tuple[Path, Path]:
    """Run the A/A calibration (and, with ``control_dir``, the positive control) and write ``calibration.md``
    and ``.html`` into ``out_dir``."""
    spec = read_spec(spec_name)
    row = spec.row(row_id)
    runs = finished_runs(runs_dir, spec.name, row.id, seeds)
    if len(runs) < 2 * half:
        raise FileNotFoundError(
            f"{spec.name}/{row.id} has {len(runs)} finished seeds of {seeds}; the calibration needs {2 * half}"
        )
    rule = spec.design.secondary if spec.design else "separate"
    values = seed_values(spec, row.id, runs)
    names = [name for name, _ in quantities(spec)]
    headline, cells, rates = [], [], []
    raw_rates = {}
    for label, test in TESTS.items():
        _, raw_rates[label] = false_positive_rates(values, half, splits, 0, test, rule, method)
        if rule == "separate":  # two families, each at the level: each family's rate against it
            first = jackknife_interval(values[:, :1], half, splits, 0, test, "one", method)
            rest = jackknife_interval(values[:, 1:], half, splits, 0, test, "one", method)
            headline.append(f"{label}: primary {_interval(first)}, secondaries {_interval(rest)}")
            rates.extend([first[0], rest[0]])
        else:
            rate, low, high = jackknife_interval(values, half, splits, 0, test, rule, method)
            headline.append(f"{label}: {rate:.3f} [{low:.3f}, {high:.3f}]")
            rates.append(rate)
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
    verdict = "at or under" if all(rate <= LEVEL for rate in rates) else "ABOVE"
    control_sentence, control_numbers, control_runs = "", {}, []
    if control_dir is not None:
        control_runs = finished_runs(control_dir, spec.name, row.id, seeds)
        shared = sorted({run.seed for run in runs} & {run.seed for run in control_runs})
        if len(shared) < max(half, 3):
            raise FileNotFoundError(
                f"the positive control has {len(shared)} seeds shared with {spec.name}/{row.id}; it needs {max(half, 3)}"
            )
        base = np.asarray([run.final[spec.metric] for run in runs if run.seed in shared])
        control = np.asarray([run.final[spec.metric] for run in control_runs if run.seed in shared])
        control_sentence, control_numbers = control_lines(spec, base, control, half, splits, direction)
    sequential_sentence, sequential_numbers = "", {}
    if spec.design is not None and spec.design.sequential is not None:
        sequential_sentence, sequential_numbers = sequential_lines(
            spec, values[:, 0], splits, direction, *((base, control) if control_dir is not None else ())
        )
    page = Page(
        title=f"Calibration on real runs: {row.label} of {spec.title}",
        introduction=(
            f"{len(runs)} seeds of one row, {splits} random splits into two labelled halves of {half} seeds, each "
            f"judged by the report's procedure over {len(names)} quantities ({rule}: the table's metric primary, the "
            f"rest secondary{'; each family at the level on its own' if rule == 'separate' else ''}). A/A family-wise "
            f"false-positive rate (level {LEVEL}), 95 % jackknife interval over seeds — "
            + "; ".join(headline)
            + f". Measured rate {verdict} the level. {control_sentence} "
            f"{sequential_sentence}"
        ).strip(),
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
            "secondary": rule,
            "adjustment": method,
            **(
                {"positive control": {**control_numbers, "runs": [str(run.directory) for run in control_runs]}}
                if control_dir is not None
                else {}
            ),
            **({"sequential design": sequential_numbers} if sequential_numbers else {}),
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
    parser.add_argument("--adjust", choices=ADJUSTMENTS, default="holm", help="a separate family's adjustment")
    parser.add_argument("--control-runs", type=Path, help="the positive control's <spec>/<row>/seed<n>/, same seeds")
    parser.add_argument("--direction", choices=["up", "down"], default="down", help="the control's known direction")
    parser.add_argument("--out", type=Path, default=Path("results/reports"), help="directory for the report")
    args = parser.parse_args(argv)
    return run_report(
        lambda: write_calibration(
            args.spec,
            args.row,
            args.runs,
            args.out,
            args.seeds,
            args.half,
            args.splits,
            args.adjust,
            args.control_runs,
            1.0 if args.direction == "up" else -1.0,
        ),
        (ConfigError, ValueError, FileNotFoundError),
    )


if __name__ == "__main__":
    sys.exit(main())
