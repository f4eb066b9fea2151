"""Hand-computed values and invariants of the policy objectives, loss multipliers, KL kinds and token_sum."""

import math

import pytest
import torch
from torch.testing import assert_close

from algos.config.schema import PolicyLossConfig
from algos.core.aggregation import Normalizer, aggregate
from algos.core.kl import full_kl, kl_estimate
from algos.core.kl_control import adapted_coef
from algos.core.objectives import ObjectiveInputs, policy_objective, vespo_weight
from algos.core.ratios import importance_ratio
from algos.core.token_masks import correction_weights, high_entropy_mask, off_policy_sequence_mask


def one_token(log_ratio: float, advantage: float, logprob: float = -1.0):
    logprobs = torch.tensor([[logprob]], requires_grad=True)
    old = torch.tensor([[logprob - log_ratio]])
    return logprobs, old, torch.tensor([[advantage]]), torch.ones(1, 1)


def objective(name, logprobs, old, advantages, mask, **settings):
    cfg = PolicyLossConfig(objective=name, **settings)
    ratio = importance_ratio(cfg.ratio_level, logprobs, old, mask)
    return policy_objective(cfg, ObjectiveInputs(logprobs, old, ratio, advantages, mask, torch.Generator().manual_seed(0)))


def test_cispo_clips_the_weight_but_keeps_the_gradient():
    logprobs, old, adv, mask = one_token(math.log(1.5), 1.0)
    loss, stats = objective("cispo", logprobs, old, adv, mask, clip_eps_high=0.28)
    assert_close(loss, torch.tensor([[1.28]]))  # −1.28 · 1 · (−1)
    (grad,) = torch.autograd.grad(loss.sum(), logprobs)
    assert_close(grad, torch.tensor([[-1.28]]))  # PPO's clip would give 0 here
    assert stats.clip_frac_high.item() == 1.0


def test_cispo_with_a_huge_eps_is_the_importance_weighted_policy_gradient():
    logprobs, old, adv, mask = one_token(math.log(3.0), -2.0)
    loss, _ = objective("cispo", logprobs, old, adv, mask, clip_eps_low=1.0, clip_eps_high=1e6)
    (grad,) = torch.autograd.grad(loss.sum(), logprobs)
    assert_close(grad, torch.tensor([[6.0]]))  # −r · A


def test_sapo_gate_has_ppo_gradient_on_policy_and_decays_far_off():
    logprobs, old, adv, mask = one_token(0.0, 1.0)
    loss, _ = objective("sapo", logprobs, old, adv, mask)
    assert_close(loss, torch.tensor([[-2.0]]))  # f(1) = 2/τ with τ_pos = 1
    (grad,) = torch.autograd.grad(loss.sum(), logprobs)
    assert_close(grad, torch.tensor([[-1.0]]))  # f'(1) = 1
    far, old_far, _, _ = one_token(math.log(4.0), 1.0)
    (far_grad,) = torch.autograd.grad(objective("sapo", far, old_far, adv, mask)[0].sum(), far)
    expected = -4 * torch.sigmoid(torch.tensor(3.0)) * (1 - torch.sigmoid(torch.tensor(3.0))) * 4  # −f'(r) · r
    assert_close(far_grad, expected.reshape(1, 1))


def test_gmpo_geometric_mean_of_sign_aware_clipped_token_ratios():
    logprobs = torch.tensor([[-1.0, -2.0, -1.0]], requires_grad=True)
    old = logprobs.detach() - torch.tensor([[0.5, -0.1, 0.0]])
    mask = torch.tensor([[1.0, 1.0, 0.0]])
    adv = torch.tensor([[1.0, 1.0, 0.0]])
    loss, stats = objective(
        "gmpo", logprobs, old, adv, mask, clip_eps_low=1 - math.exp(-0.4), clip_eps_high=math.exp(0.4) - 1
    )
    # A > 0: the upper clip binds on 0.5 -> 0.4; mean (0.4 − 0.1) / 2 = 0.15
    assert_close(loss[0, 0], torch.tensor(-math.exp(0.15)))
    assert_close(loss[0, 1], loss[0, 0])
    assert stats.clip_frac_high.item() == pytest.approx(0.5)


def test_reinforce_is_the_plain_policy_gradient():
    logprobs, old, adv, mask = one_token(0.7, 2.0, logprob=-0.5)
    loss, _ = objective("reinforce", logprobs, old, adv, mask)
    assert_close(loss, torch.tensor([[1.0]]))
    assert_close(torch.autograd.grad(loss.sum(), logprobs)[0], torch.tensor([[-2.0]]))


def test_dppo_tv_drops_tokens_that_left_the_trust_region():
    logprobs = torch.log(torch.tensor([[0.5, 0.5]])).requires_grad_()
    old = torch.log(torch.tensor([[0.45, 0.2]]))  # moved up by 0.05 (inside 0.1) and 0.3 (outside)
    adv, mask = torch.ones(1, 2), torch.ones(1, 2)
    loss, stats = objective("dppo_tv", logprobs, old, adv, mask, dppo_thresholds=(0.1, 0.1))
    assert_close(loss, torch.tensor([[-(0.5 / 0.45) * math.log(0.5), 0.0]]))
    assert stats.clip_frac_high.item() == 0.5


def test_vespo_weight_is_one_on_policy():
    logprobs, old, adv, mask = one_token(0.0, 1.0)
    assert_close(vespo_weight(logprobs, old, adv, mask, (2.0, 3.0), (3.0, 2.0)), torch.ones(1, 1))
    off = vespo_weight(logprobs, old - 1.0, adv, mask, (2.0, 3.0), (3.0, 2.0))  # w = e: φ = e^3 e^2 e^{-3e}
    assert_close(off, torch.tensor([[math.exp(3 + 2 - 3 * math.e)]]))


