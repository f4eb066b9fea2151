"""Importance ratios between the current policy π_θ and the sampling policy π_old, at five levels.

Inputs are per-token log-probabilities of the sampled tokens: ``logprobs`` (B, T) under π_θ (with
gradient), ``old_logprobs`` (B, T) under π_old (no gradient), ``mask`` (B, T) 1 on real tokens.
Every function returns a (B, T) ratio to multiply with per-token advantages; sequence-level ratios
are broadcast over the sequence's tokens. Values on padding are meaningless and must be masked.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from algos.core.masked import masked_mean


def token_ratio(logprobs: torch.Tensor, old_logprobs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """r_{i,t} = π_θ(o_{i,t}) / π_old(o_{i,t}) (PPO, GRPO, DAPO)."""
    return torch.exp(logprobs - old_logprobs)


def _mean_log_ratio(logprobs: torch.Tensor, old_logprobs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return masked_mean(logprobs - old_logprobs, mask, dim=-1)  # (B,)


def sequence_ratio(logprobs: torch.Tensor, old_logprobs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """GSPO's s_i = exp((1/|o_i|) Σ_t log r_{i,t}), the same value for every token of o_i."""
    seq = torch.exp(_mean_log_ratio(logprobs, old_logprobs, mask))  # (B,)
    return seq.unsqueeze(-1).expand_as(logprobs)


def sequence_sum_ratio(logprobs: torch.Tensor, old_logprobs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """exp(Σ_t log r_{i,t}) = π_θ(o_i) / π_old(o_i), the unnormalised sequence ratio of TRL's RLOO loss."""
    seq = torch.exp(((logprobs - old_logprobs) * mask).sum(dim=-1))  # (B,)
    return seq.unsqueeze(-1).expand_as(logprobs)


def sequence_token_ratio(logprobs: torch.Tensor, old_logprobs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """GSPO-token's s_{i,t} = sg[s_i] · π_θ(o_{i,t}) / sg[π_θ(o_{i,t})].

    Numerically equal to s_i; its gradient flows through each token's own log-probability, so it
    equals GSPO's gradient when advantages are per sequence and allows per-token advantages.
    """
    seq_log = _mean_log_ratio(logprobs, old_logprobs, mask).detach().unsqueeze(-1)  # (B, 1)
    return torch.exp(seq_log + logprobs - logprobs.detach())


def group_expected_probability(
    old_logprobs: torch.Tensor, mask: torch.Tensor, group_size: int, order: torch.Tensor | None = None
) -> torch.Tensor:
    """GEPO's group expectation Ê_q[q] = Σ_i q_i² / Σ_i q_i over each group, repeated per row.

    q_i = exp(mean_t log π_old(o_{i,t})) is the length-normalised sampling probability (as in the
    authors' code). old_logprobs, mask: (B, T). Groups are ``group_size`` consecutive rows (a prompt's
    responses; the paper), or, with ``order`` (B,) a permutation of the rows, ``group_size``
    consecutive rows of the permuted batch (a shuffled micro-batch of responses to different
    prompts; the authors' code). Returns (B,). It depends on π_old only, so the trainer computes it
    once per rollout batch, before mini-batches can split a group.
    """
    q = torch.exp(masked_mean(old_logprobs, mask, dim=-1))  # (B,)
    if order is not None:
        q = q[order]
    grouped = q.view(-1, group_size)  # (B / G, G)
    expectation = ((grouped**2).sum(dim=1) / grouped.sum(dim=1)).repeat_interleave(group_size)  # (B,)
    if order is None:
        return expectation
    return torch.empty_like(expectation).scatter(0, order, expectation)


def group_expectation_ratio(
    logprobs: torch.Tensor, mask: torch.Tensor, group_expectation: torch.Tensor
) -> torch.Tensor:
    """GEPO's w_i = p_i / Ê_q[q] with p_i = exp(mean_t log π_θ(o_{i,t})), broadcast over tokens.

    group_expectation: (B,) from :func:`group_expected_probability`. Unlike the other ratios,
    w_i is not 1 on-policy: it compares each response with the group's expected probability.
    """
    p = torch.exp(masked_mean(logprobs, mask, dim=-1))  # (B,)
    return (p / group_expectation).unsqueeze(-1).expand_as(logprobs)


RATIO_LEVELS: dict[str, Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "token": token_ratio,
    "sequence": sequence_ratio,
    "sequence_token": sequence_token_ratio,
    "sequence_sum": sequence_sum_ratio,
}
"""Ratio levels that need only the two policies' log-probabilities; GEPO's needs the group expectation."""


def importance_ratio(
    level: str,
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    mask: torch.Tensor,
    group_expectation: torch.Tensor | None = None,
) -> torch.Tensor:
    """The ratio of ``level`` (B, T); ``group_expectation`` (B,) is required for ``group_expectation``."""
    if level == "group_expectation":
        if group_expectation is None:
            raise ValueError("ratio level 'group_expectation' needs the group expectation from the rollout batch")
        return group_expectation_ratio(logprobs, mask, group_expectation)
    return RATIO_LEVELS[level](logprobs, old_logprobs, mask)
