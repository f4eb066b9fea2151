"""What scoring each benchmark takes: its problems, how a response is judged, and its standard protocol.

Protocol defaults follow the papers being reproduced: greedy decoding, except where a benchmark's
entry in :data:`~eval.benchmarks.loaders.BENCHMARKS` departs from it (AIME: avg@32, as DAPO and
VAPO). The prompt asks for a boxed final answer (the Qwen2.5-Math convention); HumanEval prompts are
code to continue, and the built-in task's prompts are its worksheets. The benchmarks are the
built-in task and one suite per entry of ``BENCHMARKS``, so a benchmark is declared there alone.
"""

from __future__ import annotations

import os

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from eval.benchmarks.graders import GRADERS, extract_final_answer
from eval.benchmarks.loaders import BENCHMARKS, BenchmarkSpec, load_benchmark
from eval.benchmarks.metrics import avg_at_k, interval_over_problems, maj_at_k, mean_pass_at_k
from eval.tasks.records import Problem

BOXED_TEMPLATE = "{problem}\nPlease reason step by step, and put your final answer within \\boxed{}."
RAW_TEMPLATE = "{problem}"
MATH_BUDGET = 4096
"""Default generation budget of the math benchmarks (DAPO trains at 20480; 4096 covers Qwen2.5-Math's context)."""

Records = list[dict[str, Any]]
"""One row per problem: id, reference, greedy {response, answer, correct}, samples [{...}, ...]."""


@dataclass(frozen=True)
class Suite:
    """A benchmark's loader and judge.

    load(limit, data_dir) -> problems (data_dir: the benchmark folder, None: ``$RL_BENCHMARKS_DIR``). judge(problems, responses) -> (extracted answer or None, correct) per response.
    extractor, grader: names written into the protocol. protocol_defaults: Protocol fields.
    votes: whether maj@k applies (the responses commit to comparable answers).
    sandbox: for code benchmarks, how the machine isolates the code it runs (read when scoring,
    written into the protocol).
    """

    load: Callable[[int | None, str | os.PathLike[str] | None], list[Problem]]
    judge: Callable[[Sequence[Problem], Sequence[str]], list[tuple[str | None, bool]]]
    extractor: str
    grader: str
    protocol_defaults: dict[str, Any] = field(default_factory=dict)
    votes: bool = True
    sandbox: Callable[[], dict[str, Any]] | None = None

    def score(self, problems: Sequence[Problem], greedy: Sequence[str], sampled: Sequence[Sequence[str]]) -> Records:
        """Per-problem records of the greedy response and the sampled ones, each with its answer and verdict."""
        flat = [response for group in sampled for response in group]
        judged_greedy = self.judge(problems, greedy)
        judged_samples = self.judge([p for p, group in zip(problems, sampled, strict=True) for _ in group], flat)
        records, start = [], 0
        for problem, response, (answer, correct), group in zip(problems, greedy, judged_greedy, sampled, strict=True):
            verdicts = judged_samples[start : start + len(group)]
            start += len(group)
            records.append(
                {
                    "id": problem.id,
                    "reference": problem.answer,
                    "greedy": {"response": response, "answer": answer, "correct": correct},
                    "samples": [
                        {"response": text, "answer": a, "correct": c}
                        for text, (a, c) in zip(group, verdicts, strict=True)
                    ],
                }
            )
        return records

    def metrics(self, records: Records, samples: int) -> dict[str, float]:
        """greedy pass@1, and with samples: avg@k, unbiased pass@j for j = 1, 2, 4, ..., k, maj@k; greedy pass@1
        and avg@k with their 95 % intervals over problems (``ci95_low/<metric>``, ``ci95_high/<metric>``).
        Where responses state answers, the share of responses without one (``greedy_unanswered``,
        ``samples_unanswered``): counted among the wrong ones above, and apart here."""
        greedy = [float(r["greedy"]["correct"]) for r in records]
        result: dict[str, float] = {"problems": len(records), "greedy_pass@1": sum(greedy) / len(records)}
        result["ci95_low/greedy_pass@1"], result["ci95_high/greedy_pass@1"] = interval_over_problems(greedy)
        if self.votes:
            result["greedy_unanswered"] = sum(r["greedy"]["answer"] is None for r in records) / len(records)
        if samples:
            correct = [[s["correct"] for s in r["samples"]] for r in records]
            result[f"avg@{samples}"] = avg_at_k(correct)
            rates = [sum(verdicts) / len(verdicts) for verdicts in correct]
            result[f"ci95_low/avg@{samples}"], result[f"ci95_high/avg@{samples}"] = interval_over_problems(rates)
            for k in sorted({2**i for i in range(samples.bit_length()) if 2**i <= samples} | {samples}):
                result[f"pass@{k}"] = mean_pass_at_k(correct, k)
            if self.votes:
                answers = [[s["answer"] for s in r["samples"]] for r in records]
                result[f"maj@{samples}"] = maj_at_k(answers, correct)
                result["samples_unanswered"] = sum(a is None for group in answers for a in group) / (
                    len(records) * samples
                )
        return result


