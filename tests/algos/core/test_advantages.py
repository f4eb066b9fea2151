import pytest
import torch
from torch.testing import assert_close

from algos.config.schema import AdvantageConfig
from algos.core.advantages import (
    compute_advantages,
    discounted_returns,
    gae,
    group_mean_advantage,
    length_adaptive_lambda,
    rloo_advantage,
)
from algos.core.masked import masked_whiten
from algos.core.shaping import place_outcome_reward

SCORES = torch.tensor([1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0], dtype=torch.float64)  # two groups of G = 4


def outcome_batch(scores, lengths, T=5):
    mask = (torch.arange(T) < torch.tensor(lengths).unsqueeze(-1)).double()
    return place_outcome_reward(scores, mask), mask


def test_group_mean_hand_values_and_zero_sum():
    adv = group_mean_advantage(SCORES, 4)
    assert_close(adv, torch.tensor([0.5, -0.5, -0.5, 0.5, 0.25, 0.25, 0.25, -0.75]))
    assert_close(adv.view(2, 4).sum(1), torch.zeros(2))


def test_group_std_scaling_hand_values():
    rewards, mask = outcome_batch(SCORES, [1, 2, 3, 4, 5, 1, 2, 3])
    cfg = AdvantageConfig(std_scaling="group", std_eps=1e-6)
    adv = compute_advantages(cfg, rewards, mask, 4).advantages
    # group 1: unbiased std = sqrt(1/3); group 2: unbiased std = 0.5
    expected = torch.tensor([0.5, -0.5, -0.5, 0.5]) / (3**-0.5 + 1e-6)
    expected = torch.cat([expected, torch.tensor([0.25, 0.25, 0.25, -0.75]) / (0.5 + 1e-6)])
    assert_close(adv.sum(-1) / mask.sum(-1), expected)
    assert_close(adv * (1 - mask), torch.zeros_like(adv))  # zero on padding
    assert_close((adv.sum(-1) / mask.sum(-1)).view(2, 4).sum(1), torch.zeros(2), atol=1e-12, rtol=0)


def test_batch_std_scaling_uses_one_std_of_all_rewards():
    rewards, mask = outcome_batch(SCORES, [2] * 8)
    adv = compute_advantages(AdvantageConfig(std_scaling="batch", std_eps=1e-4), rewards, mask, 4).advantages
    assert_close(adv[:, 0], group_mean_advantage(SCORES, 4) / (SCORES.std() + 1e-4))


def test_no_scaling_is_plain_group_mean():
    rewards, mask = outcome_batch(SCORES, [3] * 8)
    adv = compute_advantages(AdvantageConfig(std_scaling="none"), rewards, mask, 4).advantages
    assert_close(adv[:, 2], group_mean_advantage(SCORES, 4))


def test_rloo_hand_value_and_scaled_group_mean():
    adv = rloo_advantage(SCORES, 4)
    assert_close(adv[0], torch.tensor(1.0 - 1.0 / 3.0))
    scores = torch.randn(24)
    assert_close(rloo_advantage(scores, 6), 6 / 5 * group_mean_advantage(scores, 6))


def test_discounted_returns_skip_padding():
    rewards = torch.tensor([[0.0, 0.0, 2.0], [1.0, 0.0, 0.0]])
    mask = torch.tensor([[1.0, 1.0, 1.0], [1.0, 0.0, 0.0]])
    assert_close(discounted_returns(rewards, mask, 0.5), torch.tensor([[0.5, 1.0, 2.0], [1.0, 0.0, 0.0]]))


def test_gae_hand_values_with_padding():
    rewards = torch.tensor([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0]])
    values = torch.tensor([[0.5, 0.6, 0.7], [0.2, 0.4, 9.0]])
    mask = torch.tensor([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]])
    adv, ret = gae(rewards, values, mask, gamma=1.0, lam=0.5)
    assert_close(adv, torch.tensor([[0.225, 0.25, 0.3], [0.5, 0.6, 0.0]]))
    assert_close(ret, torch.tensor([[0.725, 0.85, 1.0], [0.7, 1.0, 0.0]]))


def test_gae_lambda_one_is_monte_carlo_return_minus_value():
    lengths = torch.tensor([7, 3, 10, 1])
    mask = (torch.arange(10) < lengths.unsqueeze(-1)).double()
    rewards = place_outcome_reward(torch.randn(4), mask)
    values = torch.randn(4, 10)
    adv, ret = gae(rewards, values, mask, gamma=1.0, lam=1.0)
    mc = discounted_returns(rewards, mask, 1.0)
    assert_close(adv, (mc - values) * mask)
    assert_close(ret, mc)


