"""Per-token estimators of KL(π_θ ‖ π_ref) from log-probabilities of tokens sampled from π_θ.

With log r = log π_ref(o_t) − log π_θ(o_t) (Schulman 2020, "Approximating KL divergence"):
k1 = −log r, k2 = ½ (log r)², k3 = r − log r − 1 (unbiased and always ≥ 0; GRPO's Eq. 4).
"""

from __future__ import annotations

import torch

KL_ESTIMATORS = ("k1", "k2", "k3")


def kl_estimate(
    logprobs: torch.Tensor, ref_logprobs: torch.Tensor, estimator: str, clamp: float | None = None
) -> torch.Tensor:
    """Per-token KL estimate (B, T) from ``logprobs`` and ``ref_logprobs`` (B, T).

    clamp: if given, the estimate is clamped to [−clamp, clamp] (verl clamps k3 at 10); None is exact.
    """
    log_r = ref_logprobs - logprobs
    if estimator == "k1":
        kl = -log_r
    elif estimator == "k2":
        kl = 0.5 * log_r**2
    elif estimator == "k3":
        kl = torch.exp(log_r) - log_r - 1.0
    else:
        raise ValueError(f"unknown KL estimator '{estimator}'; valid: {', '.join(KL_ESTIMATORS)}")
    return kl if clamp is None else kl.clamp(-clamp, clamp)
