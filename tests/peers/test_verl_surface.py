"""The objectives, advantages, KL kinds, aggregation and rollout correction beyond PPO/GRPO agree with verl 0.9.

Conventions mapped to configuration: verl's log-space clip of geo_mean (c) is clip_eps_low = 1 − e^−c,
clip_eps_high = e^c − 1; DPPO's clip_ratio_low/high are policy_loss.dppo_thresholds and clip_ratio_c its
ratio cap; verl's GPG alpha counts nonzero rewards (advantage.gpg_alpha=nonzero_reward); a singleton group
has baseline 0 and std 1 (advantage.singleton_groups=raw); GDPO whitens with eps 1e-8
(advantage.whiten_eps). Sequence means run over non-empty sequences, as in the other verl tests.
"""

import math

import numpy as np
import pytest
import torch
from torch.testing import assert_close

from tests.peers import import_peer

core_algos = import_peer("verl.trainer.ppo.core_algos")
verl_F = import_peer("verl.utils.torch_functional")
rollout_corr = import_peer("verl.trainer.ppo.rollout_corr_helper")
verl_config = import_peer("verl.workers.config")

from algos.config.presets import load_config  # noqa: E402
from algos.config.schema import AdvantageConfig  # noqa: E402
from algos.core.advantages import compute_advantages  # noqa: E402
from algos.core.aggregation import Normalizer, aggregate  # noqa: E402
from algos.core.kl import kl_estimate  # noqa: E402
from algos.core.kl_control import adapted_coef  # noqa: E402
from algos.core.loss import LossInputs, compose_loss, mini_batch_denominators  # noqa: E402
from algos.core.masked import masked_whiten  # noqa: E402
from algos.core.reward_functions import combine_rewards  # noqa: E402
from algos.core.shaping import place_outcome_reward  # noqa: E402
from algos.core.token_masks import correction_weights  # noqa: E402

TOL = {"atol": 1e-6, "rtol": 1e-6}
P, G, T = 6, 4, 12
B = P * G
VERL_AGG = {
    "token_mean": "token-mean",
    "seq_mean_token_mean": "seq-mean-token-mean",
    "seq_mean_token_sum": "seq-mean-token-sum",
}


@pytest.fixture
def batch():
    torch.manual_seed(0)
    lengths = torch.randint(1, T + 1, (B,))
    mask = (torch.arange(T) < lengths.unsqueeze(-1)).double()
    old = -torch.rand(B, T) * 3
    logprobs = (old + 0.3 * torch.randn(B, T)).requires_grad_()
    advantages = torch.randn(B, 1) * mask
    return mask, old, logprobs, advantages


def actor(mode="seq_mean_token_mean", eps_low=0.2, eps_high=0.28, clip_c=3.0, **policy_loss):
    return verl_config.ActorConfig(
        strategy="fsdp",
        rollout_n=G,
        clip_ratio_low=eps_low,
        clip_ratio_high=eps_high,
        clip_ratio_c=clip_c,
        ppo_micro_batch_size_per_gpu=1,
        ppo_mini_batch_size=P,
        loss_agg_mode=VERL_AGG[mode],
        policy_loss=verl_config.PolicyLossConfig(**policy_loss),
    )


def ours(overrides, mask, old, logprobs, advantages, generator=None):
    cfg = load_config(
        overrides=[*overrides, f"rollout.max_new_tokens={T}", "policy_loss.seq_mean_denominator=nonempty"]
    )
    inputs = LossInputs(
        logprobs=logprobs,
        old_logprobs=old,
        advantages=advantages,
        mask=mask,
        truncated=torch.zeros(B, dtype=torch.bool),
        correct=torch.zeros(B, dtype=torch.bool),
        token_draws=generator,
    )
    return compose_loss(cfg, inputs, mini_batch_denominators(cfg, mask, inputs.truncated, inputs.correct)).total


def assert_same(mine, theirs, logprobs):
    assert_close(mine, theirs, **TOL)
    assert_close(torch.autograd.grad(mine, logprobs)[0], torch.autograd.grad(theirs, logprobs)[0], **TOL)


@pytest.mark.parametrize("mode", list(VERL_AGG))
def test_cispo(batch, mode):
    mask, old, logprobs, advantages = batch
    theirs, _ = core_algos.compute_policy_loss_cispo(old, logprobs, advantages, mask, VERL_AGG[mode], actor(mode))
    mine = ours(
        ["policy_loss.objective=cispo", "policy_loss.clip_eps_high=0.28", f"policy_loss.aggregation={mode}"],
        mask,
        old,
        logprobs,
        advantages,
    )
    assert_same(mine, theirs, logprobs)


