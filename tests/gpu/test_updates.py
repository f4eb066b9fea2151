"""One update on CUDA: equal to the CPU's in float32, close to it under bf16 autocast, and unchanged by the
memory savers (token-budget passes, gradient checkpointing) and by encoding each prompt once.

Every case updates the same rollout batch, sampled on CUDA (dynamic sampling's rounds and the critic's
values included), from the same weights, with SGD at rate 1, so the weights move by the gradient.
"""

import dataclasses
import math

import pytest
import torch
from torch.testing import assert_close

from algos.config.presets import load_config
from algos.trainer.update import _micro_batches
from tests.algos.trainer.test_train import tiny_overrides
from tests.gpu.support import cosine, rollout_on, update_on

pytestmark = pytest.mark.gpu

PRESETS = ["grpo", "dapo", "ppo", "vapo", "gspo"]

CPU_TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
"""CUDA against CPU in float32: the same arithmetic summed in other orders (TF32 is off by default)."""

BF16_LOSS_TOLERANCE = {"rel": 0.02, "abs": 0.01}
"""bf16 autocast against float32: bf16 keeps 8 bits of mantissa (0.4 % per rounding), a few of which compound
through the layers; a loss within 2 % (or 0.01 of a loss near 0) of float32's."""

BF16_GRADIENT_COSINE = 0.99
"""bf16's gradient points where float32's does (cosine similarity of the whole flattened gradients)."""

LOSSES = ("actor/pg_loss", "actor/policy_loss", "actor/entropy", "critic/value_loss")


def one_update_config(preset: str, tiny_base, *extra: str):
    """One optimizer step on 8 groups of 4; half the responses rewarded by a coin flip, so that every group's
    advantages differ whatever the tiny base solves."""
    overrides = tiny_overrides(tiny_base, **{"rollout.prompts_per_step": 8, "reward.coin_flip_share": 0.5})
    overrides += ["optim.mini_batches=1", "optim.epochs=1", "rollout.max_new_tokens=24"]
    return load_config(preset, overrides=[*overrides, *extra])


@pytest.fixture(scope="module", params=PRESETS)
def sampled(request, tiny_base):
    """(preset, config, a rollout batch sampled on CUDA) per preset."""
    cfg = one_update_config(request.param, tiny_base)
    return request.param, cfg, rollout_on(cfg, "cuda")


def test_the_batch_sampled_on_cuda_carries_signal(sampled):
    preset, cfg, batch = sampled
    assert batch.advantages.abs().sum() > 0, preset  # otherwise every comparison below would be vacuous
    if cfg.dynamic_sampling.enabled:
        groups = batch.correct.float().view(-1, cfg.rollout.group_size)
        assert (groups.std(dim=1) > 0).all()  # dynamic sampling kept informative groups only
        assert batch.metrics["rollout/generation_rounds"] >= 1
    if cfg.critic.enabled:
        assert batch.old_values is not None and batch.old_values.is_cuda


def test_one_update_on_cuda_equals_the_cpu_update(sampled, record_property):
    preset, cfg, batch = sampled
    on_cpu, on_cuda = update_on(cfg, batch, "cpu"), update_on(cfg, batch, "cuda")
    assert on_cuda.metrics["actor/grad_norm"] > 0 and on_cuda.metrics["actor/nonfinite_skipped"] == 0
    assert set(on_cpu.metrics) == set(on_cuda.metrics)
    for key, value in on_cpu.metrics.items():
        assert on_cuda.metrics[key] == pytest.approx(value, rel=CPU_TOLERANCE["rtol"], abs=CPU_TOLERANCE["atol"]), key
    for mine, theirs in zip(on_cuda.weights, on_cpu.weights, strict=True):
        assert_close(mine, theirs, **CPU_TOLERANCE)
    largest = max(float((a - b).abs().max()) for a, b in zip(on_cuda.weights, on_cpu.weights, strict=True))
    record_property(f"{preset}_largest_weight_gap_cuda_vs_cpu", largest)


def test_bf16_autocast_losses_are_within_tolerance_of_float32(sampled, record_property):
    """Each side's π_old is its own forward pass (detached), as where the sampler's log-probabilities are not kept:
    against the float32 sampler's, bf16's rounding alone moves a sequence's ratio by more than GSPO's clip range
    (3e-4 below, 4e-4 above), so its bf16 update clips sequences float32's does not, whatever the arithmetic
    (measured: a gradient cosine of 0.735 to float32's); see docs/gpus.md."""
    preset, cfg, batch = sampled
    batch = dataclasses.replace(batch, old_logprobs=None)
    full, mixed = update_on(cfg, batch, "cuda"), update_on(cfg, batch, "cuda", mixed_precision="bf16")
    assert mixed.metrics["actor/nonfinite_skipped"] == 0
    gaps = {}
    for key in LOSSES:
        if key in full.metrics:
            assert mixed.metrics[key] == pytest.approx(full.metrics[key], **BF16_LOSS_TOLERANCE), key
            gaps[key] = abs(mixed.metrics[key] - full.metrics[key])
    assert math.isfinite(mixed.metrics["actor/grad_norm"])
    alignment = cosine(mixed.gradients, full.gradients)
    assert alignment >= BF16_GRADIENT_COSINE
    record_property(f"{preset}_bf16_loss_gaps", gaps)
    record_property(f"{preset}_bf16_gradient_cosine", alignment)


@pytest.mark.parametrize(
    "saver", ["optim.micro_batch_tokens=120", "model.gradient_checkpointing=true", "optim.update_pass=shared_prompts"]
)
def test_memory_savers_and_the_shared_prompt_pass_give_the_same_gradients_on_cuda(sampled, saver, tiny_base):
    preset, cfg, batch = sampled
    saving = one_update_config(preset, tiny_base, saver)
    rows, width = torch.arange(batch.size), batch.sequences.prompt_ids.shape[1]
    lengths = batch.sequences.response_mask.sum(dim=-1).cpu()
    assert len(_micro_batches(saving, rows, lengths, width)) > 1 or saving.model.gradient_checkpointing
    whole, saved = update_on(cfg, batch, "cuda"), update_on(saving, batch, "cuda")
    for key, value in whole.metrics.items():
        assert saved.metrics[key] == pytest.approx(value, rel=1e-4, abs=1e-6), key
    for mine, theirs in zip(saved.gradients, whole.gradients, strict=True):
        assert_close(mine, theirs, rtol=1e-4, atol=1e-6)
