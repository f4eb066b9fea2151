"""ReMax's dense-reward convention: hand-computed advantages, ``remax`` on outcome rewards, and verl's ``remax``."""

import torch
from torch.testing import assert_close

from algos.config.presets import load_config
from algos.core.advantages import compute_advantages
from algos.core.shaping import place_outcome_reward
from tests.peers import import_peer


def advantages(estimator, rewards, mask, baselines):
    cfg = load_config(overrides=[f"advantage.estimator={estimator}", "advantage.std_scaling=none"]).advantage
    return compute_advantages(cfg, rewards, mask, 1, baselines=baselines).advantages


def test_reward_to_come_by_hand():
    rewards = torch.tensor([[-0.1, -0.2, 1.0 - 0.3, 0.0]])  # per-token KL penalties, the outcome on the last real token
    mask = torch.tensor([[1.0, 1.0, 1.0, 0.0]])
    ours = advantages("remax_reward_to_go", rewards, mask, torch.tensor([0.5]))
    assert_close(ours, torch.tensor([[0.4 - 0.5, 0.5 - 0.5, 0.7 - 0.5, 0.0]]))
    assert_close(advantages("remax", rewards, mask, torch.tensor([0.5])), torch.tensor([[-0.1, -0.1, -0.1, 0.0]]))


def test_equals_remax_when_the_reward_is_one_outcome():
    lengths = torch.randint(1, 7, (6,))
    mask = (torch.arange(6) < lengths.unsqueeze(-1)).float()
    rewards, baselines = place_outcome_reward(torch.randn(6), mask), torch.randn(6)
    assert_close(
        advantages("remax_reward_to_go", rewards, mask, baselines), advantages("remax", rewards, mask, baselines)
    )


def test_agrees_with_verl_on_dense_rewards():
    core_algos = import_peer("verl.trainer.ppo.core_algos")
    lengths = torch.randint(1, 9, (12,))
    mask = (torch.arange(8) < lengths.unsqueeze(-1)).double()
    rewards, baselines = torch.randn(12, 8) * mask, torch.randn(12).double()
    theirs, _ = core_algos.compute_remax_outcome_advantage(rewards, baselines, mask)
    assert_close(advantages("remax_reward_to_go", rewards, mask, baselines), theirs, atol=1e-6, rtol=1e-6)
