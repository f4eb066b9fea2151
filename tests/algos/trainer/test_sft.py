from algos.trainer.sft import BaseModelRecipe, TwoPhaseData, learning_rate_factor, length_bucketed


def test_length_bucketing_keeps_every_row_and_narrows_batches():
    rows = [([1], [7] * (1 + (i * 37) % 30)) for i in range(640)]
    bucketed = length_bucketed(rows, batch_size=16, seed=0)
    assert sorted(bucketed) == sorted(rows)
    assert bucketed == length_bucketed(rows, batch_size=16, seed=0)

    def mean_length_spread(ordered):
        spreads = [
            max(map(len, s)) - min(map(len, s))
            for s in ([r[1] for r in ordered[i : i + 16]] for i in range(0, 640, 16))
        ]
        return sum(spreads) / len(spreads)

    assert mean_length_spread(bucketed) < mean_length_spread(rows) / 4


def test_two_phase_data_is_worked_only_then_an_exact_mix():
    recipe = BaseModelRecipe(worked_steps=5, mixed_steps=3, worked_fraction=0.25, batch_size=8)
    worked = [([1], [7] * (3 + i % 5)) for i in range(40)]
    answer_only = [([1], [9, i, 2]) for i in range(40)]
    data = TwoPhaseData(worked, answer_only, recipe)
    for step in range(5):
        assert len(data.batch(step)) == 8 and all(row in worked for row in data.batch(step))
    mixed = [data.batch(step) for step in (5, 6, 7)]
    for batch in mixed:
        assert len(batch) == 8
        assert sum(row in worked for row in batch) == 2 and sum(row in answer_only for row in batch) == 6
    assert [row for batch in mixed for row in batch[2:]] == answer_only[:18]  # cycled in order, none repeated


def test_learning_rate_warms_up_holds_then_decays_to_zero_over_the_mixed_phase():
    recipe = BaseModelRecipe(worked_steps=10, mixed_steps=4, warmup_fraction=0.2)
    factors = [learning_rate_factor(recipe, step) for step in range(14)]
    assert factors[:2] == [0.5, 1.0] and set(factors[2:10]) == {1.0}
    assert factors[10:] == [1.0, 0.75, 0.5, 0.25]


def test_teacher_data_is_correct_in_the_worked_phase_and_carries_the_habits_after():
    from algos.trainer.sft import TeacherData
    from eval.tasks.checked_chain import CheckedChainTask
    from eval.tasks.synthetic import grade
    from eval.tasks.tokenizer import build_tokenizer

    task = CheckedChainTask(1, 4)
    tokenizer = build_tokenizer(task.vocabulary())
    problems = task.problems("train", 500)
    answers = {tuple(tokenizer(p.prompt)["input_ids"]): p for p in problems}
    recipe = BaseModelRecipe(
        worked_steps=20, mixed_steps=20, batch_size=8, multiply_noise=1.0, other_noise=0.0, loop_share=0.0
    )
    data = TeacherData(tokenizer, problems, recipe, task)

    def graded(step):
        rows = data.batch(step)
        assert len(rows) == 8
        return [
            (
                answers[tuple(prompt)],
                grade(tokenizer.decode(response, skip_special_tokens=True), answers[tuple(prompt)].answer),
            )
            for prompt, response in rows
        ]

    assert all(right for step in range(20) for _, right in graded(step))
    late = [(problem, right) for step in range(20, 40) for problem, right in graded(step)]
    assert all(
        right == (problem.metadata["multiplications"] == 0)
        for problem, right in late
        if problem.metadata["multiplications"] < 2
    )
    assert graded(5) == graded(5) and data.batch(21) != data.batch(22)
