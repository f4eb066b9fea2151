"""Per-token estimators of KL(π_θ ‖ π_ref) from log-probabilities of tokens sampled from π_θ.

With log r = log π_ref(o_t) − log π_θ(o_t) (Schulman 2020, "Approximating KL divergence"):
k1 = −log r, k2 = ½ (log r)², k3 = r − log r − 1 (unbiased and always ≥ 0; GRPO's Eq. 4), abs = |log r|.
``k1+`` and ``k3+`` take the value of k1 / k3 and the gradient of k2, whose expected gradient is the
KL's (verl's straight-through ``+`` kinds). ``full`` is the exact KL over the vocabulary
(:func:`full_kl`), computed from logits rather than from sampled tokens.
"""

from __future__ import annotations

import torch

KL_ESTIMATORS = ("k1", "k2", "k3", "abs")
"""Estimators computed from the log-probabilities of the sampled tokens, each with its own gradient."""

STRAIGHT_THROUGH_ESTIMATORS = ("k1+", "k3+")
"""k1 / k3 values with k2's gradient."""


def _sampled_estimate(log_r: torch.Tensor, estimator: str) -> torch.Tensor:
    if estimator == "k1":
        return -log_r
    if estimator == "k2":
        return 0.5 * log_r**2
    if estimator == "k3":
        return torch.exp(log_r) - log_r - 1.0
    if estimator == "abs":
        return log_r.abs()
    valid = ", ".join((*KL_ESTIMATORS, *STRAIGHT_THROUGH_ESTIMATORS, "full"))
    raise ValueError(f"unknown KL estimator '{estimator}'; valid: {valid}")


def kl_estimate(
    logprobs: torch.Tensor, ref_logprobs: torch.Tensor, estimator: str, clamp: float | None = None
) -> torch.Tensor:
    """Per-token KL estimate (B, T) from ``logprobs`` and ``ref_logprobs`` (B, T).

    clamp: if given, the estimate is clamped to [−clamp, clamp] (verl clamps k3 at 10); None is exact.
    """
    log_r = ref_logprobs - logprobs
    straight_through = estimator.endswith("+")
    kl = _sampled_estimate(log_r, estimator.removesuffix("+"))
    if clamp is not None:
        kl = kl.clamp(-clamp, clamp)
    if not straight_through:
        return kl
    k2 = 0.5 * log_r**2
    return k2 - k2.detach() + kl.detach()


def full_kl(log_policy: torch.Tensor, log_reference: torch.Tensor) -> torch.Tensor:
    """Exact KL(π_θ ‖ π_ref) at every position: Σ_v π_θ(v) (log π_θ(v) − log π_ref(v)).

    log_policy, log_reference: (B, T, V) log-softmax of the two models' logits. Returns (B, T).
    """
    return (log_policy.exp() * (log_policy - log_reference)).sum(dim=-1)
