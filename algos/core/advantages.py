"""Advantage estimators: per-token rewards (B, T) -> per-token advantages (B, T).

Shapes: B = P * G sequences laid out group by group (rows ``g*G .. g*G+G-1`` answer prompt ``g``),
or in any order with a (B,) group index; T padded response length. ``mask`` (B, T) is 1 on real response tokens, 0 on padding. Outcome
rewards sit on the last real token of each response (see :func:`algos.core.shaping.place_outcome_reward`),
so ``token_rewards.sum(-1)`` is the scalar reward R_i. Every returned advantage is 0 on padding.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch

from algos.config.schema import OUTCOME_ESTIMATORS, AdvantageConfig
from algos.core.masked import masked_whiten


@dataclass(frozen=True)
class Advantages:
    """Estimator output: advantages (B, T) for the policy and, with a critic, returns (B, T) as its targets."""

    advantages: torch.Tensor
    returns: torch.Tensor | None = None


Groups = int | torch.Tensor
"""A group size G (rows ``g*G .. g*G+G-1`` answer prompt ``g``), or a (B,) integer tensor naming each row's group
(any sizes, any order: a singleton group or members far apart)."""


def group_index(groups: Groups, batch_size: int, device: torch.device | None = None) -> torch.Tensor:
    """Each row's group id (B,): ``groups`` itself when it is an index, else ``arange(B) // G``."""
    if isinstance(groups, torch.Tensor):
        if groups.shape != (batch_size,):
            raise ValueError(f"group index of shape {tuple(groups.shape)} for {batch_size} sequences")
        return groups.long()
    if batch_size % groups:
        raise ValueError(f"{batch_size} sequences do not split into groups of {groups}")
    return torch.arange(batch_size, device=device) // groups


@dataclass(frozen=True)
class GroupStats:
    """Per-row statistics of its group's scorable (non-NaN) rewards, all (B,).

    count: scorable members; total: their sum; mean; std: unbiased (NaN with one member).
    """

    count: torch.Tensor
    total: torch.Tensor
    mean: torch.Tensor
    std: torch.Tensor


def group_stats(scores: torch.Tensor, groups: Groups) -> GroupStats:
    """Statistics of each row's group, ignoring NaN (unscorable) rewards: scores (B,) -> :class:`GroupStats`."""
    scorable = ~torch.isnan(scores)
    if isinstance(groups, int) and bool(scorable.all()):  # the contiguous layout: torch's own reductions
        group_index(groups, scores.numel())  # raises unless the rows split into groups of this size
        grouped = scores.view(-1, groups)  # (P, G)
        repeat = functools.partial(torch.Tensor.repeat_interleave, repeats=groups)
        return GroupStats(
            count=torch.full_like(scores, float(groups)),
            total=repeat(grouped.sum(dim=1)),
            mean=repeat(grouped.mean(dim=1)),
            std=repeat(grouped.std(dim=1)),
        )
    ids = group_index(groups, scores.numel(), scores.device)
    _, ids = ids.unique(return_inverse=True)  # compact ids 0 .. P-1
    values = torch.where(scorable, scores, torch.zeros_like(scores))
    size = int(ids.max()) + 1 if ids.numel() else 0

    def per_group(x: torch.Tensor) -> torch.Tensor:
        return torch.zeros(size, dtype=x.dtype, device=x.device).index_add_(0, ids, x)[ids]

    count = per_group(scorable.to(scores.dtype))
    total = per_group(values)
    mean = total / count  # NaN for a group with no scorable member
    squares = per_group(torch.where(scorable, (scores - mean) ** 2, torch.zeros_like(scores)))
    std = (squares / (count - 1)).sqrt()  # NaN (0/0) or inf for a single member; only used where count > 1
    return GroupStats(count, total, mean, std)


def group_mean_advantage(scores: torch.Tensor, groups: Groups) -> torch.Tensor:
    """Â_i = R_i − mean_j R_j over the prompt's group (Dr. GRPO; GRPO before std scaling).

    scores: (B,) outcome rewards. Returns (B,). Sums to zero within every group.
    """
    return scores - group_stats(scores, groups).mean


def rloo_advantage(scores: torch.Tensor, groups: Groups) -> torch.Tensor:
    """Â_i = R_i − mean_{j≠i} R_j, the leave-one-out baseline (RLOO); equals G/(G−1) × group mean.

    scores: (B,) outcome rewards, G >= 2. Returns (B,); NaN for a group's only scorable member.
    """
    stats = group_stats(scores, groups)
    return scores - (stats.total - scores) / (stats.count - 1)


def opo_advantage(scores: torch.Tensor, lengths: torch.Tensor, groups: Groups) -> torch.Tensor:
    """OPO's Â_i = R_i − Σ_j |o_j| R_j / Σ_j |o_j|: the group baseline weighted by response length.

    scores, lengths: (B,). The length-weighted mean is the variance-optimal constant baseline when
    the gradient's norm grows with length (OPO, Hao et al. 2025). Returns (B,).
    """
    weighted = group_stats(scores * lengths, groups).total
    scorable_lengths = torch.where(torch.isnan(scores), torch.zeros_like(lengths), lengths)
    return scores - weighted / group_stats(scorable_lengths.to(scores.dtype), groups).total


