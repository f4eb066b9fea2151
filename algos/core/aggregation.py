"""Loss aggregation: per-token losses (B, T) -> one scalar, separately from the surrogate.

Under gradient accumulation a mini-batch is split into micro-batches. Each micro-batch's loss is
divided by the *whole mini-batch's* token or sequence count (a :class:`Normalizer` built once per
mini-batch), so the micro-batch losses add up to exactly the mini-batch loss. Dividing by each
micro-batch's own count instead silently reweights tokens, a known bug in several frameworks.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from algos.config.registry import AGGREGATIONS


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


@dataclass(frozen=True)
class AggregationInputs:
    """What every aggregation takes: token_sums (B,) Σ_t ℓ_{i,t} over each sequence's loss tokens, mask (B, T)
    the loss tokens, and the mini-batch's :class:`Normalizer`."""

    token_sums: torch.Tensor
    mask: torch.Tensor
    normalizer: Normalizer


@AGGREGATIONS.register("token_mean")
def token_mean(x: AggregationInputs) -> torch.Tensor:
    """Σ_{i,t} ℓ_{i,t} / N_tokens (DAPO's and VAPO's token-level loss)."""
    return x.token_sums.sum() / max(x.normalizer.num_tokens, 1.0)


@AGGREGATIONS.register("token_sum")
def token_sum(x: AggregationInputs) -> torch.Tensor:
    """Σ_{i,t} ℓ_{i,t}, no denominator (verl's token-sum)."""
    return x.token_sums.sum()


@AGGREGATIONS.register("seq_mean_token_mean")
def seq_mean_token_mean(x: AggregationInputs) -> torch.Tensor:
    """Σ_i (Σ_t ℓ_{i,t} / |o_i|) / N_seqs (GRPO)."""
    lengths = x.mask.sum(dim=-1).clamp(min=1)
    return (x.token_sums / lengths).sum() / max(x.normalizer.num_sequences, 1.0)


@AGGREGATIONS.register("seq_mean_token_sum")
def seq_mean_token_sum(x: AggregationInputs) -> torch.Tensor:
    """Σ_i Σ_t ℓ_{i,t} / N_seqs."""
    return x.token_sums.sum() / max(x.normalizer.num_sequences, 1.0)


@AGGREGATIONS.register("seq_mean_token_sum_norm")
def seq_mean_token_sum_norm(x: AggregationInputs) -> torch.Tensor:
    """Σ_{i,t} ℓ_{i,t} / (N_seqs · MAX_TOKENS), MAX_TOKENS the aggregation_constant (Dr. GRPO)."""
    return x.token_sums.sum() / (max(x.normalizer.num_sequences, 1.0) * x.normalizer.constant)


def aggregate(
    loss: torch.Tensor, mask: torch.Tensor, mode: str, normalizer: Normalizer, dp_size: int = 1
) -> torch.Tensor:
    """Aggregate per-token ``loss`` (B, T) over real tokens of ``mask`` (B, T) into a scalar: the member
    ``mode`` of :data:`~algos.config.registry.AGGREGATIONS`.

    N_tokens, N_seqs and MAX_TOKENS come from ``normalizer`` (the whole mini-batch). A sequence with
    no loss token contributes 0. dp_size: the number of data-parallel processes when ``loss`` is one
    process's share of the mini-batch (``normalizer`` still counting the whole of it) and DDP or FSDP
    averages the processes' gradients; the result is multiplied by it, so the averaged gradient is the
    whole mini-batch's (verl's ``agg_loss(dp_size=...)``). The update applies the process count to
    the sum of a pass's terms instead (:mod:`algos.trainer.update`), the same product term by term.
    """
    token_sums = (loss * mask).sum(dim=-1)  # (B,)
    aggregated = AGGREGATIONS[mode].function(AggregationInputs(token_sums, mask, normalizer))
    return aggregated * dp_size
