import math

import pytest
import torch
from torch.testing import assert_close

from algos.core.kl import kl_estimate
from algos.core.logprobs import entropy_from_logits, token_logprobs
from algos.core.value import explained_variance, value_loss

LOGP = torch.log(torch.tensor([[0.5]], dtype=torch.float64))
REF = torch.log(torch.tensor([[0.25]], dtype=torch.float64))


@pytest.mark.parametrize(
    ("estimator", "expected"),
    [("k1", math.log(2)), ("k2", 0.5 * math.log(2) ** 2), ("k3", 0.5 + math.log(2) - 1)],
)
def test_kl_hand_values(estimator, expected):
    assert_close(kl_estimate(LOGP, REF, estimator), torch.tensor([[expected]]))


def test_k3_is_non_negative_and_zero_on_policy():
    logp, ref = torch.randn(50, 20) * 3, torch.randn(50, 20) * 3
    assert (kl_estimate(logp, ref, "k3") >= 0).all()
    assert_close(kl_estimate(logp, logp, "k3"), torch.zeros(50, 20))


def test_k3_is_unbiased_for_the_true_kl():
    p = torch.tensor([0.6, 0.3, 0.1])
    ref = torch.tensor([0.2, 0.5, 0.3])
    true_kl = (p * (p / ref).log()).sum()
    expectation = (p * kl_estimate(p.log(), ref.log(), "k3")).sum()
    assert_close(expectation, true_kl)


def test_kl_clamp():
    assert kl_estimate(torch.tensor([[0.0]]), torch.tensor([[30.0]]), "k3", clamp=10.0).item() == 10.0


def test_token_logprobs_and_uniform_entropy():
    logits = torch.zeros(2, 3, 4)
    tokens = torch.tensor([[0, 1, 2], [3, 3, 3]])
    assert_close(token_logprobs(logits, tokens), torch.full((2, 3), -math.log(4), dtype=torch.float32))
    assert_close(entropy_from_logits(logits), torch.full((2, 3), math.log(4), dtype=torch.float32))


def test_value_loss_hand_values():
    values, old, returns = torch.tensor([[1.0, 2.0]]), torch.tensor([[1.5, 1.5]]), torch.tensor([[2.0, 0.0]])
    loss, frac = value_loss(values, old, returns, torch.ones(1, 2))
    assert_close(loss, torch.tensor([[0.5, 2.0]]))
    loss, frac = value_loss(
        torch.tensor([[1.0]]), torch.tensor([[1.5]]), torch.tensor([[0.0]]), torch.ones(1, 1), clip=0.2
    )
    assert_close(loss, torch.tensor([[0.5 * 1.3**2]]))
    assert frac.item() == 1.0


def test_explained_variance():
    returns = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    mask = torch.ones(2, 2)
    assert explained_variance(returns, returns, mask) == pytest.approx(1.0)
    assert explained_variance(torch.full((2, 2), 2.5), returns, mask) == pytest.approx(0.0)
    # V = [1, 1, 3, 5]: residuals [0, 1, 0, -1] have variance 0.5; the returns 1.25
    assert explained_variance(torch.tensor([[1.0, 1.0], [3.0, 5.0]]), returns, mask) == pytest.approx(1 - 0.5 / 1.25)


def test_explained_variance_is_left_out_for_constant_returns_and_whole_batch_buckets_stay_finite():
    """A length bucket whose returns are all equal made the old per-bucket average -inf; over the batch it is defined."""
    mask = torch.tensor([[1.0, 1.0, 1.0], [1.0, 0.0, 0.0], [1.0, 1.0, 1.0], [1.0, 0.0, 0.0]])
    returns = torch.tensor([[1.0, 1.0, 1.0], [0.0, 0.0, 0.0], [1.0, 1.0, 1.0], [0.0, 0.0, 0.0]]) * mask
    values = torch.full((4, 3), 0.5) * mask
    short = torch.tensor([1, 3])
    assert explained_variance(values[short], returns[short], mask[short]) is None  # a bucket of equal returns
    whole = explained_variance(values, returns, mask)
    assert whole is not None and math.isfinite(whole)
    # returns: six 1s and two 0s (mean 0.75, variance 0.1875); residuals ±0.5 have mean 0.25, variance 0.1875
    assert whole == pytest.approx(0.0)
