"""Advantage estimators: per-token rewards (B, T) -> per-token advantages (B, T).

Shapes: B = P * G sequences laid out group by group (rows ``g*G .. g*G+G-1`` answer prompt ``g``),
T padded response length. ``mask`` (B, T) is 1 on real response tokens, 0 on padding. Outcome
rewards sit on the last real token of each response (see :func:`algos.shaping.place_outcome_reward`),
so ``token_rewards.sum(-1)`` is the scalar reward R_i. Every returned advantage is 0 on padding.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from algos.config import GROUP_ESTIMATORS, AdvantageConfig
from algos.masked import masked_whiten


@dataclass(frozen=True)
class Advantages:
    """Estimator output: advantages (B, T) for the policy and, with a critic, returns (B, T) as its targets."""

    advantages: torch.Tensor
    returns: torch.Tensor | None = None


def _grouped(scores: torch.Tensor, group_size: int) -> torch.Tensor:
    if scores.numel() % group_size:
        raise ValueError(f"{scores.numel()} sequences do not split into groups of {group_size}")
    return scores.view(-1, group_size)  # (P, G)


def group_mean_advantage(scores: torch.Tensor, group_size: int) -> torch.Tensor:
    """Â_i = R_i − mean_j R_j over the prompt's group (Dr. GRPO; GRPO before std scaling).

    scores: (B,) outcome rewards. Returns (B,). Sums to zero within every group.
    """
    grouped = _grouped(scores, group_size)
    return (grouped - grouped.mean(dim=1, keepdim=True)).reshape(-1)


def rloo_advantage(scores: torch.Tensor, group_size: int) -> torch.Tensor:
    """Â_i = R_i − mean_{j≠i} R_j, the leave-one-out baseline (RLOO); equals G/(G−1) × group mean.

    scores: (B,) outcome rewards, G >= 2. Returns (B,).
    """
    grouped = _grouped(scores, group_size)
    others_mean = (grouped.sum(dim=1, keepdim=True) - grouped) / (group_size - 1)
    return (grouped - others_mean).reshape(-1)


def group_std(scores: torch.Tensor, group_size: int) -> torch.Tensor:
    """Unbiased std of each prompt's G rewards, repeated for its rows: (B,) -> (B,)."""
    return _grouped(scores, group_size).std(dim=1).repeat_interleave(group_size)


def discounted_returns(token_rewards: torch.Tensor, mask: torch.Tensor, gamma: float) -> torch.Tensor:
    """Return G_t = Σ_{l>=0} γ^l r_{t+l} over real tokens; (B, T) -> (B, T), 0 on padding.

    Padding neither adds reward nor discounts, so a reward after a padded span still propagates.
    """
    returns = torch.zeros_like(token_rewards)
    running = torch.zeros_like(token_rewards[:, 0])
    for t in reversed(range(token_rewards.shape[1])):
        step = token_rewards[:, t] + gamma * running
        returns[:, t] = step * mask[:, t]
        running = torch.where(mask[:, t].bool(), step, running)
    return returns


def gae(
    token_rewards: torch.Tensor,
    values: torch.Tensor,
    mask: torch.Tensor,
    gamma: float,
    lam: float | torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalised advantage estimation (Schulman et al. 2016) with a per-sequence λ.

    δ_t = r_t + γ V_{t+1} − V_t, Â_t = Σ_l (γλ)^l δ_{t+l}, returns = Â + V. The value after the last
    real token is 0 (the episode ends). Padding is skipped: it carries the next real token's value
    and advantage through unchanged, as verl does.

    token_rewards, values, mask: (B, T). lam: a float or a (B,) tensor (length-adaptive λ).
    Returns (advantages, returns), both (B, T) and 0 on padding.
    """
    lam = torch.as_tensor(lam, dtype=values.dtype, device=values.device).expand(values.shape[0])
    advantages = torch.zeros_like(values)
    next_value = torch.zeros_like(values[:, 0])
    running = torch.zeros_like(values[:, 0])
    for t in reversed(range(values.shape[1])):
        real = mask[:, t].bool()
        delta = token_rewards[:, t] + gamma * next_value - values[:, t]
        step = delta + gamma * lam * running
        running = torch.where(real, step, running)
        next_value = torch.where(real, values[:, t], next_value)
        advantages[:, t] = running
    advantages = advantages * mask
    return advantages, (advantages + values) * mask


def length_adaptive_lambda(lengths: torch.Tensor, alpha: float, low: float = 0.0, high: float = 1.0) -> torch.Tensor:
    """VAPO's length-adaptive λ_policy = 1 − 1/(α·l), clamped to [low, high].

    lengths: (B,) response lengths |o_i|. Returns (B,). The unclamped value is <= 0 for l <= 1/α,
    hence the clamp (default [0, 1]); a zero length maps to ``low``.
    """
    lam = 1.0 - 1.0 / (alpha * lengths.to(torch.float64))  # 1/0 = inf, so l = 0 clamps to `low`
    return lam.clamp(low, high)


def _group_advantages(cfg: AdvantageConfig, scores: torch.Tensor, group_size: int) -> torch.Tensor:
    """Group estimator with its std scaling: scores (B,) -> (B,)."""
    if cfg.estimator == "rloo":
        advantages = rloo_advantage(scores, group_size)
    else:
        advantages = group_mean_advantage(scores, group_size)
    if cfg.std_scaling == "group":
        return advantages / (group_std(scores, group_size) + cfg.std_eps)
    if cfg.std_scaling == "batch":
        return advantages / (scores.std() + cfg.std_eps)
    return advantages


def _gae_advantages(
    cfg: AdvantageConfig, token_rewards: torch.Tensor, mask: torch.Tensor, values: torch.Tensor | None
) -> Advantages:
    """GAE with fixed or length-adaptive λ_policy; critic targets from λ_critic when decoupled."""
    if values is None:
        raise ValueError("estimator 'gae' needs values from the critic")
    lam_policy: float | torch.Tensor = cfg.lambda_policy
    if cfg.adaptive_lambda_alpha is not None:
        lam_policy = length_adaptive_lambda(
            mask.sum(dim=-1), cfg.adaptive_lambda_alpha, cfg.adaptive_lambda_min, cfg.adaptive_lambda_max
        )
    advantages, returns = gae(token_rewards, values, mask, cfg.gamma, lam_policy)
    if cfg.lambda_critic is not None:
        _, returns = gae(token_rewards, values, mask, cfg.gamma, cfg.lambda_critic)
    return Advantages(advantages, returns)


def compute_advantages(
    cfg: AdvantageConfig,
    token_rewards: torch.Tensor,
    mask: torch.Tensor,
    group_size: int,
    values: torch.Tensor | None = None,
) -> Advantages:
    """Apply the configured estimator and scaling: the one place advantage toggles are read.

    token_rewards, mask, values: (B, T); values only for ``gae``. Group estimators use the
    contiguous group layout of this module's docstring.
    """
    if cfg.estimator in GROUP_ESTIMATORS:
        per_sequence = _group_advantages(cfg, token_rewards.sum(dim=-1), group_size)  # (B,)
        result = Advantages(per_sequence.unsqueeze(-1) * mask)
    elif cfg.estimator == "return":
        result = Advantages(discounted_returns(token_rewards, mask, cfg.gamma))
    else:
        result = _gae_advantages(cfg, token_rewards, mask, values)
    if cfg.std_scaling == "batch_whiten":
        result = Advantages(masked_whiten(result.advantages, mask, cfg.std_eps) * mask, result.returns)
    return result
