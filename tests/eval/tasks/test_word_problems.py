import re

import pytest

from eval.tasks.config import TaskConfig
from eval.tasks.sources import builtin_task
from eval.tasks.word_problems import INSTRUCTION, WordProblemTask, grade


@pytest.mark.parametrize(
    ("response", "answer", "correct"),
    [
        ("12", "12", True),
        ("Mia has 7 + 5 = 12 marbles.", "12", True),
        ("The answer is 12.\n", "12", True),
        ("12 apples, not 13", "12", False),  # the last number counts
        ("1,024", "1024", True),
        ("012", "12", True),
        ("twelve", "12", False),
        ("", "0", False),
        ("-3", "3", False),
    ],
)
def test_the_last_integer_is_the_answer(response, answer, correct):
    assert grade(response, answer) is correct


def test_every_answer_is_the_stated_arithmetic():
    for problem in WordProblemTask().problems("train", 300, seed=1):
        a, operation, b = problem.metadata["arithmetic"].split()
        assert int(problem.answer) == {"+": int(a) + int(b), "-": int(a) - int(b), "*": int(a) * int(b)}[operation]
        assert int(problem.answer) >= 0 and problem.prompt.endswith(INSTRUCTION)
        assert re.search(rf"\b{a}\b", problem.prompt) and re.search(rf"\b{b}\b", problem.prompt)
        assert problem.metadata["operation"] == "+-*".index(operation)


def test_splits_never_share_arithmetic_and_draws_are_deterministic():
    task = WordProblemTask()
    facts = {
        split: {p.metadata["arithmetic"] for p in task.problems(split, 200, seed=0)}
        for split in ("train", "validation", "test")
    }
    assert not facts["train"] & facts["validation"] and not facts["train"] & facts["test"]
    assert not facts["validation"] & facts["test"]
    assert task.problems("test", 50, seed=0) == task.problems("test", 50, seed=0)
    prompts = [p.prompt for p in task.problems("train", 200, seed=0)]
    assert len(set(prompts)) == len(prompts)


def test_the_task_is_a_built_in_source_with_its_own_verifier():
    data = builtin_task(TaskConfig(name="word_problems"), ["validation"], eval_problems=8)
    problem = data.evaluation["validation"][0]
    assert data.verifier(f"So it is {problem.answer}", problem.answer)
    assert not data.verifier("answer 1000", problem.answer)
    assert data.longest_response_tokens is None
