import torch
from torch.testing import assert_close

from algos.core.surrogate import clipped_surrogate


def test_hand_values_with_clip_higher():
    ratio = torch.tensor([[0.5, 1.5, 1.0, 0.7, 1.3]])
    adv = torch.tensor([[1.0, 1.0, -1.0, -1.0, -1.0]])
    loss, stats = clipped_surrogate(ratio, adv, torch.ones(1, 5), eps_low=0.2, eps_high=0.28)
    assert_close(loss, torch.tensor([[-0.5, -1.28, 1.0, 0.8, 1.3]]))
    assert_close(stats.clip_frac_low, torch.tensor(0.2))
    assert_close(stats.clip_frac_high, torch.tensor(0.2))
    assert_close(stats.dual_clip_frac, torch.tensor(0.0))


def test_dual_clip_bounds_negative_advantages_only():
    ratio = torch.tensor([[5.0, 5.0, 2.0]])
    adv = torch.tensor([[-1.0, 1.0, -1.0]])
    loss, stats = clipped_surrogate(ratio, adv, torch.ones(1, 3), 0.2, 0.2, dual_clip_c=3.0)
    assert_close(loss, torch.tensor([[3.0, -1.2, 2.0]]))
    assert_close(stats.dual_clip_frac, torch.tensor(1 / 3))


def test_huge_epsilon_makes_clipping_a_no_op():
    ratio, adv = torch.rand(4, 6) * 3, torch.randn(4, 6)
    loss, stats = clipped_surrogate(ratio, adv, torch.ones(4, 6), 1e9, 1e9)
    assert_close(loss, -ratio * adv)
    assert stats.clip_frac_low == 0 and stats.clip_frac_high == 0


def test_clip_fractions_ignore_padding():
    ratio = torch.tensor([[2.0, 2.0]])
    adv = torch.ones(1, 2)
    _, stats = clipped_surrogate(ratio, adv, torch.tensor([[1.0, 0.0]]), 0.2, 0.2)
    assert_close(stats.clip_frac_high, torch.tensor(1.0))


def test_clipped_token_has_no_gradient():
    log_ratio = torch.tensor([[0.5, 0.0]], requires_grad=True)
    loss, _ = clipped_surrogate(log_ratio.exp(), torch.ones(1, 2), torch.ones(1, 2), 0.2, 0.2)
    (grad,) = torch.autograd.grad(loss.sum(), log_ratio)
    assert_close(grad, torch.tensor([[0.0, -1.0]]))
