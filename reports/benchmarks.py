"""Benchmark scores, each beside the protocol it was scored under: a Markdown and a self-contained HTML page.

Reads what :mod:`eval.run.evaluate` wrote for every (model, benchmark), ``<eval>/<model>/<benchmark>/``
``metrics.json`` and ``protocol.json``, and reruns nothing. The table gives greedy pass@1, avg@k,
the largest unbiased pass@k and maj@k with the decoding that produced them (temperature, top-p, k,
generation budget, prompt template, engine); the figure compares each benchmark's headline score
across models; the provenance lists every protocol file in full (extractor, grader, package
versions, hardware, git commit, timings). The scores are read by :mod:`reports.analysis.scores`, which the
ablation report's benchmark columns read too.

Command line: ``python -m reports.benchmarks --eval results/eval --models base_model --benchmarks chain aime24``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from reports.analysis.scores import Score, protocol_summary, read_score
from reports.render.figures import DPI, FIGURE_SIZE_IN, png_bytes
from reports.render.pages import Page, run_report, write_page

HEADER = [
    "model",
    "benchmark",
    "greedy pass@1 [95 % CI]",
    "avg@k [95 % CI]",
    "pass@k (largest k)",
    "maj@k",
    "no answer (greedy; sampled)",
    "protocol",
    "seconds (per problem; tokens/s)",
]


def table_cells(scores: Mapping[tuple[str, str], Score]) -> list[list[str]]:
    """One row per (model, benchmark): the metrics in percent (greedy pass@1 and avg@k with their intervals over
    problems where the scores have them), the protocol line and the scoring time."""
    cells = []
    for (model, benchmark), score in scores.items():
        metrics = score.metrics
        cells.append(
            [
                model,
                benchmark,
                _percent(metrics["greedy_pass@1"]) + _interval(metrics, "greedy_pass@1"),
                _named_percent(metrics, "avg@", with_interval=True),
                _named_percent(metrics, "pass@", largest=True),
                _named_percent(metrics, "maj@"),
                _unanswered(metrics),
                protocol_summary(score.protocol),
                _seconds(score.protocol),
            ]
        )
    return cells


def _percent(value: float) -> str:
    return f"{100 * value:.1f}"


def _named_percent(
    metrics: Mapping[str, float], prefix: str, largest: bool = False, with_interval: bool = False
) -> str:
    """``"<value> (<name>)"`` of the metric starting with ``prefix`` (the largest k with ``largest``), else —;
    ``with_interval`` adds its interval where the scores have one."""
    named = sorted((int(key.removeprefix(prefix)), key) for key in metrics if key.startswith(prefix))
    if not named:
        return "—"
    _, key = named[-1] if largest else named[0]
    return f"{_percent(metrics[key])}{_interval(metrics, key) if with_interval else ''} ({key})"


def _interval(metrics: Mapping[str, float], name: str) -> str:
    """`` [low, high]`` in percent, or nothing for scores written without intervals."""
    if f"ci95_low/{name}" not in metrics:
        return ""
    return f" [{_percent(metrics[f'ci95_low/{name}'])}, {_percent(metrics[f'ci95_high/{name}'])}]"


def _unanswered(metrics: Mapping[str, float]) -> str:
    """The shares of responses that state no answer (wrong, but counted apart), where they were recorded."""
    shares = [_percent(metrics[key]) for key in ("greedy_unanswered", "samples_unanswered") if key in metrics]
    return "; ".join(shares) or "—"


def _seconds(protocol: Mapping[str, Any]) -> str:
    """Total scoring seconds, with seconds per problem and generated tokens per second where recorded."""
    total = f"{protocol['seconds']['total']:.1f}"
    speed = protocol.get("throughput")
    return f"{total} ({speed['seconds_per_problem']:.2f}; {speed['tokens_per_second']:.0f})" if speed else total


def score_bars(scores: Mapping[tuple[str, str], Score]) -> bytes:
    """PNG of each benchmark's headline score (x) with one bar per model."""
    models = list(dict.fromkeys(model for model, _ in scores))
    benchmarks = list(dict.fromkeys(benchmark for _, benchmark in scores))
    figure = Figure(figsize=FIGURE_SIZE_IN, dpi=DPI, layout="constrained")
    axes = figure.add_subplot()
    width = 0.8 / len(models)
    positions = np.arange(len(benchmarks))
    for index, model in enumerate(models):
        values = [100 * scores[model, b].headline[1] if (model, b) in scores else np.nan for b in benchmarks]
        axes.bar(positions + index * width, values, width, label=model)
    axes.set_xticks(positions + width * (len(models) - 1) / 2, benchmarks, fontsize="small")
    axes.set_ylabel("avg@k if sampled, else greedy pass@1 (%)", fontsize="small")
    axes.set_ylim(0, 100)
    axes.set_title("headline score per benchmark")
    axes.grid(alpha=0.3, axis="y")
    figure.legend(loc="outside right upper", fontsize="small", frameon=False)
    return png_bytes(figure)


def collect(eval_dir: Path, models: Sequence[str], benchmarks: Sequence[str]) -> dict[tuple[str, str], Score]:
    """Scores of every (model, benchmark), model-major."""
    return {(model, b): read_score(eval_dir / model / b) for model in models for b in benchmarks}


def write_benchmark_report(
    eval_dir: Path, models: Sequence[str], benchmarks: Sequence[str], out_dir: Path
) -> tuple[Path, Path]:
    """Write ``benchmarks.md`` (figure in ``benchmarks_figures/``) and ``benchmarks.html`` into ``out_dir``."""
    scores = collect(eval_dir, models, benchmarks)
    page = Page(
        title="Benchmark scores",
        introduction=(
            "Each score beside the protocol that produced it; avg@k is the mean pass@1 over k samples, "
            "pass@k the unbiased estimator, maj@k majority voting over the k samples."
        ),
        header=HEADER,
        cells=table_cells(scores),
        note="Scores in percent of the problems scored; per-response records are in records.jsonl beside each score.",
        figures=[("Headline score per benchmark", score_bars(scores))],
        origin={f"{model}/{benchmark}": score.protocol for (model, benchmark), score in scores.items()},
    )
    return write_page(page, out_dir, "benchmarks")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reports.benchmarks", description=__doc__.split("\n\n")[0])
    parser.add_argument("--eval", type=Path, default=Path("results/eval"), help="directory of <model>/<benchmark>/")
    parser.add_argument("--models", nargs="+", required=True, help="model names under --eval")
    parser.add_argument("--benchmarks", nargs="+", required=True, help="benchmark names")
    parser.add_argument("--out", type=Path, default=Path("results/reports"), help="directory for the report")
    args = parser.parse_args(argv)
    return run_report(
        lambda: write_benchmark_report(args.eval, args.models, args.benchmarks, args.out),
        (FileNotFoundError, KeyError, ValueError),
    )


if __name__ == "__main__":
    sys.exit(main())
