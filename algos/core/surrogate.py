"""The clipped policy-gradient surrogate with asymmetric (clip-higher) and optional dual clipping."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from algos.core.masked import masked_mean


@dataclass(frozen=True)
class SurrogateStats:
    """Diagnostics of one surrogate evaluation, as detached scalars (means over real tokens).

    clip_frac_low: tokens with Â < 0 whose ratio fell below 1 − ε_low (the clip is active).
    clip_frac_high: tokens with Â > 0 whose ratio rose above 1 + ε_high (the clip is active).
    dual_clip_frac: tokens with Â < 0 where the dual-clip bound −c·Â is the loss.
    up_clipped: (B, T) bool, where the upper clip is active (counted by clip_frac_high on real tokens).
    """

    clip_frac_low: torch.Tensor
    clip_frac_high: torch.Tensor
    dual_clip_frac: torch.Tensor
    up_clipped: torch.Tensor


def clipped_surrogate(
    ratio: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    eps_low: float,
    eps_high: float,
    dual_clip_c: float | None = None,
) -> tuple[torch.Tensor, SurrogateStats]:
    """Per-token PPO loss ℓ = −min(r·Â, clip(r, 1 − ε_low, 1 + ε_high)·Â).

    With dual clip (Ye et al. 2020), for Â < 0: ℓ = min(ℓ, −c·Â), bounding the loss of a
    negative-advantage token whose ratio exploded.

    ratio, advantages, mask: (B, T). Returns the per-token loss (B, T) to be aggregated, and stats.
    """
    unclipped = -advantages * ratio
    clipped = -advantages * torch.clamp(ratio, 1.0 - eps_low, 1.0 + eps_high)
    loss = torch.maximum(unclipped, clipped)
    dual_active = torch.zeros_like(mask, dtype=torch.bool)
    if dual_clip_c is not None:
        bound = -advantages * dual_clip_c
        negative = advantages < 0
        dual_active = negative & (loss > bound)
        loss = torch.where(negative, torch.minimum(loss, bound), loss)
    with torch.no_grad():
        up_clipped = (ratio > 1.0 + eps_high) & (advantages > 0)
        stats = SurrogateStats(
            clip_frac_low=masked_mean(((ratio < 1.0 - eps_low) & (advantages < 0)).float(), mask),
            clip_frac_high=masked_mean(up_clipped.float(), mask),
            dual_clip_frac=masked_mean(dual_active.float(), mask),
            up_clipped=up_clipped,
        )
    return loss, stats
