"""The policy objectives (``policy_loss.objective``): PPO's clipped surrogate and the others, and the one dispatch.

Every objective is a member of :data:`~algos.config.registry.OBJECTIVES` with one signature: it takes
an :class:`ObjectiveInputs` and the ``policy_loss`` config and returns the per-token loss (B, T), to
be aggregated like the clipped surrogate's, with :class:`~algos.core.surrogate.SurrogateStats`. The
objectives that multiply log π_θ by a detached weight (CISPO, REINFORCE, DPPO, VESPO) have the
gradient of the weighted policy gradient, not of a ratio.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from algos.config.registry import OBJECTIVES, ObjectiveFacts
from algos.config.schema import PolicyLossConfig
from algos.core.masked import masked_mean
from algos.core.surrogate import SurrogateStats, clipped_surrogate

LOG_RATIO_BOUND = 20.0
"""Log-ratios are clamped to ±20 before exponentiation where the peers do (SAPO, CISPO, DPPO, VESPO)."""


@dataclass(frozen=True)
class ObjectiveInputs:
    """What every objective takes, all (B, T): ``logprobs`` log π_θ of the sampled tokens (with
    gradient), ``old_logprobs`` log π_old, ``ratio`` the importance ratio at the configured level,
    ``advantages``, ``mask`` 1 on loss tokens. ``generator``: the random stream of objectives that draw
    tokens (Clip-Cov). ``correction``: rollout-correction weights, given only to an objective that
    folds them into its own weight (``folds_correction``)."""

    logprobs: torch.Tensor
    old_logprobs: torch.Tensor
    ratio: torch.Tensor
    advantages: torch.Tensor
    mask: torch.Tensor
    generator: torch.Generator | None = None
    correction: torch.Tensor | None = None


def _stats(low: torch.Tensor, high: torch.Tensor, mask: torch.Tensor, up: torch.Tensor | None = None) -> SurrogateStats:
    """Stats from boolean (B, T) tensors: tokens held back below / above, over real tokens of ``mask``."""
    with torch.no_grad():
        return SurrogateStats(
            clip_frac_low=masked_mean(low.float(), mask),
            clip_frac_high=masked_mean(high.float(), mask),
            dual_clip_frac=mask.new_zeros(()),
            up_clipped=high if up is None else up,
        )


@OBJECTIVES.register("clip", ObjectiveFacts(dual_clip=True))
def clip(x: ObjectiveInputs, cfg: PolicyLossConfig) -> tuple[torch.Tensor, SurrogateStats]:
    """PPO's clipped surrogate (PPO, GRPO, DAPO), dual-clipped when ``dual_clip_c`` is set (:func:`clipped_surrogate`)."""
    return clipped_surrogate(x.ratio, x.advantages, x.mask, cfg.clip_eps_low, cfg.clip_eps_high, cfg.dual_clip_c)


@OBJECTIVES.register("cispo")
def cispo(x: ObjectiveInputs, cfg: PolicyLossConfig) -> tuple[torch.Tensor, SurrogateStats]:
    """CISPO (MiniMax-M1, arXiv 2506.13585, Eq. 4): ℓ = −sg[clip(r, 1 − ε_low, 1 + ε_high)] · Â · log π_θ.

    The weight is clipped and detached, so no token loses its gradient (PPO's clip zeroes it).
    TRL's ``cispo`` clips only above at ε_high (an absolute cap): ε_low = 1 and 1 + ε_high = that cap.
    """
    eps_low, eps_high = cfg.clip_eps_low, cfg.clip_eps_high
    clipped = torch.clamp(x.ratio, 1.0 - eps_low, 1.0 + eps_high)
    loss = -clipped.detach() * x.advantages * x.logprobs
    return loss, _stats(x.ratio < 1.0 - eps_low, x.ratio > 1.0 + eps_high, x.mask)