def test_sapo(batch):
    mask, old, logprobs, advantages = batch
    theirs, _ = core_algos.compute_policy_loss_sapo(old, logprobs, advantages, mask, "seq-mean-token-mean", actor())
    assert_same(ours(["policy_loss.objective=sapo"], mask, old, logprobs, advantages), theirs, logprobs)


@pytest.mark.parametrize("mode", list(VERL_AGG))
def test_gpg_policy_loss(batch, mode):
    mask, old, logprobs, advantages = batch
    theirs, _ = core_algos.compute_policy_loss_gpg(old, logprobs, advantages, mask, VERL_AGG[mode], actor(mode))
    mine = ours(["policy_loss.objective=reinforce", f"policy_loss.aggregation={mode}"], mask, old, logprobs, advantages)
    assert_same(mine, theirs, logprobs)


def test_gmpo(batch):
    mask, old, logprobs, advantages = batch
    theirs, _ = core_algos.compute_policy_loss_geo_mean(
        old, logprobs, advantages, mask, "token-mean", actor(eps_low=0.4, eps_high=0.3)
    )
    mine = ours(
        [
            "policy_loss.objective=gmpo",
            f"policy_loss.clip_eps_low={1 - math.exp(-0.4)}",
            f"policy_loss.clip_eps_high={math.exp(0.3) - 1}",
        ],
        mask,
        old,
        logprobs,
        advantages,
    )
    assert_same(mine, theirs, logprobs)


@pytest.mark.parametrize("mode", list(VERL_AGG))
def test_clip_cov(batch, mode):
    mask, old, logprobs, advantages = batch
    config = actor(mode, clip_cov_ratio=0.05, clip_cov_lb=0.2, clip_cov_ub=3.0)
    torch.manual_seed(7)
    theirs, metrics = core_algos.compute_policy_loss_clip_cov(old, logprobs, advantages, mask, VERL_AGG[mode], config)
    overrides = [
        "policy_loss.objective=clip_cov",
        "policy_loss.clip_eps_high=0.28",
        "policy_loss.cov_ratio=0.05",
        "policy_loss.clip_cov_bounds=[0.2, 3.0]",
        f"policy_loss.aggregation={mode}",
        "optim.length_buckets=1",
    ]
    mine = ours(overrides, mask, old, logprobs, advantages, torch.Generator().manual_seed(7))
    assert metrics["actor/pg_clipfrac"] > 0  # some tokens were detached
    assert_same(mine, theirs, logprobs)


@pytest.mark.parametrize("mode", list(VERL_AGG))
def test_kl_cov(batch, mode):
    mask, old, logprobs, advantages = batch
    config = actor(mode, kl_cov_ratio=0.05, ppo_kl_coef=0.7)
    theirs, _ = core_algos.compute_policy_loss_kl_cov(old, logprobs, advantages, mask, VERL_AGG[mode], config)
    overrides = [
        "policy_loss.objective=kl_cov",
        "policy_loss.cov_ratio=0.05",
        "policy_loss.kl_cov_coef=0.7",
        f"policy_loss.aggregation={mode}",
        "optim.length_buckets=1",
    ]
    assert_same(ours(overrides, mask, old, logprobs, advantages), theirs, logprobs)


@pytest.mark.parametrize("kind", ["tv", "kl"])
def test_dppo(batch, kind):
    mask, old, logprobs, advantages = batch
    config = actor("token_mean", eps_low=0.05, eps_high=0.08, clip_c=1.2)
    loss_fn = core_algos.compute_policy_loss_dppo_tv if kind == "tv" else core_algos.compute_policy_loss_dppo_kl
    theirs, _ = loss_fn(old, logprobs, advantages, mask, "token-mean", config)
    overrides = [
        f"policy_loss.objective=dppo_{kind}",
        "policy_loss.dppo_thresholds=[0.05, 0.08]",
        "policy_loss.dppo_ratio_cap=1.2",
        "policy_loss.aggregation=token_mean",
    ]
    assert_same(ours(overrides, mask, old, logprobs, advantages), theirs, logprobs)