def passk_advantage(scores: torch.Tensor, groups: Groups) -> torch.Tensor:
    """Pass@k training's Â: R_max − R_second on each group's best response, 0 on the others.

    scores: (B,); ties go to the first row of the group. Every group needs two scorable members.
    """
    ids = group_index(groups, scores.numel(), scores.device)
    advantages = torch.zeros_like(scores)
    for group in ids.unique():
        rows = (ids == group).nonzero().squeeze(-1)
        rows = rows[~torch.isnan(scores[rows])]
        if rows.numel() < 2:
            raise ValueError(
                f"advantage.estimator=passk needs two scorable responses per group; group {int(group)} has {rows.numel()}"
            )
        top = torch.topk(scores[rows], 2)
        advantages[rows[top.indices[0]]] = top.values[0] - top.values[1]
    return advantages


def group_std(scores: torch.Tensor, groups: Groups) -> torch.Tensor:
    """Unbiased std of each prompt's rewards (NaN ignored), repeated for its rows: (B,) -> (B,)."""
    return group_stats(scores, groups).std


def gpg_alpha(scores: torch.Tensor, groups: Groups, kind: str) -> float:
    """GPG's α = B / B_valid (B_valid >= 1). informative: responses of groups whose rewards differ;
    nonzero_reward: responses with a nonzero reward (verl). scores: (B,)."""
    if kind == "informative":
        valid = (group_stats(scores, groups).std > 0).sum()
    else:
        valid = torch.count_nonzero(torch.nan_to_num(scores))
    return scores.numel() / max(int(valid), 1)


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


def _nan_std(values: torch.Tensor) -> torch.Tensor:
    """Unbiased std of the non-NaN entries of ``values`` (B,)."""
    kept = values[~torch.isnan(values)]
    return kept.std() if kept.numel() > 1 else torch.zeros((), dtype=values.dtype, device=values.device)


def _group_advantages(
    cfg: AdvantageConfig, scores: torch.Tensor, groups: Groups, lengths: torch.Tensor
) -> torch.Tensor:
    """Group estimator with its group std scaling: scores (B,) -> (B,); NaN where a row cannot be scored."""
    if cfg.estimator == "rloo":
        advantages = rloo_advantage(scores, groups)
    elif cfg.estimator == "opo":
        advantages = opo_advantage(scores, lengths, groups)
    elif cfg.estimator == "passk":
        advantages = passk_advantage(scores, groups)
    else:
        advantages = group_mean_advantage(scores, groups)
    stats = group_stats(scores, groups)
    singleton = stats.count == 1
    if cfg.singleton_groups == "raw":  # verl: baseline 0 and std 1 for a group of one
        advantages = torch.where(singleton, scores, advantages)
    else:
        advantages = torch.where(singleton, torch.zeros_like(advantages), advantages)
    if cfg.gpg_alpha != "none":
        advantages = advantages * gpg_alpha(scores, groups, cfg.gpg_alpha)
    if cfg.std_scaling in ("group", "group_batch_whiten"):
        std = torch.where(singleton, torch.ones_like(stats.std), stats.std)
        return advantages / (std + cfg.std_eps)
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
    groups: Groups,
    values: torch.Tensor | None = None,
    baselines: torch.Tensor | None = None,
) -> Advantages:
    """Apply the configured estimator and scaling: the one place advantage toggles are read.

    token_rewards, mask, values: (B, T); values only for ``gae``. groups: the group size of the
    contiguous layout of this module's docstring, or a (B,) group index. baselines: (B,) ReMax's
    greedy-response reward per row, only for ``remax``. A row whose outcome reward is NaN is
    unscorable: group and batch statistics leave it out and its advantage is 0.
    """
    scores = token_rewards.sum(dim=-1)  # (B,)
    unscorable = torch.isnan(scores)
    token_rewards = torch.nan_to_num(token_rewards, nan=0.0)
    if cfg.estimator in OUTCOME_ESTIMATORS:
        if cfg.estimator == "remax":
            if baselines is None:
                raise ValueError("estimator 'remax' needs the greedy responses' rewards as baselines")
            per_sequence = scores - baselines
        else:
            per_sequence = _group_advantages(cfg, scores, groups, mask.sum(dim=-1))
        if cfg.std_scaling == "batch":
            per_sequence = per_sequence / (_nan_std(scores) + cfg.std_eps)
        elif cfg.std_scaling == "batch_normalize":
            per_sequence = (per_sequence - per_sequence.nanmean()) / (_nan_std(per_sequence) + cfg.std_eps)
        per_sequence = torch.nan_to_num(per_sequence, nan=0.0)  # (B,)
        result = Advantages(per_sequence.unsqueeze(-1) * mask)
    elif cfg.estimator == "return":
        result = Advantages(discounted_returns(token_rewards, mask, cfg.gamma))
    else:
        result = _gae_advantages(cfg, token_rewards, mask, values)
    if cfg.std_scaling in ("batch_whiten", "group_batch_whiten"):
        scorable_mask = mask * (~unscorable).unsqueeze(-1)
        eps = cfg.whiten_eps if cfg.whiten_eps is not None else cfg.std_eps
        whitened = masked_whiten(result.advantages, scorable_mask, eps, cfg.whiten_keep_mean)
        result = Advantages(whitened * mask, result.returns)
    if bool(unscorable.any()):
        result = Advantages(result.advantages * (~unscorable).unsqueeze(-1), result.returns)
    return result
