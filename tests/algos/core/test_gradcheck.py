"""torch.autograd.gradcheck (float64) through every ratio level x aggregation, KL and value loss."""

import itertools

import pytest
import torch

from algos.config.registry import AGGREGATIONS, KL_ESTIMATORS
from algos.core.aggregation import Normalizer, aggregate
from algos.core.kl import kl_estimate
from algos.core.ratios import group_expected_probability, importance_ratio
from algos.core.surrogate import clipped_surrogate
from algos.core.value import value_loss

LEVELS = ["token", "sequence", "sequence_token", "group_expectation"]


@pytest.mark.parametrize(("level", "mode", "dual"), list(itertools.product(LEVELS, AGGREGATIONS.names(), [None, 3.0])))
def test_surrogate_and_aggregation_gradients(level, mode, dual):
    mask = (torch.arange(5) < torch.tensor([[5], [3], [4], [2]])).double()
    old = -torch.rand(4, 5)
    # log-ratios chosen away from the clip boundaries (gradients are undefined exactly on them)
    shift = torch.tensor([0.05, -0.6, 0.5, -0.05]).unsqueeze(-1) + 0.01 * torch.randn(4, 5)
    logprobs = (old + shift).requires_grad_()
    advantages = torch.tensor([1.0, -2.0, 0.5, -1.0]).unsqueeze(-1) * mask
    expectation = group_expected_probability(old, mask, 2)
    normalizer = Normalizer.from_mask(mask, constant=8)

    def objective(lp):
        ratio = importance_ratio(level, lp, old, mask, expectation)
        loss, _ = clipped_surrogate(ratio, advantages, mask, 0.2, 0.28, dual)
        return aggregate(loss, mask, mode, normalizer)

    assert torch.autograd.gradcheck(objective, (logprobs,))


@pytest.mark.parametrize("estimator", KL_ESTIMATORS.having(lambda facts: not (facts.exact or facts.straight_through)))
def test_kl_gradients(estimator):
    logprobs = torch.randn(3, 4).requires_grad_()
    ref = torch.randn(3, 4)
    assert torch.autograd.gradcheck(lambda lp: kl_estimate(lp, ref, estimator), (logprobs,))


@pytest.mark.parametrize("clip", [None, 0.2])
def test_value_loss_gradients(clip):
    values = torch.tensor([[1.0, 2.0, 0.3]]).requires_grad_()
    old = torch.tensor([[1.5, 1.5, 0.25]])
    returns = torch.tensor([[0.0, 1.0, 1.0]])
    assert torch.autograd.gradcheck(lambda v: value_loss(v, old, returns, torch.ones(1, 3), clip)[0], (values,))
