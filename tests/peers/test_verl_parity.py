"""The core agrees with verl 0.9 on random inputs wherever the conventions are the same.

verl's conventions map to configuration: std_eps 1e-6 for GRPO, whitening eps 1e-8, dual clip
c = 3, k3 clamped at 10, sequence means over non-empty sequences, Dr. GRPO's constant = the padded
length. Needs the optional ``peers`` install (verl without its dependencies; see the README).
"""

import types

import numpy as np
import pytest
import torch
from torch.testing import assert_close

from tests.peers import import_peer

core_algos = import_peer("verl.trainer.ppo.core_algos")
verl_F = import_peer("verl.utils.torch_functional")
ActorConfig = import_peer("verl.workers.config").ActorConfig

from algos.config.presets import load_config  # noqa: E402
from algos.config.schema import AdvantageConfig  # noqa: E402
from algos.core.advantages import compute_advantages  # noqa: E402
from algos.core.aggregation import Normalizer, aggregate  # noqa: E402
from algos.core.kl import kl_estimate  # noqa: E402
from algos.core.logprobs import entropy_from_logits  # noqa: E402
from algos.core.loss import LossInputs, compose_loss, mini_batch_denominators  # noqa: E402
from algos.core.rewards import token_rewards  # noqa: E402
from algos.core.shaping import place_outcome_reward  # noqa: E402
from algos.core.value import value_loss  # noqa: E402

TOL = {"atol": 1e-6, "rtol": 1e-6}
P, G, T = 6, 4, 12
VERL_AGG = {
    "token_mean": "token-mean",
    "seq_mean_token_mean": "seq-mean-token-mean",
    "seq_mean_token_sum": "seq-mean-token-sum",
    "seq_mean_token_sum_norm": "seq-mean-token-sum-norm",
}


@pytest.fixture
def rollout():
    lengths = torch.randint(1, T + 1, (P * G,))
    mask = (torch.arange(T) < lengths.unsqueeze(-1)).double()
    scores = torch.randint(0, 2, (P * G,)).double() + 0.1 * torch.randn(P * G)
    index = np.repeat(np.arange(P), G)
    return mask, place_outcome_reward(scores, mask), index


@pytest.mark.parametrize("scale", [True, False])
def test_grpo_advantage(rollout, scale):
    mask, rewards, index = rollout
    theirs, _ = core_algos.compute_grpo_outcome_advantage(rewards, mask, index, epsilon=1e-6, norm_adv_by_std_in_grpo=scale)
    cfg = AdvantageConfig(std_scaling="group" if scale else "none", std_eps=1e-6)
    assert_close(compute_advantages(cfg, rewards, mask, G).advantages, theirs, **TOL)


def test_rloo_advantage(rollout):
    mask, rewards, index = rollout
    theirs, _ = core_algos.compute_rloo_outcome_advantage(rewards, mask, index)
    ours = compute_advantages(AdvantageConfig(estimator="rloo", std_scaling="none"), rewards, mask, G)
    assert_close(ours.advantages, theirs, **TOL)


def test_reinforce_pp(rollout):
    mask, rewards, _ = rollout
    theirs, _ = core_algos.compute_reinforce_plus_plus_outcome_advantage(rewards, mask, config=types.SimpleNamespace(gamma=1.0))
    cfg = AdvantageConfig(estimator="return", std_scaling="batch_whiten", std_eps=1e-8)
    assert_close(compute_advantages(cfg, rewards, mask, G).advantages, theirs, **TOL)


def test_reinforce_pp_baseline(rollout):
    mask, rewards, index = rollout
    theirs, _ = core_algos.compute_reinforce_plus_plus_baseline_outcome_advantage(rewards, mask, index)
    cfg = AdvantageConfig(estimator="group_mean", std_scaling="batch_whiten", std_eps=1e-8)
    assert_close(compute_advantages(cfg, rewards, mask, G).advantages, theirs, **TOL)


@pytest.mark.parametrize("lam", [0.95, 1.0])
def test_gae(rollout, lam):
    mask, rewards, _ = rollout
    values = torch.randn(P * G, T)
    theirs_adv, theirs_ret = core_algos.compute_gae_advantage_return(rewards, values, mask, gamma=1.0, lam=lam)
    cfg = AdvantageConfig(estimator="gae", std_scaling="batch_whiten", std_eps=1e-8, lambda_policy=lam)
    ours = compute_advantages(cfg, rewards, mask, 1, values)
    assert_close(ours.advantages, theirs_adv * mask, **TOL)
    assert_close(ours.returns, theirs_ret * mask, **TOL)


@pytest.mark.parametrize("mode", list(VERL_AGG))
def test_aggregation(rollout, mode):
    mask = rollout[0].clone()
    mask[3] = 0  # a fully filtered sequence: verl averages over non-empty sequences
    loss = torch.randn(P * G, T)
    theirs = core_algos.agg_loss(loss, mask, VERL_AGG[mode])
    normalizer = Normalizer.from_mask(mask, constant=T, count_empty=False)
    assert_close(aggregate(loss, mask, mode, normalizer), theirs, **TOL)


