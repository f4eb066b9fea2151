"""Per-token estimators of KL(π_θ ‖ π_ref) from log-probabilities of tokens sampled from π_θ.

With log r = log π_ref(o_t) − log π_θ(o_t) (Schulman 2020, "Approximating KL divergence"):
k1 = −log r, k2 = ½ (log r)², k3 = r − log r − 1 (unbiased and always ≥ 0; GRPO's Eq. 4), abs = |log r|.
``k1+`` and ``k3+`` take the value of k1 / k3 and the gradient of k2, whose expected gradient is the
KL's (verl's straight-through ``+`` kinds). ``full`` is the exact KL over the vocabulary
(:func:`full_kl`), computed from logits rather than from sampled tokens.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from algos.config.registry import KL_ESTIMATORS, KlFacts


@dataclass(frozen=True)
class KlInputs:
    """What every KL estimator takes: ``log_ratio`` (B, T) log π_ref − log π_θ of the sampled tokens (None
    without reference log-probabilities), and ``exact`` (B, T) the exact per-token KL from the update's
    logits where the run computes it (:func:`full_kl`)."""

    log_ratio: torch.Tensor | None
    exact: torch.Tensor | None = None


@KL_ESTIMATORS.register("k1+", KlFacts(straight_through=True), summary="k1's value with k2's gradient (verl's k1+).")
@KL_ESTIMATORS.register("k1")
def k1(x: KlInputs) -> torch.Tensor:
    """k1 = −log r = log(π_θ / π_ref): unbiased, can be negative."""
    return -x.log_ratio


@KL_ESTIMATORS.register("k2")
def k2(x: KlInputs) -> torch.Tensor:
    """k2 = ½ (log r)²: biased, its expected gradient is the KL's."""
    return 0.5 * x.log_ratio**2


@KL_ESTIMATORS.register("k3+", KlFacts(straight_through=True), summary="k3's value with k2's gradient (verl's k3+).")
@KL_ESTIMATORS.register("k3")
def k3(x: KlInputs) -> torch.Tensor:
    """k3 = r − log r − 1: unbiased and always ≥ 0 (GRPO's Eq. 4; Schulman 2020)."""
    return torch.exp(x.log_ratio) - x.log_ratio - 1.0


@KL_ESTIMATORS.register("abs")
def absolute(x: KlInputs) -> torch.Tensor:
    """abs = |log r|."""
    return x.log_ratio.abs()


@KL_ESTIMATORS.register("full", KlFacts(exact=True))
def exact(x: KlInputs) -> torch.Tensor:
    """The exact KL Σ_v π_θ (log π_θ − log π_ref) at every position, from the update's logits (loss placement only)."""
    if x.exact is None:
        raise ValueError("kl.estimator=full needs the exact per-token KL from the update's forward pass")
    return x.exact


def kl_estimate(
    logprobs: torch.Tensor,
    ref_logprobs: torch.Tensor | None,
    estimator: str,
    clamp: float | None = None,
    exact: torch.Tensor | None = None,
) -> torch.Tensor:
    """Per-token KL estimate (B, T) from ``logprobs`` and ``ref_logprobs`` (B, T); the one place an estimator is read.

    clamp: if given, the estimate is clamped to [−clamp, clamp] (verl clamps k3 at 10); None is exact.
    exact: (B, T) the exact KL, for an estimator with ``exact`` (``full``).
    A ``straight_through`` estimator has its value and k2's gradient.
    """
    member = KL_ESTIMATORS[estimator]
    if ref_logprobs is None and not member.facts.exact:
        raise ValueError(f"kl.estimator={estimator} needs reference log-probabilities")
    log_r = None if ref_logprobs is None else ref_logprobs - logprobs
    kl = member.function(KlInputs(log_r, exact))
    if clamp is not None:
        kl = kl.clamp(-clamp, clamp)
    if not member.facts.straight_through:
        return kl
    k2 = 0.5 * log_r**2
    return k2 - k2.detach() + kl.detach()


def full_kl(log_policy: torch.Tensor, log_reference: torch.Tensor) -> torch.Tensor:
    """Exact KL(π_θ ‖ π_ref) at every position: Σ_v π_θ(v) (log π_θ(v) − log π_ref(v)).

    log_policy, log_reference: (B, T, V) log-softmax of the two models' logits. Returns (B, T).
    """
    return (log_policy.exp() * (log_policy - log_reference)).sum(dim=-1)
