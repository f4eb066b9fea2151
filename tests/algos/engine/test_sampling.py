"""The one sampling path: groups laid out group by group, batches that do not change the draws' owners, and one
rule for a response the verifier cannot score (incorrect, and unscorable) in held-out accuracy, the task
properties and the rollout's rewards."""

import dataclasses

import pytest
import torch

from algos.config.presets import load_config
from algos.engine.accuracy import accuracy, responses
from algos.engine.models import load_policy, load_tokenizer
from algos.engine.sampling import grade, sample, sample_batches
from algos.trainer.rollout import collect_rollout
from algos.trainer.task_properties import sample_groups
from eval.tasks.checked_chain import CheckedChainTask
from eval.tasks.sources import builtin_task
from tests.algos.trainer.test_train import tiny_overrides


@pytest.fixture(autouse=True)
def float32():
    torch.set_default_dtype(torch.float32)


def unsure(text: str, answer: str) -> bool | None:
    """A verifier with no verdict on responses whose length is a multiple of 3; it accepts those of even length."""
    if len(text) % 3 == 0:
        return None
    return len(text) % 2 == 0


class Recording:
    """``unsure``, keeping every verdict in the order asked."""

    def __init__(self):
        self.verdicts = []

    def __call__(self, text: str, answer: str) -> bool | None:
        self.verdicts.append(unsure(text, answer))
        return self.verdicts[-1]


@pytest.fixture(scope="module")
def tiny(tiny_base):
    cfg = load_config("grpo", overrides=tiny_overrides(tiny_base))
    return cfg, load_policy(cfg.model), load_tokenizer(cfg.model)


def test_a_missing_verdict_is_incorrect_and_unscorable():
    verdicts = grade(unsure, ["ab", "abc", "a", "abcdef"], ["", "", "", ""])
    assert verdicts.correct.tolist() == [True, False, False, False]
    assert verdicts.scorable.tolist() == [True, False, True, False]


def test_groups_are_laid_out_group_by_group(tiny):
    _, policy, tokenizer = tiny
    problems = CheckedChainTask(1, 3).problems("validation", 3)
    part = sample(policy, tokenizer, problems, 12, group_size=4, generator=torch.Generator().manual_seed(0))
    assert part.sequences.prompt_ids.shape[0] == len(part.texts) == 12
    assert part.answers == [p.answer for p in problems for _ in range(4)]
    assert torch.equal(part.sequences.prompt_ids[:4], part.sequences.prompt_ids[:1].expand(4, -1))
    assert torch.equal(part.lengths, part.sequences.response_mask.sum(dim=-1))


def test_batches_go_on_with_one_generator(tiny):
    _, policy, tokenizer = tiny
    problems = CheckedChainTask(1, 3).problems("validation", 5)
    draws = torch.Generator().manual_seed(7)
    parts = list(sample_batches(policy, tokenizer, problems, 12, prompts_per_batch=2, group_size=2, generator=draws))
    assert [len(p.texts) for p in parts] == [4, 4, 2]
    again = torch.Generator().manual_seed(7)
    first = sample(policy, tokenizer, problems[:2], 12, group_size=2, generator=again)
    assert first.texts == parts[0].texts
    assert sample(policy, tokenizer, problems[2:4], 12, group_size=2, generator=again).texts == parts[1].texts


def test_held_out_accuracy_counts_a_missing_verdict_as_wrong(tiny):
    _, policy, tokenizer = tiny
    problems = CheckedChainTask(1, 3).problems("validation", 24)
    texts, _ = responses(policy, tokenizer, problems, 16, greedy=True, prompts_per_batch=10)
    verdicts = [unsure(text, p.answer) for text, p in zip(texts, problems, strict=True)]
    assert None in verdicts
    got = accuracy(policy, tokenizer, problems, unsure, 16, greedy=True, prompts_per_batch=10)
    assert got == sum(v is True for v in verdicts) / len(problems)


def test_task_properties_count_a_missing_verdict_as_wrong(tiny):
    _, policy, tokenizer = tiny
    problems = CheckedChainTask(1, 3).problems("validation", 6)
    verifier = Recording()
    samples = sample_groups(policy, tokenizer, problems, verifier, group_size=4, max_new_tokens=16, seed=3)
    assert None in verifier.verdicts
    assert samples.correct.tolist() == [v is True for v in verifier.verdicts]


def test_the_rollout_leaves_an_unscorable_response_out_of_its_rewards(tiny):
    cfg, policy, tokenizer = tiny
    verifier = Recording()
    task = dataclasses.replace(builtin_task(cfg.task, cfg.run.eval_splits, cfg.run.eval_problems), verifier=verifier)
    batch = collect_rollout(cfg, 5, policy, tokenizer, task, chat=None)
    unscorable = torch.tensor([v is None for v in verifier.verdicts])
    assert bool(unscorable.any()) and not bool(unscorable.all())
    assert batch.correct.tolist() == [v is True for v in verifier.verdicts]
    assert bool(batch.scores[unscorable].isnan().all()) and not bool(batch.scores[~unscorable].isnan().any())
    assert bool((batch.advantages[unscorable] == 0).all())
