"""Outcome rewards: verifier values, DAPO's soft overlong punishment, and their placement on tokens."""

from __future__ import annotations

import torch


def correctness_reward(correct: torch.Tensor, value_correct: float, value_incorrect: float) -> torch.Tensor:
    """Verifier reward: correct (B,) bool -> (B,) of ``value_correct`` / ``value_incorrect`` (DAPO: ±1)."""
    return torch.where(correct, value_correct, value_incorrect).to(torch.get_default_dtype())


def soft_overlong_punishment(lengths: torch.Tensor, max_length: int, buffer: int) -> torch.Tensor:
    """DAPO Eq. 13, added to the correctness reward; lengths (B,) -> (B,).

    0 if |o| ≤ L_max − L_cache; ((L_max − L_cache) − |o|) / L_cache inside the buffer; −1 if
    |o| > L_max. ``max_length`` = L_max (the hard budget), ``buffer`` = L_cache.
    """
    lengths = lengths.to(torch.get_default_dtype())
    soft_start = max_length - buffer
    inside = (soft_start - lengths) / buffer
    penalty = torch.where(lengths <= soft_start, torch.zeros_like(lengths), inside)
    return torch.where(lengths > max_length, torch.full_like(lengths, -1.0), penalty)


def place_outcome_reward(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Put each sequence's scalar reward on its last real token: scores (B,), mask (B, T) -> (B, T).

    A sequence with no real token gets no reward.
    """
    positions = torch.arange(mask.shape[1], device=mask.device)
    last = (mask * positions).argmax(dim=-1)  # (B,) index of the last real token
    rewards = torch.zeros(mask.shape, dtype=scores.dtype, device=scores.device)
    rewards[torch.arange(mask.shape[0]), last] = scores
    return rewards * mask