def answer_judge(grade: Callable[[str, str], bool], extract: Callable[[str], str | None]):
    """A judge that extracts each response's final answer and grades the response against the reference."""

    def judge(problems: Sequence[Problem], texts: Sequence[str]) -> list[tuple[str | None, bool]]:
        return [(extract(text), grade(text, p.answer)) for p, text in zip(problems, texts, strict=True)]

    return judge


def benchmark_verifier(name: str) -> Callable[[str, str], bool]:
    """The grader of benchmark ``name``'s answers: what its evaluation judges with, and what a run training on its
    problems computes the reward with (``train(cfg, out, problems=..., verifier=benchmark_verifier(name))``)."""
    spec = BENCHMARKS[name]
    if spec.grader not in GRADERS:
        raise ValueError(f"benchmark '{name}' is graded by running code, not by a stated answer")
    return GRADERS[spec.grader]


def _math_suite(name: str, spec: BenchmarkSpec) -> Suite:
    """A benchmark of stated answers: the boxed-answer prompt, the final answer graded by the spec's grader kind."""
    grade = benchmark_verifier(name)
    return Suite(
        load=lambda limit, data_dir=None: load_benchmark(name, data_dir, limit),
        judge=answer_judge(grade, extract_final_answer),
        extractor="eval.benchmarks.graders.extract_final_answer (last statement of an answer, else last number)",
        grader=f"eval.benchmarks.graders.{grade.__name__}",
        protocol_defaults={
            "samples": 0,
            "temperature": 1.0,
            "top_p": 1.0,
            "max_new_tokens": MATH_BUDGET,
            "prompt_template": BOXED_TEMPLATE,
            **spec.protocol,
        },
    )


def _code_suite(name: str, spec: BenchmarkSpec) -> Suite:
    """A code benchmark (HumanEval): the response continues the prompt's code and must pass the tests."""

    def judge(problems: Sequence[Problem], texts: Sequence[str]) -> list[tuple[str | None, bool]]:
        from eval.benchmarks.humaneval import grade_many

        return [(None, passed) for passed in grade_many(list(zip(problems, texts, strict=True)))]

    def sandbox() -> dict[str, Any]:
        from eval.sandbox.host import detect_isolation

        isolation = detect_isolation()
        return {"isolation": isolation.kind, "description": isolation.description}

    return Suite(
        load=lambda limit, data_dir=None: load_benchmark(name, data_dir, limit),
        judge=judge,
        extractor="none: the response continues the prompt's code",
        grader="eval.benchmarks.humaneval.grade_many (tests run in the grader, the completion in eval.sandbox.host)",
        protocol_defaults={
            "samples": 0,
            "temperature": 1.0,
            "top_p": 1.0,
            "max_new_tokens": 512,
            "prompt_template": RAW_TEMPLATE,
            **spec.protocol,
        },
        votes=False,
        sandbox=sandbox,
    )


def _chain_suite() -> Suite:
    from eval.tasks.synthetic import ChainTask, extract_answer, grade

    return Suite(
        load=lambda limit, data_dir=None: ChainTask().problems("test", limit or 256, seed=0),
        judge=answer_judge(grade, extract_answer),
        extractor="eval.tasks.synthetic.extract_answer (integer after a trailing 'answer')",
        grader="eval.tasks.synthetic.grade",
        protocol_defaults={
            "samples": 0,
            "temperature": 1.0,
            "top_p": 1.0,
            "max_new_tokens": 32,
            "prompt_template": RAW_TEMPLATE,
        },
    )


def headline_metric(metrics: dict[str, float]) -> str:
    """The score a benchmark is quoted by: avg@k when responses were sampled (AIME's avg@32), else greedy pass@1."""
    sampled = [key for key in metrics if key.startswith("avg@")]
    return sampled[0] if sampled else "greedy_pass@1"


def _suite(name: str, spec: BenchmarkSpec) -> Suite:
    """A registered benchmark's suite: code runs its tests, any other grader kind judges a stated answer."""
    return _code_suite(name, spec) if spec.grader == "code" else _math_suite(name, spec)


SUITES: dict[str, Suite] = {
    "chain": _chain_suite(),
    **{name: _suite(name, spec) for name, spec in BENCHMARKS.items()},
}
"""Benchmark name -> its suite: ``chain``, the built-in task's test split (256 problems unless limited), then
one suite per entry of :data:`~eval.benchmarks.loaders.BENCHMARKS`, in its order."""
