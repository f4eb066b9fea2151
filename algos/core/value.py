"""Critic objective and diagnostics (PPO, VAPO)."""

from __future__ import annotations

import torch

from algos.core.masked import masked_mean


def value_loss(
    values: torch.Tensor,
    old_values: torch.Tensor,
    returns: torch.Tensor,
    mask: torch.Tensor,
    clip: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-token value loss ½ (V − R)², with optional PPO value clipping.

    With ``clip``: ½ max((V − R)², (clip(V, V_old − c, V_old + c) − R)²).
    values (with gradient), old_values, returns, mask: (B, T).
    Returns the per-token loss (B, T) and the fraction of real tokens where the clipped term won.
    """
    unclipped = (values - returns) ** 2
    if clip is None:
        return 0.5 * unclipped, torch.zeros((), dtype=values.dtype, device=values.device)
    clipped_values = old_values + (values - old_values).clamp(-clip, clip)
    clipped = (clipped_values - returns) ** 2
    clip_frac = masked_mean((clipped > unclipped).float(), mask).detach()
    return 0.5 * torch.maximum(unclipped, clipped), clip_frac


def explained_variance(values: torch.Tensor, returns: torch.Tensor, mask: torch.Tensor) -> float | None:
    """1 − Var(R − V) / Var(R) over the real tokens of a whole batch; 1 is a perfect critic, ≤ 0 no better than a constant.

    values, returns, mask: (B, T). None when the returns do not vary (the ratio is undefined), so a
    batch of equal returns is never reported as −inf or NaN. Compute it over a whole batch: over a
    slice (a micro-batch, a length bucket) the returns are often all equal.
    """

    def variance(x: torch.Tensor) -> torch.Tensor:
        return masked_mean((x - masked_mean(x, mask)) ** 2, mask)

    spread = variance(returns)
    if not bool(spread > 0):
        return None
    return (1.0 - variance(returns - values) / spread).item()
