"""Detecting looping responses: a block of tokens repeated back to back (a tandem repeat).

A response loops when some block of p tokens occurs at least three times in a row and the repeated
span covers at least ``min_span`` tokens, so a stutter of two words is not a loop but a sentence
said three times is. This works on token ids alone, for the built-in tasks and hub models alike.
"""

from __future__ import annotations

import torch

MAX_PERIOD = 32
"""Longest repeated block looked for, in tokens."""
MIN_SPAN = 12
"""Fewest tokens the repeated span must cover."""


def longest_run(flags: torch.Tensor) -> torch.Tensor:
    """Length of the longest run of consecutive True values in each row: (B, L) bool -> (B,)."""
    if flags.shape[1] == 0:
        return torch.zeros(flags.shape[0], dtype=torch.long, device=flags.device)
    counts = flags.long().cumsum(dim=-1)  # (B, L)
    # Each position's count minus the count at the last False before it is the run ending there.
    resets = torch.where(flags, torch.zeros_like(counts), counts).cummax(dim=-1).values
    return (counts - resets).max(dim=-1).values


def tandem_repeats(
    ids: torch.Tensor, mask: torch.Tensor, max_period: int = MAX_PERIOD, min_span: int = MIN_SPAN
) -> torch.Tensor:
    """Whether each response holds a block repeated three or more times back to back, spanning ``min_span``.

    ids, mask: (B, T), mask 1 on real tokens. Returns (B,) bool. With period p, a run of r tokens
    that each equal the token p before them is a span of r + p tokens made of (r + p) / p copies.
    """
    found = torch.zeros(ids.shape[0], dtype=torch.bool, device=ids.device)
    real = mask.bool()
    for period in range(1, min(max_period, ids.shape[1] - 1) + 1):
        same = (ids[:, period:] == ids[:, :-period]) & real[:, period:]  # (B, T - p)
        needed = max(2 * period, min_span - period)
        found |= longest_run(same) >= needed
    return found
