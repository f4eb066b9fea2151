import pytest

from eval.tasks.synthetic import SPLITS, ChainTask, answer_only, extract_answer, grade, is_worked, split_of


def evaluate(prompt: str, modulus: int = 10) -> int:
    """Independent left-to-right evaluation of a prompt."""
    tokens = prompt.removesuffix(" ;").replace(" .", "").split()
    value = int(tokens[0])
    for op, operand in zip(tokens[1::4], tokens[2::4]):
        value = {"+": value + int(operand), "-": value - int(operand), "*": value * int(operand)}[op] % modulus
    return value


def test_hand_worked_problem_format():
    task = ChainTask(min_steps=3, max_steps=3)
    problem = task.problems("train", 1, seed=1)[0]
    assert problem.prompt.endswith("= ? ;") and problem.prompt.count("= ?") == 3
    work, final = problem.solution.split(" ; ")
    assert final == f"answer {problem.answer}" == answer_only(problem.answer)
    assert work.split()[2::4] == ["="] * 3 and work.split()[-1] == problem.answer
    assert len(problem.solution.split()) == ChainTask.solution_tokens(3)
    assert problem.metadata["steps"] == 3


def test_worksheet_lines_sit_at_a_fixed_distance():
    """Prompt widths are equal, so solution line k is always one prompt width after prompt line k."""
    task = ChainTask(min_steps=2, max_steps=6)
    for problem in task.problems("train", 50, seed=2):
        prompt = problem.prompt.split()
        assert len(prompt) == task.prompt_tokens()
        steps = problem.metadata["steps"]
        assert prompt[1 + 4 * steps : -1] == ["."] * (4 * (task.max_steps - steps))
        for k, token in enumerate(problem.solution.split()[: 4 * steps]):
            if k % 4 != 3:
                assert token == prompt[1 + k]


def test_answers_are_the_chain_computation():
    for problem in ChainTask().problems("train", 200, seed=3):
        assert int(problem.answer) == evaluate(problem.prompt)
        assert grade(problem.solution, problem.answer)


def test_deterministic_and_seed_dependent():
    task = ChainTask()
    assert task.problems("validation", 50, seed=7) == task.problems("validation", 50, seed=7)
    assert task.problems("validation", 50, seed=7) != task.problems("validation", 50, seed=8)


def test_splits_are_disjoint_across_seeds():
    task = ChainTask(min_steps=1, max_steps=3)
    prompts = {split: {p.prompt for seed in (0, 1) for p in task.problems(split, 300, seed)} for split in SPLITS}
    assert not prompts["train"] & prompts["validation"]
    assert not prompts["train"] & prompts["test"]
    assert not prompts["validation"] & prompts["test"]
    assert all(split_of(p) == "test" for p in prompts["test"])


def test_lengths_vary_and_some_exceed_a_budget():
    lengths = [len(p.solution.split()) for p in ChainTask().problems("train", 300)]
    assert min(lengths) == 11 and max(lengths) == 35
    assert any(length + 1 > 32 for length in lengths)  # with <eos>, beyond the default budget


def test_answer_only_responses_are_graded_but_not_worked():
    problem = ChainTask().problems("test", 1)[0]
    assert grade(answer_only(problem.answer), problem.answer)
    assert not is_worked(answer_only(problem.answer)) and not is_worked("  answer 3")
    assert is_worked(problem.solution) and is_worked(" * 3 = 0") and not is_worked("") and not is_worked("7")


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        ("+ 3 = 0 ; answer 0", "0"),
        ("answer 12  ", "12"),
        ("answer 3 ; more", None),
        ("the answer is", None),
        ("", None),
    ],
)
def test_extract_answer(response, expected):
    assert extract_answer(response) == expected


def test_grade_rejects_wrong_and_malformed():
    assert grade("x ; answer 5", "5") and grade("answer 05", "5")
    assert not grade("x ; answer 4", "5")
    assert not grade("5", "5")


def test_invalid_knobs():
    with pytest.raises(ValueError, match="min_steps"):
        ChainTask(min_steps=5, max_steps=2)
    with pytest.raises(ValueError, match="unknown split 'dev'"):
        ChainTask().problems("dev", 1)
    with pytest.raises(ValueError, match="too few distinct"):
        ChainTask(min_steps=1, max_steps=1, modulus=2).problems("train", 50)
