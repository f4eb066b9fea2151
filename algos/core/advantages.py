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

from algos.config.registry import ADVANTAGE_ESTIMATORS, STD_SCALINGS, EstimatorFacts, ScalingFacts
from algos.config.schema import AdvantageConfig
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


@dataclass(frozen=True)
class AdvantageInputs:
    """What every advantage estimator takes. scores (B,): outcome rewards R_i (NaN: unscorable);
    token_rewards, mask (B, T); groups: see :data:`Groups`; lengths (B,): response lengths; values
    (B, T): the critic's, for an estimator with ``needs_critic``; baselines (B,): each row's baseline
    reward, for one with ``needs_baselines``."""

    scores: torch.Tensor
    token_rewards: torch.Tensor
    mask: torch.Tensor
    groups: Groups
    lengths: torch.Tensor
    values: torch.Tensor | None = None
    baselines: torch.Tensor | None = None


@ADVANTAGE_ESTIMATORS.register("group_mean", EstimatorFacts(kind="group"))
def _group_mean(x: AdvantageInputs, cfg: AdvantageConfig) -> Advantages:
    """R_i − mean of the group (GRPO, Dr. GRPO): :func:`group_mean_advantage`."""
    return Advantages(group_mean_advantage(x.scores, x.groups))


@ADVANTAGE_ESTIMATORS.register("rloo", EstimatorFacts(kind="group"))
def _rloo(x: AdvantageInputs, cfg: AdvantageConfig) -> Advantages:
    """R_i − mean of the others (RLOO, Ahmadian et al. 2024): :func:`rloo_advantage`."""
    return Advantages(rloo_advantage(x.scores, x.groups))


@ADVANTAGE_ESTIMATORS.register(
    "opo",
    EstimatorFacts(kind="group"),
    summary="R_i − Σ_j |o_j| R_j / Σ_j |o_j|, the length-weighted baseline of On-Policy RL with Optimal reward "
    "baseline (OPO, Hao et al. 2025, arXiv 2505.23585).",
)
def _opo(x: AdvantageInputs, cfg: AdvantageConfig) -> Advantages:
    """R_i − the length-weighted group mean (OPO): :func:`opo_advantage`."""
    return Advantages(opo_advantage(x.scores, x.lengths, x.groups))


@ADVANTAGE_ESTIMATORS.register(
    "passk",
    EstimatorFacts(kind="group"),
    summary="R_max − R_second on each group's best response, 0 on the others (Pass@k training, Chen et al. 2025, "
    "arXiv 2503.19595; verl grpo_passk).",
)
def _passk(x: AdvantageInputs, cfg: AdvantageConfig) -> Advantages:
    """R_max − R_second on each group's best response (pass@k training): :func:`passk_advantage`."""
    return Advantages(passk_advantage(x.scores, x.groups))


@ADVANTAGE_ESTIMATORS.register("remax", EstimatorFacts(kind="outcome", needs_baselines=True))
def _remax(x: AdvantageInputs, cfg: AdvantageConfig) -> Advantages:
    """R_i − R(greedy response to the same prompt) (ReMax, Li et al. 2023, arXiv 2310.10505), one value per token."""
    if x.baselines is None:
        raise ValueError("estimator 'remax' needs the greedy responses' rewards as baselines")
    return Advantages(x.scores - x.baselines)


@ADVANTAGE_ESTIMATORS.register("return", EstimatorFacts(kind="token"))
def _return(x: AdvantageInputs, cfg: AdvantageConfig) -> Advantages:
    """The discounted return G_t, no baseline (REINFORCE; REINFORCE++, Hu 2025): :func:`discounted_returns`."""
    return Advantages(discounted_returns(x.token_rewards, x.mask, cfg.gamma))


@ADVANTAGE_ESTIMATORS.register("gae", EstimatorFacts(kind="token", needs_critic=True))
def _gae(x: AdvantageInputs, cfg: AdvantageConfig) -> Advantages:
    """GAE with fixed or length-adaptive λ_policy; critic targets from λ_critic when decoupled (PPO, VAPO)."""
    if x.values is None:
        raise ValueError("estimator 'gae' needs values from the critic")
    lam_policy: float | torch.Tensor = cfg.lambda_policy
    if cfg.adaptive_lambda_alpha is not None:
        lam_policy = length_adaptive_lambda(
            x.mask.sum(dim=-1), cfg.adaptive_lambda_alpha, cfg.adaptive_lambda_min, cfg.adaptive_lambda_max
        )
    advantages, returns = gae(x.token_rewards, x.values, x.mask, cfg.gamma, lam_policy)
    if cfg.lambda_critic is not None:
        _, returns = gae(x.token_rewards, x.values, x.mask, cfg.gamma, cfg.lambda_critic)
    return Advantages(advantages, returns)


@dataclass(frozen=True)
class ScalingInputs:
    """What every std scaling takes: per_sequence (B,) the estimator's advantages (NaN: unscorable),
    scores (B,) the outcome rewards, and group: the scores' :class:`GroupStats` under a group estimator
    (None otherwise; the config allows a group scaling only with one)."""

    per_sequence: torch.Tensor
    scores: torch.Tensor
    group: GroupStats | None