@pytest.fixture
def outcomes():
    torch.manual_seed(1)
    lengths = torch.randint(1, T + 1, (B,))
    mask = (torch.arange(T) < lengths.unsqueeze(-1)).double()
    scores = torch.randint(0, 2, (B,)).double() + 0.1 * torch.randn(B)
    return mask, place_outcome_reward(scores, mask), np.repeat(np.arange(P), G)


def test_opo_advantage(outcomes):
    mask, rewards, index = outcomes
    theirs, _ = core_algos.compute_opo_outcome_advantage(rewards, mask, index)
    ours_ = compute_advantages(AdvantageConfig(estimator="opo", std_scaling="none"), rewards, mask, G)
    assert_close(ours_.advantages, theirs, **TOL)


@pytest.mark.parametrize("scale", [True, False])
def test_passk_advantage(outcomes, scale):
    mask, rewards, index = outcomes
    config = {"norm_adv_by_std_in_grpo": scale}
    theirs, _ = core_algos.compute_grpo_passk_outcome_advantage(rewards, mask, index, epsilon=1e-6, config=config)
    cfg = AdvantageConfig(estimator="passk", std_scaling="group" if scale else "none", std_eps=1e-6)
    assert_close(compute_advantages(cfg, rewards, mask, G).advantages, theirs, **TOL)


def test_remax_advantage(outcomes):
    mask, rewards, _ = outcomes
    baselines = torch.randn(B)
    theirs, _ = core_algos.compute_remax_outcome_advantage(rewards, baselines, mask)
    ours_ = compute_advantages(
        AdvantageConfig(estimator="remax", std_scaling="none"), rewards, mask, 1, baselines=baselines
    )
    assert_close(ours_.advantages, theirs, **TOL)


def test_gpg_advantage(outcomes):
    mask, rewards, index = outcomes
    theirs, _ = core_algos.compute_gpg_outcome_advantage(rewards, mask, index)
    cfg = AdvantageConfig(std_scaling="none", gpg_alpha="nonzero_reward")
    assert_close(compute_advantages(cfg, rewards, mask, G).advantages, theirs, **TOL)


def test_gdpo_single_reward(outcomes):
    mask, rewards, index = outcomes
    theirs, _ = core_algos.compute_gdpo_outcome_advantage(rewards, mask, index, epsilon=1e-6)
    cfg = AdvantageConfig(std_scaling="group_batch_whiten", std_eps=1e-6, whiten_eps=1e-8)
    assert_close(compute_advantages(cfg, rewards, mask, G).advantages, theirs, **TOL)


class DictConfig(dict):
    """The ``config.get`` interface verl's GDPO reads its reward keys and weights from."""


def test_gdpo_two_rewards(outcomes):
    mask, rewards, index = outcomes
    correctness = torch.randint(0, 2, (B,)).double()
    finished = torch.randint(0, 2, (B,)).double()
    prompt_length = 3
    batch_view = {
        "prompts": torch.zeros(B, prompt_length),
        "attention_mask": torch.cat([torch.ones(B, prompt_length), mask], 1).long(),
    }
    config = DictConfig(gdpo_reward_keys=["a", "b"], gdpo_reward_weights=[1.0, 0.5])
    non_tensor = {"a": correctness.numpy(), "b": finished.numpy()}
    theirs, _ = core_algos.compute_gdpo_outcome_advantage(
        rewards, mask, index, epsilon=1e-6, config=config, non_tensor_batch=non_tensor, batch=batch_view
    )
    cfg = load_config(
        overrides=[
            "reward.functions={correctness: 1.0, finished: 0.5}",
            "reward.combine=normalize_then_sum",
            "advantage.std_scaling=batch_whiten",
            "advantage.std_eps=1e-6",
            "advantage.whiten_eps=1e-8",
            f"rollout.group_size={G}",
        ]
    )
    combined = combine_rewards(cfg, torch.stack([correctness, finished], dim=-1), G)
    mine = compute_advantages(cfg.advantage, place_outcome_reward(combined, mask), mask, G)
    assert_close(mine.advantages, theirs.double(), **TOL)