@pytest.mark.parametrize("mode", list(VERL_AGG))
def test_aggregation_of_one_process_share(rollout, mode):
    mask = rollout[0]
    loss = torch.randn(P * G, T)
    share = slice(0, P * G // 2)  # the first of two processes
    whole = Normalizer.from_mask(mask, constant=T, count_empty=False)
    theirs = core_algos.agg_loss(
        loss[share], mask[share], VERL_AGG[mode], dp_size=2, batch_num_tokens=whole.num_tokens,
        global_batch_size=whole.num_sequences, loss_scale_factor=T,
    )
    assert_close(aggregate(loss[share], mask[share], mode, whole, dp_size=2), theirs, **TOL)


def policy_batch(mask):
    old = -torch.rand(P * G, T) * 3
    logprobs = (old + 0.3 * torch.randn(P * G, T)).requires_grad_()
    advantages = torch.randn(P * G, 1) * mask
    return logprobs, old, advantages


def verl_actor(mode, eps_low=0.2, eps_high=0.28):
    return ActorConfig(
        strategy="fsdp", rollout_n=G, clip_ratio_low=eps_low, clip_ratio_high=eps_high, clip_ratio_c=3.0,
        ppo_micro_batch_size_per_gpu=1, ppo_mini_batch_size=P, loss_agg_mode=VERL_AGG[mode],
    )


def our_loss(preset, overrides, logprobs, old, advantages, mask):
    cfg = load_config(preset, overrides=[*overrides, f"rollout.max_new_tokens={T}", "policy_loss.seq_mean_denominator=nonempty"])
    batch = LossInputs(
        logprobs=logprobs, old_logprobs=old, advantages=advantages, mask=mask,
        truncated=torch.zeros(P * G, dtype=torch.bool), correct=torch.zeros(P * G, dtype=torch.bool),
    )
    return compose_loss(cfg, batch, mini_batch_denominators(cfg, mask, batch.truncated, batch.correct)).total


@pytest.mark.parametrize("mode", list(VERL_AGG))
def test_vanilla_policy_loss_with_dual_clip(rollout, mode):
    mask = rollout[0]
    logprobs, old, advantages = policy_batch(mask)
    theirs, _ = core_algos.compute_policy_loss_vanilla(old, logprobs, advantages, mask, VERL_AGG[mode], verl_actor(mode))
    overrides = [f"policy_loss.aggregation={mode}", "policy_loss.clip_eps_high=0.28", "policy_loss.dual_clip_c=3"]
    ours = our_loss(None, overrides, logprobs, old, advantages, mask)
    assert_close(ours, theirs, **TOL)
    assert_close(torch.autograd.grad(ours, logprobs)[0], torch.autograd.grad(theirs, logprobs)[0], **TOL)


def test_gspo_policy_loss(rollout):
    mask = rollout[0]
    logprobs, old, advantages = policy_batch(mask)
    old = logprobs.detach() - 0.002 * torch.randn(P * G, T)  # GSPO's ratios live near 1
    mode = "seq_mean_token_mean"
    actor = verl_actor(mode, eps_low=3e-4, eps_high=4e-4)
    theirs, _ = core_algos.compute_policy_loss_gspo(old, logprobs, advantages, mask, VERL_AGG[mode], actor)
    ours = our_loss("gspo", ["policy_loss.ratio_level=sequence_token"], logprobs, old, advantages, mask)
    assert_close(ours, theirs, **TOL)
    assert_close(torch.autograd.grad(ours, logprobs)[0], torch.autograd.grad(theirs, logprobs)[0], **TOL)
    sequence_level = our_loss("gspo", [], logprobs, old, advantages, mask)
    assert_close(sequence_level, theirs, **TOL)


@pytest.mark.parametrize(("ours", "theirs", "clamp"), [("k1", "k1", None), ("k2", "k2", None), ("k3", "low_var_kl", 10.0)])
def test_kl_estimators(ours, theirs, clamp):
    logprobs, ref = torch.randn(8, T) * 2, torch.randn(8, T) * 2
    assert_close(kl_estimate(logprobs, ref, ours, clamp), core_algos.kl_penalty(logprobs, ref, theirs), **TOL)


def test_kl_in_reward(rollout):
    mask, _, _ = rollout
    scores = torch.randn(P * G)
    old, ref = -torch.rand(P * G, T), -torch.rand(P * G, T)
    cfg = load_config(overrides=["kl.coef=0.05", "kl.placement=reward", "kl.estimator=k1"])
    theirs = core_algos.compute_rewards(place_outcome_reward(scores, mask), old, ref, 0.05)
    assert_close(token_rewards(cfg, scores, mask, old, ref), theirs * mask, **TOL)


def test_value_loss(rollout):
    mask = rollout[0]
    values, old_values, returns = torch.randn(P * G, T), torch.randn(P * G, T), torch.randn(P * G, T)
    theirs, theirs_frac = core_algos.compute_value_loss(values, returns, old_values, mask, cliprange_value=0.2)
    per_token, frac = value_loss(values, old_values, returns, mask, clip=0.2)
    assert_close(aggregate(per_token, mask, "token_mean", Normalizer.from_mask(mask)), theirs, **TOL)
    assert_close(frac, theirs_frac, **TOL)


def test_entropy():
    logits = torch.randn(4, T, 50) * 3
    assert_close(entropy_from_logits(logits), verl_F.entropy_from_logits(logits).float(), **TOL)
