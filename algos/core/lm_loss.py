"""VAPO's positive-example LM loss: an NLL term on the verified-correct responses of the batch."""

from __future__ import annotations

import torch


def positive_example_nll(
    logprobs: torch.Tensor, mask: torch.Tensor, correct: torch.Tensor, num_positive_tokens: float
) -> torch.Tensor:
    """L_NLL = −Σ_{i correct, t} log π_θ(o_{i,t}) / Σ_{i correct} |o_i|.

    logprobs, mask: (B, T); correct: (B,) bool. ``num_positive_tokens`` is the count of the whole
    mini-batch (micro-batch losses then add up exactly). 0 when no response is correct.
    """
    positive_mask = mask * correct.unsqueeze(-1).to(mask.dtype)
    return -(logprobs * positive_mask).sum() / max(num_positive_tokens, 1.0)