@pytest.mark.parametrize("estimator", ["group_mean", "rloo"])
def test_groups_by_index_with_unequal_and_singleton_groups(outcomes, estimator):
    mask, rewards, _ = outcomes
    index = np.array([2, 0, 1, 0, 2, 2, 3, 1, 0, 2, 1, 0, 4, 4, 5, 5, 5, 0, 1, 2, 3, 3, 1, 6])  # group 6: one member
    verl_fn = (
        core_algos.compute_grpo_outcome_advantage
        if estimator == "group_mean"
        else core_algos.compute_rloo_outcome_advantage
    )
    theirs, _ = (
        verl_fn(rewards.clone(), mask, index, epsilon=1e-6)
        if estimator == "group_mean"
        else verl_fn(rewards.clone(), mask, index)
    )
    cfg = AdvantageConfig(
        estimator=estimator,
        std_scaling="group" if estimator == "group_mean" else "none",
        std_eps=1e-6,
        singleton_groups="raw",
    )
    assert_close(compute_advantages(cfg, rewards, mask, torch.from_numpy(index)).advantages, theirs, **TOL)


@pytest.mark.parametrize("keep_mean", [False, True])
def test_whitening_with_and_without_the_mean(outcomes, keep_mean):
    mask = outcomes[0]
    values = torch.randn(B, T)
    assert_close(
        masked_whiten(values, mask, 1e-8, keep_mean),
        verl_F.masked_whiten(values, mask, shift_mean=not keep_mean),
        **TOL,
    )


@pytest.mark.parametrize("estimator", ["abs", "k1+", "k3+"])
def test_kl_kinds_values_and_gradients(estimator):
    logprobs = (torch.randn(8, T) * 2).requires_grad_()
    ref = torch.randn(8, T) * 2
    mine = kl_estimate(logprobs, ref, estimator, 10.0 if estimator == "k3+" else None)
    theirs = core_algos.kl_penalty(logprobs, ref, estimator)
    assert_close(mine, theirs, **TOL)
    weights = torch.randn(8, T)
    assert_close(
        torch.autograd.grad((mine * weights).sum(), logprobs)[0],
        torch.autograd.grad((theirs * weights).sum(), logprobs)[0],
        **TOL,
    )


def test_adaptive_kl_controller():
    controller = core_algos.AdaptiveKLController(init_kl_coef=0.05, target_kl=0.1, horizon=1000)
    coef = 0.05
    for kl in [0.02, 0.3, 0.1, 0.11, 0.0]:
        controller.update(kl, n_steps=B)
        coef = adapted_coef(coef, kl, 0.1, 1000, B)
        assert coef == pytest.approx(controller.value, rel=1e-12)


@pytest.mark.parametrize("mode", ["token_mean", "token_sum", "seq_mean_token_mean", "seq_mean_token_sum"])
def test_global_denominators_with_data_parallel_scaling(mode):
    """Two processes: each aggregates its half with the global counts, and the update multiplies it by the process
    count (2) before DDP averages the gradients; verl's agg_loss with dp_size=2."""
    lengths = torch.randint(1, T + 1, (B,))
    mask = (torch.arange(T) < lengths.unsqueeze(-1)).double()
    loss = torch.randn(B, T)
    mine_total, theirs_total = 0.0, 0.0
    for part in range(2):
        rows = slice(part * B // 2, (part + 1) * B // 2)
        normalizer = Normalizer(float(mask.sum()), float(B))
        mine = aggregate(loss[rows], mask[rows], mode, normalizer) * 2
        theirs = core_algos.agg_loss(
            loss[rows], mask[rows], mode.replace("_", "-"), dp_size=2, batch_num_tokens=mask.sum(), global_batch_size=B
        )
        assert_close(mine, theirs, **TOL)
        mine_total, theirs_total = mine_total + mine, theirs_total + theirs
    single = aggregate(loss, mask, mode, Normalizer.from_mask(mask))
    assert_close(mine_total / 2, single, **TOL)  # the averaged gradient is the one-process one


@pytest.mark.parametrize("level", ["token", "sequence"])
@pytest.mark.parametrize(("mode", "low", "threshold"), [("truncate", None, 2.0), ("mask", 0.5, "0.5_2.0")])
def test_rollout_correction_weights(level, mode, low, threshold):
    lengths = torch.randint(1, T + 1, (B,))
    mask = (torch.arange(T) < lengths.unsqueeze(-1)).double()
    old = -torch.rand(B, T) * 3
    sampler = old + (0.05 if level == "sequence" else 0.6) * torch.randn(B, T)
    theirs, _ = rollout_corr.compute_rollout_correction_weights(old - sampler, mask, level, threshold)
    assert_close(correction_weights(old, sampler, mask, mode, level, low, 2.0), theirs, **TOL)
