"""Sample filters: DAPO's overlong filtering and dynamic-sampling group filter."""

from __future__ import annotations

import torch


def overlong_filter_mask(truncated: torch.Tensor) -> torch.Tensor:
    """Per-sequence loss weight (B,): 0 for truncated responses (no EOS within the budget), else 1.

    Multiplied into the policy-loss mask, it removes truncated samples from the policy gradient
    (DAPO, Overlong Filtering) while they still count in the batch.
    """
    return (~truncated).to(torch.get_default_dtype())


def informative_groups(metric: torch.Tensor, group_size: int) -> torch.Tensor:
    """DAPO's dynamic-sampling keep mask: groups whose ``metric`` is not identical across responses.

    metric: (B,) per-response correctness (0/1) or reward, contiguous groups of ``group_size``.
    Returns (P,) bool: True where 0 < accuracy < 1, i.e. the group carries a learning signal.
    """
    grouped = metric.view(-1, group_size)  # (P, G)
    return (grouped != grouped[:, :1]).any(dim=1)