@OBJECTIVES.register("sapo")
def sapo(x: ObjectiveInputs, cfg: PolicyLossConfig) -> tuple[torch.Tensor, SurrogateStats]:
    """SAPO (arXiv 2511.20347): ℓ = −f(r) · Â, soft gate f(r) = 4 σ(τ (r − 1)) / τ, τ = τ_pos for Â > 0 else τ_neg.

    f(1) = 2/τ and f'(1) = 1, so on-policy it has PPO's gradient; far from 1 it decays smoothly
    instead of being cut off. Nothing is clipped (both fractions are 0).
    """
    tau = torch.where(x.advantages > 0, cfg.sapo_tau_pos, cfg.sapo_tau_neg).to(x.ratio.dtype)
    gate = torch.sigmoid(tau * (x.ratio - 1.0)) * 4.0 / tau
    none = torch.zeros_like(x.mask, dtype=torch.bool)
    return -gate * x.advantages, _stats(none, none, x.mask)


@OBJECTIVES.register("gmpo", ObjectiveFacts(token_ratio_only=True))
def gmpo(x: ObjectiveInputs, cfg: PolicyLossConfig) -> tuple[torch.Tensor, SurrogateStats]:
    """GMPO (arXiv 2507.20673): ℓ_i = −Â_i · exp(mean_t clip(log r_t, log(1 − ε_low), log(1 + ε_high))), sign-aware.

    ℓ_i = −Â_i · exp(mean_t sgn(Â) · min(sgn(Â) log r_t, sgn(Â) clip(log r_t, log(1 − ε_low),
    log(1 + ε_high)))): the sequence's geometric-mean ratio of its token ratios, each clipped in log space on the side
    its advantage sign makes pessimistic; Â_i is the token mean of the advantages. The per-sequence
    loss is broadcast over the sequence's tokens (B, T), so a per-sequence mean of token means
    (``seq_mean_token_mean``) gives the paper's mean over responses.
    """
    eps_low, eps_high = cfg.clip_eps_low, cfg.clip_eps_high
    log_ratio = x.logprobs - x.old_logprobs
    low, high = math.log(1.0 - eps_low) if eps_low < 1.0 else -math.inf, math.log1p(eps_high)
    clipped = torch.clamp(log_ratio, low, high)
    sign = torch.sign(x.advantages)
    pessimistic = sign * torch.minimum(sign * log_ratio, sign * clipped)
    mean_log_ratio = masked_mean(pessimistic, x.mask, dim=-1)  # (B,)
    sequence_advantage = masked_mean(x.advantages, x.mask, dim=-1)  # (B,)
    loss = (-sequence_advantage * torch.exp(mean_log_ratio)).unsqueeze(-1).expand_as(x.logprobs)
    moved = log_ratio != clipped
    return loss, _stats(moved & (x.advantages < 0), moved & (x.advantages > 0), x.mask)


def _reinforce(
    logprobs: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor
) -> tuple[torch.Tensor, SurrogateStats]:
    none = torch.zeros_like(mask, dtype=torch.bool)
    return -advantages * logprobs, _stats(none, none, mask)


@OBJECTIVES.register("reinforce")
def reinforce(x: ObjectiveInputs, cfg: PolicyLossConfig) -> tuple[torch.Tensor, SurrogateStats]:
    """Plain REINFORCE / GPG (arXiv 2504.02546): ℓ = −Â · log π_θ, no importance ratio and nothing clipped."""
    return _reinforce(x.logprobs, x.advantages, x.mask)


