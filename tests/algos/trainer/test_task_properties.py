import pytest
import torch

from algos.trainer.task_properties import SampledGroups, sample_groups, task_properties
from eval.tasks.records import Problem
from eval.tasks.synthetic import grade


def groups(lengths, correct, truncated, repetitive, levels):
    problems = [Problem(id=str(i), prompt="p", answer="1", metadata={"level": level}) for i, level in enumerate(levels)]
    return SampledGroups(
        problems,
        group_size=len(lengths) // len(levels),
        lengths=torch.tensor(lengths),
        correct=torch.tensor(correct, dtype=torch.bool),
        truncated=torch.tensor(truncated, dtype=torch.bool),
        repetitive=torch.tensor(repetitive, dtype=torch.bool),
    )


def test_properties_hand_values():
    # three problems, G = 4: all right (lengths 10, 14, 18, 22); one right (30) and one cut off; all wrong, one loop
    samples = groups(
        lengths=[10, 14, 18, 22, 30, 96, 40, 41, 96, 20, 20, 20],
        correct=[1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0],
        truncated=[0, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0],
        repetitive=[0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0],
        levels=[0, 1, 2],
    )
    props = task_properties(samples, "level")
    assert props["accuracy_t1"] == pytest.approx(5 / 12)
    assert props["correct_length_std_median"] == pytest.approx(torch.tensor([10.0, 14, 18, 22]).std().item())
    assert props["groups_with_two_correct"] == 1
    assert props["zero_variance_groups_frac"] == pytest.approx(2 / 3) and props[
        "all_wrong_groups_frac"
    ] == pytest.approx(1 / 3)
    assert props["repetitive_frac"] == pytest.approx(1 / 12) and props["repetitive_wrong_or_truncated_frac"] == 1.0
    assert props["truncated_frac"] == pytest.approx(2 / 12)
    assert props["truncated_on_solvable_frac"] == pytest.approx(
        1 / 12
    )  # the cut-off in the all-wrong group does not count
    assert props["longest_correct_tokens"] == 30 and props["gae_lambda_power_longest_correct"] == pytest.approx(
        0.95**30
    )
    assert props["pass_rate_by_difficulty"] == {"level=0": 1.0, "level=1": 0.25, "level=2": 0.0}
    assert props["hard_band_levels"] == [] and props["hard_band_problems_frac"] == 0.0


def test_the_hard_band_is_the_levels_solved_now_and_then():
    correct = [1] + [0] * 7 + [0] * 8  # level 5: 1 of 8; level 6: 0 of 8
    samples = groups([10] * 16, correct, [0] * 16, [0] * 16, levels=[5, 6])
    props = task_properties(samples, "level")
    assert props["hard_band_levels"] == [5] and props["hard_band_problems_frac"] == 0.5


def test_sampling_a_tiny_base_gives_grouped_graded_samples(tiny_base):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from eval.tasks.checked_chain import CheckedChainTask

    torch.set_default_dtype(torch.float32)
    model, tokenizer = AutoModelForCausalLM.from_pretrained(tiny_base), AutoTokenizer.from_pretrained(tiny_base)
    problems = CheckedChainTask(1, 3).problems("validation", 5)
    samples = sample_groups(model, tokenizer, problems, grade, group_size=4, max_new_tokens=16, seed=3)
    assert samples.lengths.shape == samples.correct.shape == samples.truncated.shape == (20,)
    assert bool((samples.lengths <= 16).all()) and bool((samples.lengths[samples.truncated] == 16).all())
    again = sample_groups(model, tokenizer, problems, grade, group_size=4, max_new_tokens=16, seed=3)
    assert torch.equal(again.lengths, samples.lengths) and torch.equal(again.correct, samples.correct)
    props = task_properties(samples, "multiplications")
    assert props["problems"] == 5 and 0.0 <= props["accuracy_t1"] <= 1.0