def test_kl_cov_penalises_the_top_covariance_tokens():
    logprobs = torch.tensor([[-0.1, -3.0, -1.0, -2.0]], requires_grad=True)
    old = logprobs.detach() - 0.2
    adv = torch.tensor([[2.0, -1.0, 0.5, 0.0]])
    mask = torch.ones(1, 4)
    loss, stats = objective("kl_cov", logprobs, old, adv, mask, cov_ratio=0.25, kl_cov_coef=1.0)
    ratio = math.exp(0.2)
    # covariances: A − 0.375 times log π + 1.525: token 0 is the largest (1.625 · 1.425)
    assert_close(loss, torch.tensor([[-2 * ratio + 0.2, ratio, -0.5 * ratio, 0.0]]))
    assert stats.clip_frac_high.item() == 0.25


def test_clip_cov_detaches_the_configured_share_of_candidates():
    torch.manual_seed(0)
    logprobs = (-torch.rand(4, 50) * 3).requires_grad_()
    old, adv, mask = logprobs.detach(), torch.randn(4, 1).expand(4, 50) * 3, torch.ones(4, 50)
    loss, stats = objective("clip_cov", logprobs, old, adv, mask, cov_ratio=0.02, clip_cov_bounds=(0.0, 100.0))
    assert (loss == 0).sum().item() == 4  # ⌊0.02 · 200⌋ tokens, on policy so nothing else is zero
    assert stats.clip_frac_high.item() == pytest.approx(0.02)


def test_sequence_sum_ratio_is_the_token_ratio_at_length_one_and_the_product_otherwise():
    logprobs = torch.tensor([[-1.0, -2.0], [-0.5, 0.0]])
    old = torch.tensor([[-1.5, -1.0], [-1.0, 0.0]])
    mask = torch.tensor([[1.0, 1.0], [1.0, 0.0]])
    ratio = importance_ratio("sequence_sum", logprobs, old, mask)
    assert_close(ratio[0], torch.full((2,), math.exp(0.5 - 1.0)))
    assert_close(ratio[1, 0], importance_ratio("token", logprobs, old, mask)[1, 0])


def test_correction_weights_truncate_and_mask():
    old = torch.log(torch.tensor([[0.9, 0.3, 0.5]]))
    sampler = torch.log(torch.tensor([[0.3, 0.6, 0.5]]))  # w = 3, 0.5, 1
    mask = torch.tensor([[1.0, 1.0, 0.0]])
    assert_close(
        correction_weights(old, sampler, mask, "truncate", "token", None, 2.0), torch.tensor([[2.0, 0.5, 0.0]])
    )
    assert_close(correction_weights(old, sampler, mask, "mask", "token", 0.6, 2.0), torch.tensor([[0.0, 0.0, 0.0]]))
    assert_close(
        correction_weights(old, sampler, mask, "truncate", "sequence", None, 2.0), torch.tensor([[1.5, 1.5, 0.0]])
    )


def test_high_entropy_mask_keeps_the_top_share():
    entropy = torch.tensor([[0.1, 0.9, 0.5, 0.3, 2.0]])
    mask = torch.tensor([[1.0, 1.0, 1.0, 1.0, 0.0]])
    assert_close(high_entropy_mask(entropy, mask, 0.5), torch.tensor([[0.0, 1.0, 1.0, 0.0, 0.0]]))
    assert_close(high_entropy_mask(entropy, mask, 1.0), mask)


def test_off_policy_mask_drops_only_negative_far_responses():
    logprobs = torch.zeros(3, 2)
    sampler = torch.tensor([[0.5, 0.5], [0.5, 0.5], [0.01, 0.01]])
    adv = torch.tensor([[1.0, 1.0], [-1.0, -1.0], [-1.0, -1.0]])
    keep = off_policy_sequence_mask(logprobs, sampler, adv, torch.ones(3, 2), 0.1)
    assert_close(keep[:, 0], torch.tensor([1.0, 0.0, 1.0]))


def test_kl_kinds():
    logprobs = torch.tensor([[-1.0]], requires_grad=True)
    ref = torch.tensor([[-1.5]])
    assert_close(kl_estimate(logprobs, ref, "abs"), torch.tensor([[0.5]]))
    for kind, value in (("k1+", 0.5), ("k3+", math.exp(-0.5) + 0.5 - 1)):
        estimate = kl_estimate(logprobs, ref, kind)
        assert_close(estimate, torch.tensor([[value]]))
        (grad,) = torch.autograd.grad(estimate.sum(), logprobs)
        assert_close(grad, torch.tensor([[0.5]]))  # k2's gradient: log π − log π_ref
    policy = torch.log(torch.tensor([[[0.5, 0.5]]]))
    reference = torch.log(torch.tensor([[[0.25, 0.75]]]))
    assert_close(full_kl(policy, reference), torch.tensor([[0.5 * math.log(2) + 0.5 * math.log(2 / 3)]]))


def test_token_sum_and_global_counts():
    loss = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    mask = torch.tensor([[1.0, 0.0], [1.0, 1.0]])
    assert aggregate(loss, mask, "token_sum", Normalizer.from_mask(mask)).item() == 8.0
    assert aggregate(loss, mask, "token_mean", Normalizer(6.0, 4.0)).item() == pytest.approx(
        8 / 6
    )  # a share of 6 tokens


def test_adaptive_kl_controller_hand_values():
    assert adapted_coef(0.1, 0.2, 0.1, 100, 10) == pytest.approx(0.1 * (1 + 0.2 * 0.1))  # error clipped at 0.2
    assert adapted_coef(0.1, 0.09, 0.1, 100, 10) == pytest.approx(0.1 * (1 - 0.1 * 0.1))