def _covariance(advantages: torch.Tensor, logprobs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Per-token centred product (Â − mean Â)(log π − mean log π) over the real tokens (B, T); detached."""
    logprobs = logprobs.detach()
    return (advantages - masked_mean(advantages, mask)) * (logprobs - masked_mean(logprobs, mask))


@OBJECTIVES.register("clip_cov", ObjectiveFacts(one_pass=True, dual_clip=True))
def clip_cov(x: ObjectiveInputs, cfg: PolicyLossConfig) -> tuple[torch.Tensor, SurrogateStats]:
    """Clip-Cov (Cui et al. 2025, arXiv 2505.22617, Eq. 11): clip, with a few tokens of high cov(Â, log π) detached.

    ⌊cov_ratio · N⌋ tokens (at least one) are detached, drawn at random (``generator``) among the real
    tokens the clip leaves alone whose covariance lies strictly inside ``clip_cov_bounds``. N counts
    the real tokens of ``mask``. clip_frac_high reports the detached share."""
    ratio, advantages, mask = x.ratio, x.advantages, x.mask
    eps_low, eps_high = cfg.clip_eps_low, cfg.clip_eps_high
    loss, stats = clipped_surrogate(ratio, advantages, mask, eps_low, eps_high, cfg.dual_clip_c)
    real = mask > 0
    clipped_by_ratio = (-advantages * torch.clamp(ratio, 1.0 - eps_low, 1.0 + eps_high) > -advantages * ratio) & real
    covariance = _covariance(advantages, x.logprobs, mask)
    bounds = cfg.clip_cov_bounds
    candidates = (covariance > bounds[0]) & (covariance < bounds[1]) & real & ~clipped_by_ratio
    positions = candidates.nonzero()
    count = min(max(int(cfg.cov_ratio * float(mask.sum())), 1), positions.shape[0])
    chosen = positions[torch.randperm(positions.shape[0], generator=x.generator)[:count]]
    keep = torch.ones_like(loss)
    keep[chosen[:, 0], chosen[:, 1]] = 0.0
    detached = keep == 0
    return loss * keep, SurrogateStats(
        stats.clip_frac_low, masked_mean(detached.float(), mask), stats.dual_clip_frac, stats.up_clipped
    )


@OBJECTIVES.register("kl_cov", ObjectiveFacts(one_pass=True))
def kl_cov(x: ObjectiveInputs, cfg: PolicyLossConfig) -> tuple[torch.Tensor, SurrogateStats]:
    """KL-Cov (Cui et al. 2025, arXiv 2505.22617, Eq. 12): ℓ = −Â · r, a few tokens of top cov(Â, log π) KL-penalised.

    The penalty kl_cov_coef · |log r| falls on the ⌊cov_ratio · N⌋ tokens (at least one) of largest
    covariance between Â and log π. No ratio clip; clip_frac_high reports the penalised share."""
    mask = x.mask
    loss = -x.advantages * x.ratio
    covariance = _covariance(x.advantages, x.logprobs, mask).masked_fill(mask <= 0, -math.inf)
    real = int(mask.sum())
    penalised = torch.zeros_like(mask, dtype=torch.bool)
    if real:
        count = max(1, int(real * cfg.cov_ratio))
        flat = covariance.flatten().topk(count).indices
        penalised.view(-1)[flat] = True
    loss = torch.where(penalised, loss + cfg.kl_cov_coef * (x.logprobs - x.old_logprobs).abs(), loss)
    none = torch.zeros_like(mask, dtype=torch.bool)
    return loss, _stats(none, penalised, mask, up=none)


def _dppo(x: ObjectiveInputs, cfg: PolicyLossConfig, divergence: str) -> tuple[torch.Tensor, SurrogateStats]:
    """DPPO-Binary (arXiv 2602.04879): ℓ = −Â · sg[min(r, cap)] · log π_θ on the tokens inside the trust region.

    A token with Â > 0 stays while its divergence is at most ``dppo_thresholds[1]``, one with Â ≤ 0
    while it is at most ``dppo_thresholds[0]``. divergence tv: π − π_old (signed: above for Â > 0,
    below for Â ≤ 0). kl: the binary KL between Bernoulli(π_old) and Bernoulli(π), counted only when
    π moved in the advantage's direction. clip_frac_high reports the share outside the region.
    """
    logprobs, old_logprobs, advantages = x.logprobs, x.old_logprobs, x.advantages
    log_ratio = torch.clamp(logprobs - old_logprobs, -LOG_RATIO_BOUND, LOG_RATIO_BOUND)
    ratio = torch.exp(log_ratio)
    prob, old_prob = torch.exp(logprobs), torch.exp(old_logprobs)
    low, high = cfg.dppo_thresholds
    if divergence == "tv":
        up_ok, down_ok = (prob - old_prob) <= high, (prob - old_prob) >= -low
    else:
        binary_kl = old_prob * (old_logprobs - logprobs) + (1 - old_prob) * torch.log(
            (1.0 - old_prob + 1e-8) / (1.0 - prob + 1e-8)
        )
        up_ok, down_ok = (binary_kl <= high) | (prob <= old_prob), (binary_kl <= low) | (prob >= old_prob)
    valid = torch.where(advantages > 0, up_ok, down_ok).detach()
    loss = -advantages * torch.clamp(ratio, max=cfg.dppo_ratio_cap).detach() * logprobs * valid
    none = torch.zeros_like(x.mask, dtype=torch.bool)
    return loss, _stats(none, ~valid, x.mask, up=none)


@OBJECTIVES.register("dppo_tv")
def dppo_tv(x: ObjectiveInputs, cfg: PolicyLossConfig) -> tuple[torch.Tensor, SurrogateStats]:
    """DPPO-Binary (arXiv 2602.04879), total-variation trust region: −Â · sg[min(r, cap)] · log π_θ inside it."""
    return _dppo(x, cfg, "tv")


@OBJECTIVES.register("dppo_kl")
def dppo_kl(x: ObjectiveInputs, cfg: PolicyLossConfig) -> tuple[torch.Tensor, SurrogateStats]:
    """DPPO-Binary (arXiv 2602.04879), binary-KL trust region: −Â · sg[min(r, cap)] · log π_θ inside it."""
    return _dppo(x, cfg, "kl")


def vespo_weight(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    k: tuple[float, float],
    rate: tuple[float, float],
    correction: torch.Tensor | None = None,
) -> torch.Tensor:
    """VESPO's gamma weight φ(w) = e^λ w^k e^{−λ w} of the sequence ratio w, detached: (B, 1).

    log w = Σ_t clamp(log r_t, ±20), plus Σ_t log of the rollout-correction weights if given
    (``correction`` (B, T)), clamped to [log 1e-8, 20]; (k, λ) = (k[0], rate[0]) for Â ≥ 0 else
    (k[1], rate[1]). φ(1) = 1. Follows TRL's ``get_gamma_weights``.
    """
    with torch.no_grad():
        floor = math.log(1e-8)
        log_w = (torch.clamp(logprobs - old_logprobs, -LOG_RATIO_BOUND, LOG_RATIO_BOUND) * mask).sum(-1, keepdim=True)
        if correction is not None:
            log_w = log_w + torch.clamp(torch.log(correction), floor, LOG_RATIO_BOUND).sum(-1, keepdim=True)
        log_w = torch.clamp(log_w, floor, LOG_RATIO_BOUND)
        positive = advantages >= 0
        shape = torch.where(positive, k[0], k[1])
        lam = torch.where(positive, rate[0], rate[1]).clamp(min=1e-4)
        phi = torch.exp(lam + shape * log_w - lam * torch.exp(log_w))
        return phi.nan_to_num(nan=0.0, posinf=0.0, neginf=0.0)


@OBJECTIVES.register("vespo", ObjectiveFacts(token_ratio_only=True, folds_correction=True))
def vespo(x: ObjectiveInputs, cfg: PolicyLossConfig) -> tuple[torch.Tensor, SurrogateStats]:
    """VESPO: ℓ = −φ(w) · Â · log π_θ, φ the gamma weight of the sequence ratio w (:func:`vespo_weight`; TRL)."""
    phi = vespo_weight(x.logprobs, x.old_logprobs, x.advantages, x.mask, cfg.vespo_k, cfg.vespo_lambda, x.correction)
    return _reinforce(x.logprobs, phi * x.advantages, x.mask)


def policy_objective(cfg: PolicyLossConfig, inputs: ObjectiveInputs) -> tuple[torch.Tensor, SurrogateStats]:
    """The configured objective's per-token loss (B, T) and stats; the one place ``policy_loss.objective`` is read."""
    return OBJECTIVES[cfg.objective].function(inputs, cfg)
