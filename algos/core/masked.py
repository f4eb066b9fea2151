"""Reductions over the real tokens of padded (B, T) tensors; ``mask`` is 1 on real tokens, 0 on padding."""

from __future__ import annotations

import torch


def masked_sum(values: torch.Tensor, mask: torch.Tensor, dim: int | None = None) -> torch.Tensor:
    """Σ values·mask over ``dim`` (all elements when None)."""
    product = values * mask
    return product.sum() if dim is None else product.sum(dim=dim)


def masked_mean(values: torch.Tensor, mask: torch.Tensor, dim: int | None = None) -> torch.Tensor:
    """Mean of ``values`` over real tokens; 0 where there are none."""
    count = mask.sum() if dim is None else mask.sum(dim=dim)
    return masked_sum(values, mask, dim) / count.clamp(min=1)


def masked_whiten(values: torch.Tensor, mask: torch.Tensor, eps: float, keep_mean: bool = False) -> torch.Tensor:
    """(x − mean) · rsqrt(var + eps) with the token-weighted mean and unbiased variance over real tokens.

    values, mask: (B, T) -> (B, T). keep_mean adds the mean back afterwards. Matches verl's
    ``masked_whiten`` (which uses eps = 1e-8; its shift_mean=False is keep_mean=True).
    """
    mean = masked_mean(values, mask)
    count = mask.sum()
    variance = masked_sum((values - mean) ** 2, mask) / (count - 1).clamp(min=1)
    whitened = (values - mean) * torch.rsqrt(variance + eps)
    return whitened + mean if keep_mean else whitened
