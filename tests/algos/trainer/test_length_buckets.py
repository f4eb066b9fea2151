"""Passes over length-sorted, trimmed rows give the gradient of one pass over the whole mini-batch."""

import copy

import pytest
import torch
from accelerate import Accelerator
from torch.testing import assert_close

from algos.config.presets import load_config
from algos.engine.models import load_critic, load_policy, load_tokenizer
from algos.trainer.rollout import collect_rollout
from algos.trainer.update import Learner, _micro_batches, update
from eval.tasks.sources import builtin_task
from tests.algos.trainer.test_train import tiny_overrides


def test_passes_hold_every_row_once_sorted_by_length():
    cfg = load_config("grpo", overrides=["optim.length_buckets=3"])
    lengths = torch.tensor([5, 1, 9, 3, 7, 2, 8])
    rows = torch.tensor([6, 0, 2, 4, 1])
    passes = _micro_batches(cfg, rows, lengths, prompt_width=0)
    assert [len(p) for p in passes] == [2, 2, 1]
    flat = torch.cat(passes)
    assert sorted(flat.tolist()) == sorted(rows.tolist()) and lengths[flat].tolist() == sorted(lengths[rows].tolist())


VARIANTS = {
    "length buckets": ["optim.length_buckets=3"],
    "token budget": ["optim.micro_batch_tokens=120"],
    "gradient checkpointing": ["model.gradient_checkpointing=true"],
    "joined rows": ["optim.update_pass=joined_rows", "optim.length_buckets=1"],
    "chunked log-probabilities": ["optim.token_logprobs=chunked", "optim.length_buckets=1"],
}


@pytest.mark.parametrize("preset", ["grpo", "dapo", "dr_grpo", "vapo"])
@pytest.mark.slow
def test_passes_and_checkpointing_change_memory_not_the_update(tiny_base, preset):
    """Length buckets, a token budget per pass, gradient checkpointing and joined prompt + response rows (instead of
    each prompt encoded once) leave losses and gradients as one pass."""
    overrides = tiny_overrides(tiny_base) + ["optim.mini_batches=1", "rollout.max_new_tokens=24"]
    one = load_config(preset, overrides=[*overrides, "optim.length_buckets=1"])
    tokenizer = load_tokenizer(one.model)
    task = builtin_task(one.task, one.run.eval_splits, one.run.eval_problems)
    policy = load_policy(one.model)
    critic = load_critic(one.model, head_seed=0) if one.critic.enabled else None
    reference = copy.deepcopy(policy) if one.kl.coef > 0 else None
    batch = collect_rollout(one, 3, policy, tokenizer, task, chat=False, reference=reference, critic=critic)
    lengths = batch.sequences.response_mask.sum(dim=-1)
    assert lengths.min() < lengths.max()  # passes of different widths
    rows, width = torch.arange(batch.size), batch.sequences.prompt_ids.shape[1]
    mine, my_weights = update_once(one, batch)
    for name, settings in VARIANTS.items():
        cfg = load_config(preset, overrides=[*overrides, *settings])
        one_pass = cfg.model.gradient_checkpointing or cfg.optim.length_buckets == 1
        assert len(_micro_batches(cfg, rows, lengths, width)) > 1 or one_pass, name
        theirs, their_weights = update_once(cfg, batch)
        assert set(mine) == set(theirs), name
        for key in mine:
            assert mine[key] == pytest.approx(theirs[key], rel=1e-4, abs=1e-6), (name, key)
        for a, b in zip(my_weights, their_weights, strict=True):
            assert_close(a, b, rtol=1e-4, atol=1e-6, msg=name)


def update_once(cfg, batch) -> tuple[dict[str, float], list[torch.Tensor]]:
    """One update of the base policy (and critic) on ``batch`` under ``cfg``: its metrics and the new weights.

    Plain SGD with lr 1: the weights move by exactly the (clipped) gradient, which is what must agree.
    """
    model = load_policy(cfg.model)
    assert model.is_gradient_checkpointing == cfg.model.gradient_checkpointing
    learner = Learner(model, torch.optim.SGD(model.parameters(), lr=1.0))
    if cfg.critic.enabled:
        learner.critic = load_critic(cfg.model, head_seed=0)
        learner.critic_optimizer = torch.optim.SGD(learner.critic.parameters(), lr=1.0)
    metrics = update(cfg, batch, learner, Accelerator(cpu=True), step_seed=3)
    return metrics, [p.detach().clone() for p in model.parameters()]
