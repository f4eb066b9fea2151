"""HumanEval loads as records, its canonical solutions pass, stubs and hostile completions fail, and a
training verifier refuses the fallback sandbox unless told otherwise."""

import time

import pytest

from eval.benchmarks.humaneval import (
    grade_humaneval,
    grade_many,
    humaneval_verifier,
    load_humaneval,
    run_humaneval,
    run_many,
)
from eval.benchmarks.suites import SUITES
from eval.sandbox.host import Isolation, SandboxLimits, WeakIsolationError
from eval.tasks.records import Problem

FAST = SandboxLimits(timeout_s=2.0)  # for completions expected to fail: an endless loop costs 2 s, not 10


@pytest.fixture(scope="module")
def problems():
    return load_humaneval()


def test_loads_every_problem_as_a_record(problems):
    assert len(problems) == 164
    assert all(isinstance(problem, Problem) for problem in problems)
    assert [problem.id for problem in problems] == [f"HumanEval/{index}" for index in range(164)]
    first = problems[0]
    assert first.answer == "HumanEval/0"
    assert first.metadata["entry_point"] == "has_close_elements"
    assert "def check(candidate)" in first.metadata["test"]
    assert f"def {first.metadata['entry_point']}(" in first.prompt
    assert first.solution.startswith("    for idx, elem in enumerate(numbers):")


def test_tests_call_the_completion_by_either_name(problems):
    """HumanEval/33's tests compare ``candidate`` with ``sort_third`` itself: both are the completion's function."""
    problem = problems[33]
    assert "sort_third(" in problem.metadata["test"]
    assert run_humaneval(problem, problem.solution).passed
    assert run_humaneval(problem, "    return l\n").status == "failed"


def test_prompt_helpers_come_from_the_prompt_not_the_completion(problems):
    """HumanEval/38 checks ``candidate(encode_cyclic(s)) == s``: redefining ``encode_cyclic`` as the
    identity (and decoding as the identity) would pass if the tests used the completion's helper."""
    problem = problems[38]
    cheat = "    return s\n\n\ndef encode_cyclic(s):\n    return s\n"
    assert run_humaneval(problem, cheat).status == "failed"
    assert run_humaneval(problem, problem.solution).passed


@pytest.mark.slow
def test_every_canonical_solution_passes(problems):
    start = time.monotonic()
    results = run_many([(problem, problem.solution) for problem in problems], workers=2)
    print(f"164 canonical solutions graded in {time.monotonic() - start:.1f} s with 2 workers")
    failures = [(problem.id, result.status, result.detail) for problem, result in zip(problems, results)]
    assert [failure for failure in failures if failure[1] != "passed"] == []


@pytest.mark.slow
def test_stub_bodies_fail(problems):
    """Every fourth problem; test_every_stub_body_fails covers them all."""
    sample = problems[::4]
    passed = grade_many([(problem, "    pass\n") for problem in sample], FAST, workers=2)
    assert [problem.id for problem, ok in zip(sample, passed) if ok] == []


@pytest.mark.slow
def test_every_stub_body_fails(problems):
    passed = grade_many([(problem, "    pass\n") for problem in problems], FAST, workers=2)
    assert [problem.id for problem, ok in zip(problems, passed) if ok] == []


@pytest.mark.parametrize(
    "completion",
    [
        "    import os\n    os._exit(0)\n",
        "    import sys\n    sys.exit(0)\n",
        "    while True:\n        pass\n",
        "    import os\n    while True:\n        os.fork()\n",
        "    return [0] * 2**40\n",
        "    import shutil\n    shutil.rmtree('/')\n",
        "    import socket\n    socket.create_connection(('127.0.0.1', 9))\n",
        "}{ not python at all",
        "\x00\ud800",
        "",
    ],
    ids=["os._exit", "sys.exit", "endless", "fork", "memory", "rmtree", "network", "garbage", "bad-bytes", "empty"],
)
def test_hostile_or_malformed_completion_fails_and_grading_goes_on(problems, completion):
    problem = problems[0]
    assert grade_humaneval(problem, completion, FAST) is False
    assert grade_humaneval(problem, problem.solution) is True  # the default limits: start-up counts in FAST's 2 s


def test_completions_that_are_not_text_fail_without_raising(problems):
    assert grade_many([(problems[0], None), (problems[0], 42)], FAST) == [False, False]


def test_results_keep_the_order_of_the_pairs(problems):
    pairs = [(problems[2], problems[2].solution), (problems[3], "    pass\n"), (problems[4], problems[4].solution)]
    assert grade_many(pairs, workers=3) == [True, False, True]
    with pytest.raises(ValueError, match="workers"):
        run_many(pairs, FAST, workers=0)


def test_every_canonical_solution_passes_in_the_fallback_sandbox(problems):
    fallback = Isolation("process", "fallback process sandbox (forced by the tests)")
    results = run_many([(problem, problem.solution) for problem in problems[::8]], isolation=fallback)
    assert [result.status for result in results] == ["passed"] * len(results)


def test_training_verifier_grades_by_problem_id(problems, strong_isolation):
    verify = humaneval_verifier(problems[:2])
    assert verify(problems[1].solution, "HumanEval/1") is True
    assert verify("    return []\n", "HumanEval/1") is False


def test_training_verifier_refuses_the_fallback_unless_allowed(problems, monkeypatch):
    fallback = Isolation("process", "fallback process sandbox: bubblewrap is not installed")
    monkeypatch.setattr("eval.sandbox.host.detect_isolation", lambda: fallback)
    with pytest.raises(WeakIsolationError, match="bubblewrap is not installed"):
        humaneval_verifier(problems[:1])
    verify = humaneval_verifier(problems[:1], allow_weak_sandbox=True)
    assert verify(problems[0].solution, "HumanEval/0") is True


def test_protocol_names_the_isolation(strong_isolation):
    assert SUITES["humaneval"].sandbox() == {
        "isolation": strong_isolation.kind,
        "description": strong_isolation.description,
    }
