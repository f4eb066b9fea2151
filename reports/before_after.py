"""Held-out accuracy before and after training, over the seeds of one configuration.

Each run's base evaluation (step 0) and final evaluation come from its ``final_metrics.json``. Per run
the table gives both accuracies with their 95 % Wilson intervals over the held-out problems
(:func:`eval.benchmarks.metrics.interval_over_problems`), and the change; then the mean change over
runs with its paired-t interval and p-values (:func:`reports.statistics.comparisons.paired_t`, the seeds as the
sample: with two seeds it has one degree of freedom and is wide). Nothing is rerun.

Command line::

    python -m reports.before_after results/runs/smollm2/grpo/seed0 results/runs/smollm2/grpo/seed1
        [--metric eval/test/accuracy_greedy] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from algos.config.presets import load_config
from algos.trainer import run_files
from eval.benchmarks.metrics import interval_over_problems
from reports.render.cells import format_p
from reports.statistics.comparisons import paired_t


def held_out_problems(run: Path) -> int:
    """How many problems the run's final evaluation scored (its config's final_eval_problems or eval_problems)."""
    cfg = load_config(files=[run / run_files.CONFIG_FILE])
    return cfg.run.final_eval_problems or cfg.run.eval_problems


def before_after(runs: Sequence[Path], metric: str) -> dict:
    """Per run (base, final, change, intervals over problems) and the mean change over runs with its paired t."""
    rows = []
    for run in runs:
        path = run / run_files.FINAL_FILE
        if not path.is_file():
            raise FileNotFoundError(f"{path} is missing: the run has not finished")
        final = json.loads(path.read_text())
        if metric not in final or f"base/{metric}" not in final:
            keys = sorted(key for key in final if key.startswith("eval/"))
            raise ValueError(f"{path} has no {metric} (and base/{metric}); its metrics: {', '.join(keys)}")
        problems = held_out_problems(run)
        before, after = final[f"base/{metric}"], final[metric]
        rows.append(
            {
                "run": str(run),
                "problems": problems,
                "before": before,
                "before_ci95": _interval(before, problems),
                "after": after,
                "after_ci95": _interval(after, problems),
                "change": after - before,
                "steps": final["steps"],
                "train_seconds": final.get("perf/train_seconds_total"),
                "peak_memory_mb": final.get("perf/peak_memory_mb"),
            }
        )
    comparison = paired_t([row["after"] for row in rows], [row["before"] for row in rows])
    return {
        "metric": metric,
        "runs": rows,
        "mean_change": comparison.delta.mean,
        "mean_change_ci95": [comparison.delta.ci_low, comparison.delta.ci_high],
        "p_value": comparison.p_value,
        "exact_p": comparison.exact_p,
        "exact_p_floor": comparison.exact_p_floor,
    }


def _interval(accuracy: float, problems: int) -> tuple[float, float]:
    """The Wilson interval of an accuracy over ``problems`` 0/1 verdicts."""
    solved = round(accuracy * problems)
    return interval_over_problems([1.0] * solved + [0.0] * (problems - solved))


def markdown(result: dict) -> str:
    """The result as a Markdown table and a summary line (percent)."""
    lines = [
        f"| run | {result['metric']} before [95 % CI] | after [95 % CI] | change | steps |",
        "|---|---|---|---|---|",
    ]
    for row in result["runs"]:
        lines.append(
            f"| {row['run']} | {_percent(row['before'], row['before_ci95'])} | {_percent(row['after'], row['after_ci95'])} "
            f"| {100 * row['change']:+.1f} | {row['steps']} |"
        )
    low, high = result["mean_change_ci95"]
    interval = f"[{100 * low:+.1f}, {100 * high:+.1f}]" if low is not None else "(no interval with one run)"
    lines.append(
        f"\nMean change over {len(result['runs'])} run{'s' if len(result['runs']) > 1 else ''}: "
        f"{100 * result['mean_change']:+.1f} points, 95 % paired-t "
        f"interval {interval}, p = {format_p(result['p_value'])} (sign-flip p = {format_p(result['exact_p'])}, "
        f"smallest possible {format_p(result['exact_p_floor'])})."
    )
    return "\n".join(lines)


def _percent(value: float, interval: Sequence[float]) -> str:
    return f"{100 * value:.1f} [{100 * interval[0]:.1f}, {100 * interval[1]:.1f}]"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reports.before_after", description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="run directories (the seeds of one configuration)")
    parser.add_argument("--metric", default="eval/test/accuracy_greedy", help="held-out metric of final_metrics.json")
    parser.add_argument("--json", type=Path, help="also write the result here")
    args = parser.parse_args(argv)
    try:
        result = before_after(args.runs, args.metric)
    except (FileNotFoundError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(markdown(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
