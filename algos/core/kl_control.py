"""The KL coefficient β over a run: fixed, or adapted towards a target KL (Ziegler et al. 2019, §2.2)."""

from __future__ import annotations

import dataclasses

import torch

from algos.config.registry import KL_ESTIMATORS
from algos.config.schema import RLConfig
from algos.core.kl import kl_estimate
from algos.core.masked import masked_mean


def adapted_coef(coef: float, measured_kl: float, target: float, horizon: int, responses: int) -> float:
    """β after one step: β · (1 + clip(KL / target − 1, −0.2, 0.2) · responses / horizon).

    measured_kl: the step's mean per-token KL to the reference; responses: the batch size B.
    """
    error = min(max(measured_kl / target - 1.0, -0.2), 0.2)
    return coef * (1.0 + error * responses / horizon)


def measured_kl(cfg: RLConfig, old_logprobs: torch.Tensor, ref_logprobs: torch.Tensor, mask: torch.Tensor) -> float:
    """The batch's KL to the reference the controller reads: the mean over responses of each response's
    token mean of the configured estimator (k3 for an exact one, which needs logits), from π_old and π_ref
    log-probabilities (B, T)."""
    estimator = "k3" if KL_ESTIMATORS[cfg.kl.estimator].facts.exact else cfg.kl.estimator
    per_token = kl_estimate(old_logprobs, ref_logprobs, estimator, cfg.kl.clamp)
    return masked_mean(per_token, mask, dim=-1).mean().item()


def with_coef(cfg: RLConfig, coef: float) -> RLConfig:
    """``cfg`` with β = ``coef``: the config one step trains with under the adaptive controller."""
    return dataclasses.replace(cfg, kl=dataclasses.replace(cfg.kl, coef=coef))