def test_gae_per_sequence_lambda_matches_scalar_runs():
    mask = torch.ones(3, 6)
    rewards = place_outcome_reward(torch.randn(3), mask)
    values = torch.randn(3, 6)
    lam = torch.tensor([0.0, 0.5, 0.9])
    adv, _ = gae(rewards, values, mask, 1.0, lam)
    for i in range(3):
        assert_close(adv[i], gae(rewards[i : i + 1], values[i : i + 1], mask[i : i + 1], 1.0, float(lam[i]))[0][0])


def test_length_adaptive_lambda_and_clamp():
    lam = length_adaptive_lambda(torch.tensor([40, 100, 20, 10, 0]), alpha=0.05)
    assert_close(lam, torch.tensor([0.5, 0.8, 0.0, 0.0, 0.0]))
    assert_close(length_adaptive_lambda(torch.tensor([10]), 0.05, low=0.3, high=0.9), torch.tensor([0.3]))


def test_decoupled_gae_critic_targets_are_monte_carlo():
    mask = (torch.arange(8) < torch.tensor([[8], [5]])).double()
    rewards = place_outcome_reward(torch.tensor([1.0, -1.0]), mask)
    values = torch.randn(2, 8) * mask
    cfg = AdvantageConfig(estimator="gae", std_scaling="none", lambda_policy=0.95, lambda_critic=1.0)
    out = compute_advantages(cfg, rewards, mask, 1, values)
    assert_close(out.returns, discounted_returns(rewards, mask, 1.0))
    assert_close(out.advantages, gae(rewards, values, mask, 1.0, 0.95)[0])
    coupled = compute_advantages(AdvantageConfig(estimator="gae", std_scaling="none"), rewards, mask, 1, values)
    assert_close(coupled.returns, gae(rewards, values, mask, 1.0, 0.95)[1])


def test_length_adaptive_gae_uses_response_lengths():
    mask = (torch.arange(60) < torch.tensor([[40], [60]])).double()
    rewards = place_outcome_reward(torch.tensor([1.0, 0.0]), mask)
    values = torch.rand(2, 60) * mask
    cfg = AdvantageConfig(estimator="gae", std_scaling="none", adaptive_lambda_alpha=0.05)
    adv = compute_advantages(cfg, rewards, mask, 1, values).advantages
    lam = torch.tensor([0.5, 1.0 - 1.0 / 3.0])
    assert_close(adv, gae(rewards, values, mask, 1.0, lam)[0])


def test_batch_whiten_is_token_weighted_unbiased():
    values = torch.tensor([[1.0, 1.0, 0.0], [3.0, 0.0, 0.0]])
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    # tokens 1, 1, 3: mean 5/3, unbiased variance (4/9 + 4/9 + 16/9) / 2 = 4/3
    whitened = masked_whiten(values, mask, eps=0.0) * mask
    expected = torch.tensor([[-2 / 3, -2 / 3, 0.0], [4 / 3, 0.0, 0.0]]) / (4 / 3) ** 0.5
    assert_close(whitened, expected)


def test_reinforce_pp_whitens_returns_and_baseline_variant_subtracts_group_mean():
    lengths = torch.tensor([3, 5, 2, 4])
    mask = (torch.arange(5) < lengths.unsqueeze(-1)).double()
    scores = torch.tensor([1.0, 0.0, 1.0, 1.0])
    rewards = place_outcome_reward(scores, mask)
    plain = compute_advantages(AdvantageConfig(estimator="return", std_scaling="batch_whiten"), rewards, mask, 2)
    assert_close(plain.advantages, masked_whiten(scores.unsqueeze(-1) * mask, mask, 1e-6) * mask)
    base = compute_advantages(AdvantageConfig(estimator="group_mean", std_scaling="batch_whiten"), rewards, mask, 2)
    centred = group_mean_advantage(scores, 2).unsqueeze(-1) * mask
    assert_close(base.advantages, masked_whiten(centred, mask, 1e-6) * mask)


def test_gae_without_values_is_an_error():
    rewards, mask = outcome_batch(SCORES, [2] * 8)
    with pytest.raises(ValueError, match="values"):
        compute_advantages(AdvantageConfig(estimator="gae", std_scaling="none"), rewards, mask, 4)