@STD_SCALINGS.register(
    "batch_whiten",
    ScalingFacts(whiten=True),
    summary="The per-token advantages whitened over the batch: centred on their token-weighted mean, times rsqrt("
    "token-weighted unbiased variance + eps) (PPO, REINFORCE++; verl's GAE whitening).",
)
@STD_SCALINGS.register("none")
def _unscaled(x: ScalingInputs, cfg: AdvantageConfig) -> torch.Tensor:
    """No scaling (Dr. GRPO)."""
    return x.per_sequence


@STD_SCALINGS.register(
    "group_batch_whiten",
    ScalingFacts(needs="group", whiten=True),
    summary="group, then batch_whiten (GDPO, arXiv 2601.05242; verl's gdpo).",
)
@STD_SCALINGS.register("group", ScalingFacts(needs="group"))
def _by_group_std(x: ScalingInputs, cfg: AdvantageConfig) -> torch.Tensor:
    """Divided by the unbiased std of the group's rewards + std_eps (GRPO; a group of one by 1 + std_eps)."""
    stats = x.group
    std = torch.where(stats.count == 1, torch.ones_like(stats.std), stats.std)
    return x.per_sequence / (std + cfg.std_eps)


@STD_SCALINGS.register("batch", ScalingFacts(needs="per_sequence"))
def _by_batch_std(x: ScalingInputs, cfg: AdvantageConfig) -> torch.Tensor:
    """Divided by the unbiased std of the batch's rewards + std_eps (REINFORCE++ style; TRL scale_rewards='batch')."""
    return x.per_sequence / (_nan_std(x.scores) + cfg.std_eps)


@STD_SCALINGS.register("batch_normalize", ScalingFacts(needs="per_sequence"))
def _batch_normalized(x: ScalingInputs, cfg: AdvantageConfig) -> torch.Tensor:
    """(Â − mean Â) / (std Â + std_eps) over the batch, each response once (TRL RLOO's normalize_advantages)."""
    return (x.per_sequence - x.per_sequence.nanmean()) / (_nan_std(x.per_sequence) + cfg.std_eps)


def _group_adjustments(
    cfg: AdvantageConfig, per_sequence: torch.Tensor, x: AdvantageInputs, stats: GroupStats
) -> torch.Tensor:
    """A group estimator's singleton rule and GPG's α, before the std scaling: (B,) -> (B,)."""
    singleton = stats.count == 1
    if cfg.singleton_groups == "raw":  # verl: baseline 0 and std 1 for a group of one
        per_sequence = torch.where(singleton, x.scores, per_sequence)
    else:
        per_sequence = torch.where(singleton, torch.zeros_like(per_sequence), per_sequence)
    if cfg.gpg_alpha != "none":
        per_sequence = per_sequence * gpg_alpha(x.scores, x.groups, cfg.gpg_alpha)
    return per_sequence


def compute_advantages(
    cfg: AdvantageConfig,
    token_rewards: torch.Tensor,
    mask: torch.Tensor,
    groups: Groups,
    values: torch.Tensor | None = None,
    baselines: torch.Tensor | None = None,
) -> Advantages:
    """Apply the configured estimator and std scaling: the one place advantage toggles are read.

    token_rewards, mask, values: (B, T); values only for an estimator that needs the critic. groups:
    the group size of the contiguous layout of this module's docstring, or a (B,) group index.
    baselines: (B,) each row's baseline reward (ReMax's greedy response), only for an estimator that
    needs baselines. A row whose outcome reward is NaN is unscorable: group and batch statistics
    leave it out and its advantage is 0.

    An estimator with one advantage per response (group and outcome kinds) returns (B,); a group
    estimator's singleton rule and GPG's α apply, then the scaling's per-sequence step, and the value
    is put on every token. A token-level estimator returns (B, T). A whitening scaling then whitens
    the per-token advantages over the batch's scorable tokens.
    """
    scores = token_rewards.sum(dim=-1)  # (B,)
    unscorable = torch.isnan(scores)
    inputs = AdvantageInputs(
        scores, torch.nan_to_num(token_rewards, nan=0.0), mask, groups, mask.sum(dim=-1), values, baselines
    )
    estimator, scaling = ADVANTAGE_ESTIMATORS[cfg.estimator], STD_SCALINGS[cfg.std_scaling]
    result = estimator.function(inputs, cfg)
    if estimator.facts.per_sequence:
        per_sequence, stats = result.advantages, None
        if estimator.facts.kind == "group":
            stats = group_stats(scores, groups)
            per_sequence = _group_adjustments(cfg, per_sequence, inputs, stats)
        per_sequence = scaling.function(ScalingInputs(per_sequence, scores, stats), cfg)
        per_sequence = torch.nan_to_num(per_sequence, nan=0.0)  # (B,)
        result = Advantages(per_sequence.unsqueeze(-1) * mask, result.returns)
    if scaling.facts.whiten:
        scorable_mask = mask * (~unscorable).unsqueeze(-1)
        eps = cfg.whiten_eps if cfg.whiten_eps is not None else cfg.std_eps
        whitened = masked_whiten(result.advantages, scorable_mask, eps, cfg.whiten_keep_mean)
        result = Advantages(whitened * mask, result.returns)
    if bool(unscorable.any()):
        result = Advantages(result.advantages * (~unscorable).unsqueeze(-1), result.returns)
    return result
