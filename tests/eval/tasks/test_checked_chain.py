import random

import pytest

from eval.tasks.checked_chain import (
    CHECK_TOKENS,
    LINE_TOKENS,
    CheckedChainTask,
    TeacherStyle,
    chain_values,
    parse_prompt,
    render,
    teacher_response,
)
from eval.tasks.synthetic import SPLITS, grade, split_of


def evaluate(prompt: str) -> int:
    """Independent left-to-right evaluation of a prompt modulo 10."""
    words = prompt.removesuffix(" ;").split()
    value = int(words[0])
    for op, operand in zip(words[2::3], words[3::3], strict=True):
        value = {"+": value + int(operand), "-": value - int(operand), "*": value * int(operand)}[op] % 10
    return value


def test_hand_worked_problem():
    task = CheckedChainTask()
    problem = next(p for p in task.problems("train", 200, seed=0) if p.metadata["steps"] == 2)
    start, chain = parse_prompt(problem.prompt)
    (op1, x1), (op2, x2) = chain
    v1 = chain_values(start, chain, 10)[1]
    assert problem.prompt == f"{start} a {op1} {x1} b {op2} {x2} ;"
    assert (
        problem.solution
        == f"a {start} {op1} {x1} = {v1} b {v1} {op2} {x2} = {problem.answer} ; answer {problem.answer}"
    )
    assert int(problem.answer) == evaluate(problem.prompt)


def test_answers_are_the_chain_and_multipliers_are_invertible():
    task = CheckedChainTask()
    problems = task.problems("train", 300, seed=3)
    for problem in problems:
        assert int(problem.answer) == evaluate(problem.prompt)
        _, chain = parse_prompt(problem.prompt)
        assert problem.metadata["multiplications"] == sum(op == "*" for op, _ in chain)
        assert all(operand in (3, 7, 9) for op, operand in chain if op == "*")
    assert {p.metadata["steps"] for p in problems} == set(range(1, 13))


def test_checked_responses_of_several_lengths_all_pass():
    problem = next(p for p in CheckedChainTask().problems("test", 50) if p.metadata["steps"] == 4)
    start, chain = parse_prompt(problem.prompt)
    values = chain_values(start, chain, 10)
    responses = [render(problem, values, checked) for checked in ((), {0}, {1, 3}, {0, 1, 2, 3})]
    lengths = [len(r.split()) for r in responses]
    assert lengths == [LINE_TOKENS * 4 + 3 + CHECK_TOKENS * n for n in (0, 1, 2, 4)]
    assert all(grade(response, problem.answer) for response in responses)


def test_a_wrong_line_makes_the_answer_wrong():
    problem = next(p for p in CheckedChainTask().problems("test", 50) if p.metadata["steps"] == 5)
    start, chain = parse_prompt(problem.prompt)
    for line in range(5):
        for wrong in range(10):
            values = chain_values(start, chain, 10)
            if wrong == values[line + 1]:
                continue
            carried = chain_values(wrong, chain[line + 1 :], 10)
            response = render(problem, values[: line + 1] + carried, checked=())
            assert not grade(response, problem.answer)


def test_looping_responses_fail():
    problem = CheckedChainTask().problems("test", 1)[0]
    start, chain = parse_prompt(problem.prompt)
    values = chain_values(start, chain, 10)
    wrong = str((int(problem.answer) + 1) % 10)
    looped = render(problem, values, checked=(), loop=(0, 12), final=wrong)
    assert looped.count("check") == 12 and not grade(looped, problem.answer)
    cut_off = render(problem, values, checked=(), loop=(0, 12), final=None)
    assert "answer" not in cut_off and not grade(cut_off, problem.answer)


def test_teacher_styles():
    task = CheckedChainTask()
    problems = task.problems("train", 400, seed=1)
    rng = random.Random(0)
    clean = [teacher_response(p, TeacherStyle(), 10, rng) for p in problems]
    assert all(grade(r, p.answer) for r, p in zip(clean, problems, strict=True))
    assert len({len(r.split()) for r, p in zip(clean, problems, strict=True) if p.metadata["steps"] == 6}) > 3
    noisy = TeacherStyle(multiply_noise=1.0, other_noise=0.0, loop_share=0.0)
    for problem in problems:
        right = grade(teacher_response(problem, noisy, 10, rng), problem.answer)
        if problem.metadata["multiplications"] < 2:  # one slip always shows; several can cancel out
            assert right == (problem.metadata["multiplications"] == 0)
    loops = [teacher_response(p, TeacherStyle(loop_share=1.0), 10, rng) for p in problems]
    assert not any(grade(r, p.answer) for r, p in zip(loops, problems, strict=True))


def test_splits_are_disjoint():
    task = CheckedChainTask()
    drawn = {split: {p.prompt for p in task.problems(split, 300)} for split in SPLITS}
    assert all(split_of(prompt) == split for split, prompts in drawn.items() for prompt in prompts)
    assert not drawn["train"] & drawn["test"] and not drawn["validation"] & drawn["test"]


def test_bad_knobs_fail_clearly():
    with pytest.raises(ValueError, match="max_steps"):
        CheckedChainTask(min_steps=3, max_steps=20)
    with pytest.raises(ValueError, match="multiply_share"):
        CheckedChainTask(multiply_share=1.5)
