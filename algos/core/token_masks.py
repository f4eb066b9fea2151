"""Multipliers on the per-token policy loss: rollout/learner mismatch weights and token or sequence masks.

Each returns a detached (B, T) tensor to multiply the per-token policy loss with; the aggregation's
denominators are unchanged (TRL and verl multiply the loss, not the mask).
"""

from __future__ import annotations

import math

import torch

from algos.core.masked import masked_mean


def correction_weights(
    old_logprobs: torch.Tensor,
    sampler_logprobs: torch.Tensor,
    mask: torch.Tensor,
    mode: str,
    level: str,
    low: float | None,
    high: float,
) -> torch.Tensor:
    """Importance weights w = π_old / π_sampler correcting for the rollout/learner mismatch: (B, T), detached.

    old_logprobs: log π_old of the proximal policy (the learner before the update), sampler_logprobs:
    log π of the policy that sampled; both (B, T). level token: w_t per token; sequence: exp(Σ_t log w_t)
    for every token of the response. mode truncate: clamp(w, low, high) (TIS); mask: w inside
    [low, high], else 0 (MIS). ``low`` None: no lower bound. 0 on padding.
    """
    log_w = (old_logprobs - sampler_logprobs) * mask
    if level == "sequence":
        log_w = log_w.sum(dim=-1, keepdim=True).expand_as(mask)
    weights = torch.exp(log_w)
    if mode == "truncate":
        weights = torch.clamp(weights, min=low, max=high)
    elif mode == "mask":
        outside = (weights < (low if low is not None else -math.inf)) | (weights > high)
        weights = weights.masked_fill(outside, 0.0)
    else:
        raise ValueError(f"unknown rollout correction '{mode}'; valid: truncate, mask")
    return (weights * mask).detach()


def high_entropy_mask(entropy: torch.Tensor, mask: torch.Tensor, top_quantile: float) -> torch.Tensor:
    """1 on the real tokens whose entropy is at least the (1 − ρ)-quantile of the real tokens' entropies (B, T).

    entropy, mask: (B, T); ρ = ``top_quantile`` (Wang et al. 2025: 0.2, the "forking" tokens). The
    quantile is linear-interpolated (torch.quantile), as TRL's ``get_high_entropy_mask``.
    """
    real = mask > 0
    values = entropy.detach()[real]
    if values.numel() == 0:
        return torch.zeros_like(mask)
    threshold = torch.quantile(values, 1.0 - top_quantile)
    return ((entropy.detach() * mask >= threshold) & real).to(mask.dtype)


def off_policy_sequence_mask(
    logprobs: torch.Tensor,
    sampler_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    threshold: float,
) -> torch.Tensor:
    """DeepSeek-V3.2's off-policy sequence mask: 0 for a response with Â < 0 whose mean log(π_sampler / π_θ)
    exceeds ``threshold``, else 1; (B, T) from logprobs, sampler_logprobs, advantages, mask (B, T).

    A response's advantage is the mean of its tokens' (outcome advantages are constant per response).
    """
    divergence = masked_mean(sampler_logprobs - logprobs.detach(), mask, dim=-1)  # (B,)
    keep = (masked_mean(advantages, mask, dim=-1) >= 0) | (divergence <= threshold)
    return keep.to(mask.dtype).unsqueeze(-1).expand_as(mask)
