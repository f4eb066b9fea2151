"""Loss aggregation: per-token losses (B, T) -> one scalar, separately from the surrogate.

Under gradient accumulation a mini-batch is split into micro-batches. Each micro-batch's loss is
divided by the *whole mini-batch's* token or sequence count (a :class:`Normalizer` built once per
mini-batch), so the micro-batch losses add up to exactly the mini-batch loss. Dividing by each
micro-batch's own count instead silently reweights tokens, a known bug in several frameworks.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

AGGREGATIONS = ("token_mean", "token_sum", "seq_mean_token_mean", "seq_mean_token_sum", "seq_mean_token_sum_norm")


@dataclass(frozen=True)
class Normalizer:
    """Denominators of one mini-batch.

    num_tokens: real loss tokens Σ_i |o_i| (token_mean).
    num_sequences: sequences the seq_mean_* modes average over (all rows, or only those with a
      loss token left after filtering; see :meth:`from_mask`).
    constant: MAX_TOKENS of seq_mean_token_sum_norm (Dr. GRPO).
    In a multi-process run the counts are those of the whole mini-batch over all processes (see
    :mod:`algos.trainer.update` for the scaling of each process's loss).
    """

    num_tokens: float
    num_sequences: float
    constant: float = 1.0

    @classmethod
    def from_mask(cls, mask: torch.Tensor, constant: float = 1.0, count_empty: bool = True) -> Normalizer:
        """Counts of a whole mini-batch's loss mask (B, T).

        count_empty=True counts every row as a sequence (the papers' 1/G, 1/B; TRL);
        False counts only rows with at least one loss token (verl).
        """
        lengths = mask.sum(dim=-1)
        sequences = mask.shape[0] if count_empty else int((lengths > 0).sum())
        return cls(float(mask.sum()), float(sequences), float(constant))


def aggregate(loss: torch.Tensor, mask: torch.Tensor, mode: str, normalizer: Normalizer) -> torch.Tensor:
    """Aggregate per-token ``loss`` (B, T) over real tokens of ``mask`` (B, T) into a scalar.

    token_mean:               Σ_{i,t} ℓ_{i,t} / N_tokens                       (DAPO, VAPO)
    token_sum:                Σ_{i,t} ℓ_{i,t}                                  (verl token-sum)
    seq_mean_token_mean:      Σ_i (Σ_t ℓ_{i,t} / |o_i|) / N_seqs               (GRPO)
    seq_mean_token_sum:       Σ_i Σ_t ℓ_{i,t} / N_seqs
    seq_mean_token_sum_norm:  Σ_{i,t} ℓ_{i,t} / (N_seqs · MAX_TOKENS)          (Dr. GRPO)

    N_tokens, N_seqs and MAX_TOKENS come from ``normalizer`` (the whole mini-batch). A sequence with
    no loss token contributes 0.
    """
    token_sums = (loss * mask).sum(dim=-1)  # (B,)
    if mode == "token_mean":
        return token_sums.sum() / max(normalizer.num_tokens, 1.0)
    if mode == "token_sum":
        return token_sums.sum()
    if mode == "seq_mean_token_mean":
        lengths = mask.sum(dim=-1).clamp(min=1)
        return (token_sums / lengths).sum() / max(normalizer.num_sequences, 1.0)
    if mode == "seq_mean_token_sum":
        return token_sums.sum() / max(normalizer.num_sequences, 1.0)
    if mode == "seq_mean_token_sum_norm":
        return token_sums.sum() / (max(normalizer.num_sequences, 1.0) * normalizer.constant)
    raise ValueError(f"unknown aggregation '{mode}'; valid: {', '.join(AGGREGATIONS)}")
