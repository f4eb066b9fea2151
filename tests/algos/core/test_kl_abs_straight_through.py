"""``abs+``: abs's value, k2's gradient, and verl's ``kl_penalty(..., "abs+")``."""

import torch
from torch.testing import assert_close

from algos.config.presets import load_config
from algos.core.kl import kl_estimate
from tests.peers import import_peer


def test_value_of_abs_gradient_of_k2():
    logprobs = torch.tensor([[-1.0, -2.0, -0.5]], requires_grad=True)
    ref = torch.tensor([[-1.5, -1.0, -0.5]])
    kl = kl_estimate(logprobs, ref, "abs+")
    assert_close(kl, torch.tensor([[0.5, 1.0, 0.0]]))  # |log π_ref − log π|
    (grad,) = torch.autograd.grad(kl.sum(), logprobs)
    assert_close(grad, torch.tensor([[0.5, -1.0, 0.0]]))  # d/dlog π of ½(log π − log π_ref)² = log π − log π_ref


def test_is_a_config_choice_in_the_loss_and_the_reward():
    assert load_config(overrides=["kl.coef=0.1", "kl.estimator=abs+"]).kl.estimator == "abs+"
    assert load_config(overrides=["kl.coef=0.1", "kl.estimator=abs+", "kl.placement=reward"]).kl_in_reward


def test_agrees_with_verl():
    core_algos = import_peer("verl.trainer.ppo.core_algos")
    logprobs = (torch.randn(8, 12) * 2).requires_grad_()
    ref = torch.randn(8, 12) * 2
    ours, theirs = kl_estimate(logprobs, ref, "abs+"), core_algos.kl_penalty(logprobs, ref, "abs+")
    assert_close(ours, theirs, atol=1e-6, rtol=1e-6)
    weights = torch.randn(8, 12)
    grads = [torch.autograd.grad((kl * weights).sum(), logprobs)[0] for kl in (ours, theirs)]
    assert_close(*grads, atol=1e-6, rtol=1e-6)
