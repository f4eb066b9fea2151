import dataclasses

import pytest
import torch
from torch.testing import assert_close

from algos.config.presets import load_config
from algos.core.aggregation import Normalizer, aggregate
from algos.core.kl import kl_estimate
from algos.core.loss import LossInputs, compose_loss, mini_batch_denominators
from algos.core.ratios import group_expected_probability
from algos.core.surrogate import clipped_surrogate

B, T = 8, 6


def make_batch(with_critic=False, group_size=4):
    lengths = torch.tensor([6, 2, 4, 5, 1, 6, 3, 6])
    mask = (torch.arange(T) < lengths.unsqueeze(-1)).double()
    old = -torch.rand(B, T) * 2
    logprobs = (old + torch.randn(B, T) * 0.3).requires_grad_()
    values = torch.randn(B, T).requires_grad_() if with_critic else None
    return LossInputs(
        logprobs=logprobs,
        old_logprobs=old,
        advantages=torch.randn(B, T) * mask,
        mask=mask,
        truncated=lengths == T,
        correct=torch.tensor([True, False, True, False, False, True, True, False]),
        ref_logprobs=old + torch.randn(B, T) * 0.2,
        entropy=(torch.rand(B, T) + 0.5).requires_grad_(),
        group_expectation=group_expected_probability(old, mask, group_size),
        values=values,
        old_values=torch.randn(B, T) if with_critic else None,
        returns=torch.randn(B, T) if with_critic else None,
    )


def micro(batch, rows):
    fields = {}
    for name in batch.__dataclass_fields__:
        value = getattr(batch, name)
        fields[name] = None if value is None else value[rows]
    return LossInputs(**fields)


CONFIGS = {
    "grpo": ["policy_loss.entropy_coef=0.01"],
    "dapo": ["reward.overlong_filter=true", "rollout.group_size=4", "rollout.prompts_per_step=2", "optim.mini_batches=1"],
    "dr_grpo": [],
    "gspo": ["policy_loss.seq_mean_denominator=nonempty"],
    "gepo": ["rollout.group_size=4", "rollout.prompts_per_step=2", "optim.mini_batches=1"],
    "vapo": ["critic.value_clip=0.2", "policy_loss.entropy_coef=0.01", "policy_loss.entropy_aggregation=token_mean"],
}


@pytest.mark.parametrize("preset", list(CONFIGS))
def test_micro_batch_gradients_equal_the_mini_batch(preset):
    cfg = load_config(preset, overrides=CONFIGS[preset])
    batch = make_batch(with_critic=cfg.critic.enabled)
    denominators = mini_batch_denominators(cfg, batch.mask, batch.truncated, batch.correct)
    params = [t for t in (batch.logprobs, batch.entropy, batch.values) if t is not None]
    whole = compose_loss(cfg, batch, denominators).total
    grads_whole = torch.autograd.grad(whole, params, allow_unused=True)
    grads_parts = [torch.zeros_like(p) for p in params]
    total_parts = 0.0
    for rows in (slice(0, 3), slice(3, 4), slice(4, 8)):
        part = compose_loss(cfg, micro(batch, rows), denominators).total
        total_parts += part.item()
        for acc, grad in zip(grads_parts, torch.autograd.grad(part, params, allow_unused=True)):
            if grad is not None:
                acc += grad
    assert_close(torch.tensor(total_parts), whole.detach())
    for acc, grad in zip(grads_parts, grads_whole):
        assert_close(acc, torch.zeros_like(acc) if grad is None else grad)


def test_grpo_loss_is_surrogate_plus_beta_k3():
    cfg = load_config("grpo")
    batch = make_batch()
    out = compose_loss(cfg, batch, mini_batch_denominators(cfg, batch.mask, batch.truncated, batch.correct))
    ratio = torch.exp(batch.logprobs - batch.old_logprobs)
    per_token, _ = clipped_surrogate(ratio, batch.advantages, batch.mask, 0.2, 0.2)
    kl = kl_estimate(batch.logprobs, batch.ref_logprobs, "k3")
    lengths = batch.mask.sum(-1)
    expected = (((per_token + 0.04 * kl) * batch.mask).sum(-1) / lengths).mean()
    assert_close(out.total, expected)
    assert out.value is None
    for key in ("actor/clip_frac_low", "actor/clip_frac_high", "actor/approx_kl_old", "actor/kl_ref", "actor/entropy"):
        assert key in out.metrics


def test_overlong_filter_removes_truncated_responses_from_the_policy_loss():
    cfg = load_config("dapo", overrides=["reward.overlong_filter=true"])
    batch = make_batch()
    denominators = mini_batch_denominators(cfg, batch.mask, batch.truncated, batch.correct)
    (grad,) = torch.autograd.grad(compose_loss(cfg, batch, denominators).total, batch.logprobs)
    assert batch.truncated.any()
    assert (grad[batch.truncated] == 0).all()
    assert (grad[~batch.truncated].abs().sum(-1) > 0).all()
    assert denominators.policy.num_tokens == float(batch.mask[~batch.truncated].sum())


def test_dr_grpo_divides_by_sequences_times_budget():
    cfg = load_config("dr_grpo", overrides=["rollout.max_new_tokens=50"])
    batch = make_batch()
    out = compose_loss(cfg, batch, mini_batch_denominators(cfg, batch.mask, batch.truncated, batch.correct))
    per_token, _ = clipped_surrogate(torch.exp(batch.logprobs - batch.old_logprobs), batch.advantages, batch.mask, 0.2, 0.2)
    assert_close(out.total, (per_token * batch.mask).sum() / (B * 50))


def test_positive_example_lm_loss_adds_mu_nll():
    with_lm = load_config("vapo")
    without = load_config("vapo", overrides=["policy_loss.pos_lm_coef=0"])
    batch = make_batch(with_critic=True)
    d = mini_batch_denominators(with_lm, batch.mask, batch.truncated, batch.correct)
    diff = compose_loss(with_lm, batch, d).policy - compose_loss(without, batch, d).policy
    positive = batch.mask * batch.correct.unsqueeze(-1)
    assert_close(diff, 0.1 * -(batch.logprobs * positive).sum() / positive.sum())


def test_entropy_bonus_lowers_the_loss_by_coef_times_entropy():
    cfg = load_config(overrides=["policy_loss.entropy_coef=0.1", "policy_loss.aggregation=token_mean"])
    batch = make_batch()
    d = mini_batch_denominators(cfg, batch.mask, batch.truncated, batch.correct)
    diff = compose_loss(cfg, batch, d).total - compose_loss(load_config(overrides=["policy_loss.aggregation=token_mean"]), batch, d).total
    assert_close(diff, -0.1 * aggregate(batch.entropy, batch.mask, "token_mean", Normalizer.from_mask(batch.mask)))


def test_missing_inputs_are_named():
    batch = make_batch()
    cfg = load_config("grpo")
    d = mini_batch_denominators(cfg, batch.mask, batch.truncated, batch.correct)
    with pytest.raises(ValueError, match="reference"):
        compose_loss(cfg, dataclasses.replace(batch, ref_logprobs=None), d)
    with pytest.raises(ValueError, match="critic"):
        compose_loss(load_config("ppo"), batch, d)
