"""Reward functions and how several of them combine into one outcome reward per response.

A reward function, a member of :data:`~algos.config.registry.REWARD_FUNCTIONS`, maps the graded
responses of a batch (:class:`Graded`) and the config to one value per response (B,), NaN where it
cannot score one. ``reward.functions`` names the functions and their weights; ``reward.combine``
sums the weighted values (``sum_then_normalize``) or standardises each within its group first
(``normalize_then_sum``, TRL's multi-objective aggregation and GDPO's decoupled normalisation).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from algos.config.registry import REWARD_FUNCTIONS
from algos.config.schema import RLConfig
from algos.core.advantages import Groups, group_stats
from algos.core.shaping import correctness_reward


@dataclass(frozen=True)
class Graded:
    """A batch of graded responses, all (B,): correct (bool), scorable (bool: the verifier gave a verdict),
    lengths (tokens), truncated (bool: no end within the budget)."""

    correct: torch.Tensor
    scorable: torch.Tensor
    lengths: torch.Tensor
    truncated: torch.Tensor


@REWARD_FUNCTIONS.register("correctness")
def correctness(graded: Graded, cfg: RLConfig) -> torch.Tensor:
    """reward.correct / reward.incorrect by the verifier's verdict; NaN where it gave none."""
    values = correctness_reward(graded.correct, cfg.reward.correct, cfg.reward.incorrect)
    return torch.where(graded.scorable, values, torch.full_like(values, torch.nan))


@REWARD_FUNCTIONS.register("finished")
def finished(graded: Graded, cfg: RLConfig) -> torch.Tensor:
    """1 for a response that ended within the generation budget, 0 for one cut off."""
    return (~graded.truncated).to(torch.get_default_dtype())


def reward_matrix(cfg: RLConfig, graded: Graded) -> torch.Tensor:
    """Every configured function's rewards, (B, K) in the order of ``reward.functions``."""
    return torch.stack([REWARD_FUNCTIONS[name].function(graded, cfg) for name in cfg.reward.functions], dim=-1)


def combine_rewards(cfg: RLConfig, rewards: torch.Tensor, groups: Groups) -> torch.Tensor:
    """One reward per response (B,) from the (B, K) matrix; NaN where every function gave NaN.

    sum_then_normalize: Σ_k w_k r_k over the non-NaN terms. normalize_then_sum: Σ_k w_k (r_k − mean_k)
    / (std_k + advantage.std_eps), mean and unbiased std over the scorable members of the response's
    group (TRL, with its epsilon 1e-4 as std_eps).
    """
    weights = torch.tensor(list(cfg.reward.functions.values()), dtype=rewards.dtype, device=rewards.device)
    if cfg.reward.combine == "normalize_then_sum":
        columns = []
        for column in rewards.unbind(dim=-1):
            stats = group_stats(column, groups)
            std = torch.where(stats.count > 1, stats.std, torch.zeros_like(stats.std))
            columns.append((column - stats.mean) / (std + cfg.advantage.std_eps))
        rewards = torch.stack(columns, dim=-1)
    combined = (rewards * weights).nansum(dim=-1)
    return torch.where(torch.isnan(rewards).all(dim=-1), torch.full_like(combined, torch.nan), combined)
