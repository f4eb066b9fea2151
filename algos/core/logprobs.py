"""Token log-probabilities and entropies from a causal LM's logits."""

from __future__ import annotations

import torch


def token_logprobs(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """log π(token_t | context) for each position: logits (B, T, V), tokens (B, T) -> (B, T).

    ``logits[:, t]`` must be the distribution that produced ``tokens[:, t]`` (already shifted).
    """
    return torch.log_softmax(logits.float(), dim=-1).gather(-1, tokens.unsqueeze(-1)).squeeze(-1)


def entropy_from_logits(logits: torch.Tensor) -> torch.Tensor:
    """Entropy H = −Σ_v p_v log p_v of each position's distribution: (B, T, V) -> (B, T)."""
    logp = torch.log_softmax(logits.float(), dim=-1)
    return -(logp.exp() * logp).sum(dim=-1)
