"""DRO's policy loss (verl's ``dro``): the advantage-weighted log-likelihood with a quadratic penalty on the log-ratio.

ℓ_t = −(Â_t · log π_θ(o_t) − β/2 · (log π_θ(o_t) − log π_old(o_t))²), β = ``policy_loss.objective_params.beta``.
The penalty keeps the policy near π_old instead of a clip, so nothing is clipped and both clip
fractions are 0. Its gradient is −Â_t + β · log r_t per unit of log π_θ: REINFORCE's on-policy, pulled
back in proportion to how far the token's log-probability has moved.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from pydantic import Field

from algos.config.registry import OBJECTIVES, ObjectiveFacts
from algos.config.schema import PolicyLossConfig
from algos.core.objectives import ObjectiveInputs
from algos.core.surrogate import SurrogateStats


@dataclass
class DroParameters:
    """beta: weight of the quadratic log-ratio penalty (verl's ``policy_loss.dro_beta``; required, > 0)."""

    beta: float = Field(gt=0)


@OBJECTIVES.register("dro", ObjectiveFacts(token_ratio_only=True), params=DroParameters)
def dro(x: ObjectiveInputs, cfg: PolicyLossConfig) -> tuple[torch.Tensor, SurrogateStats]:
    """DRO: ℓ = −(Â · log π_θ − β/2 · (log r)²), a quadratic log-ratio penalty in place of a clip (verl ``dro``)."""
    beta = OBJECTIVES["dro"].parameters(cfg.objective_params, "policy_loss.objective_params").beta
    log_ratio = x.logprobs - x.old_logprobs
    loss = -(x.logprobs * x.advantages - 0.5 * beta * log_ratio.square())
    nothing = torch.zeros((), dtype=loss.dtype, device=loss.device)
    return loss, SurrogateStats(nothing, nothing, nothing, torch.zeros_like(x.mask, dtype=torch.bool))
