import pytest
import torch
from torch.testing import assert_close

from algos.config.registry import AGGREGATIONS
from algos.core.aggregation import Normalizer, aggregate

LOSS = torch.tensor([[1.0, 2.0, 3.0], [4.0, 9.0, 9.0]], dtype=torch.float64)
MASK = torch.tensor([[1.0, 1.0, 1.0], [1.0, 0.0, 0.0]], dtype=torch.float64)


@pytest.mark.parametrize(
    ("mode", "expected"),
    [("token_mean", 2.5), ("seq_mean_token_mean", 3.0), ("seq_mean_token_sum", 5.0), ("seq_mean_token_sum_norm", 1.0)],
)
def test_hand_values(mode, expected):
    normalizer = Normalizer.from_mask(MASK, constant=5)
    assert_close(aggregate(LOSS, MASK, mode, normalizer), torch.tensor(expected))


def test_token_mean_equals_seq_mean_token_mean_at_equal_lengths():
    loss, mask = torch.randn(6, 5), torch.ones(6, 5)
    mask[:, 4] = 0
    n = Normalizer.from_mask(mask)
    assert_close(aggregate(loss, mask, "token_mean", n), aggregate(loss, mask, "seq_mean_token_mean", n))


def test_empty_sequences_counted_or_not():
    mask = MASK.clone()
    mask[1] = 0
    assert Normalizer.from_mask(mask).num_sequences == 2
    assert Normalizer.from_mask(mask, count_empty=False).num_sequences == 1
    assert_close(aggregate(LOSS, mask, "seq_mean_token_mean", Normalizer.from_mask(mask)), torch.tensor(1.0))


def mini_batch():
    """Per-token losses (8, 5) of sequences of lengths 5, 1, 3, 4, 2, 5, 0, 3, their mask and normalizer."""
    lengths = torch.tensor([5, 1, 3, 4, 2, 5, 0, 3])
    mask = (torch.arange(5) < lengths.unsqueeze(-1)).double()
    return torch.randn(8, 5), mask, Normalizer.from_mask(mask, constant=7)


@pytest.mark.parametrize("mode", AGGREGATIONS.names())
def test_micro_batches_add_up_to_the_mini_batch(mode):
    loss, mask, normalizer = mini_batch()
    whole = aggregate(loss, mask, mode, normalizer)
    parts = sum(aggregate(loss[i : i + 3], mask[i : i + 3], mode, normalizer) for i in range(0, 8, 3))
    assert_close(parts, whole)


@pytest.mark.parametrize("mode", AGGREGATIONS.names())
def test_the_processes_averaged_shares_with_dp_size_are_the_mini_batch(mode):
    loss, mask, normalizer = mini_batch()
    shares = [aggregate(loss[i : i + 4], mask[i : i + 4], mode, normalizer, dp_size=2) for i in (0, 4)]
    assert_close(sum(shares) / 2, aggregate(loss, mask, mode, normalizer))  # what DDP's gradient average sees


def test_per_micro_batch_normalisation_would_differ():
    """The silent bug the mini-batch normaliser prevents: per-micro-batch token means reweight tokens."""
    mask = torch.tensor([[1.0, 1.0, 1.0, 1.0], [1.0, 0.0, 0.0, 0.0]])
    loss = torch.tensor([[1.0, 1.0, 1.0, 1.0], [6.0, 0.0, 0.0, 0.0]])
    whole = aggregate(loss, mask, "token_mean", Normalizer.from_mask(mask))
    naive = sum(aggregate(loss[i : i + 1], mask[i : i + 1], "token_mean", Normalizer.from_mask(mask[i : i + 1])) / 2 for i in range(2))
    assert_close(whole, torch.tensor(2.0))
    assert not torch.isclose(naive, whole)


def test_unknown_mode():
    with pytest.raises(ValueError, match="token_mean"):
        aggregate(LOSS, MASK, "mean", Normalizer.from_mask(MASK))
