"""The full training loss composed from a config: the one place loss toggles are read.

    L = agg(ℓ_clip) + β·agg(KL_ref)  − c_H·agg_H(H) + μ·L_NLL(correct)  [+ L_value with a critic]

ℓ_clip is the clipped surrogate at the configured ratio level; ``agg`` the configured aggregation
with mini-batch-wide denominators; the KL term is present only when placed in the loss; the value
loss is a token mean of ½(V − R)² over all response tokens. Overlong filtering removes truncated
responses from the policy terms (the critic still learns from them).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from algos.aggregation import Normalizer, aggregate
from algos.config import RLConfig
from algos.filters import overlong_filter_mask
from algos.kl import kl_estimate
from algos.lm_loss import positive_example_nll
from algos.masked import masked_mean
from algos.ratios import importance_ratio
from algos.surrogate import clipped_surrogate
from algos.value import value_loss


@dataclass(frozen=True)
class LossInputs:
    """One micro-batch. Shapes: (B, T) per token, (B,) per sequence.

    logprobs: log π_θ of the sampled tokens, with gradient. old_logprobs: log π_old (sampling).
    advantages: per-token advantages. mask: 1 on real response tokens. truncated, correct: (B,) bool.
    ref_logprobs: log π_ref, needed when the KL term is in the loss. entropy: per-token entropy of
    π_θ, needed for an entropy bonus (logged when given). group_expectation: (B,) GEPO's Ê_q[q].
    values (with gradient), old_values, returns: critic tensors, needed with a critic.
    """

    logprobs: torch.Tensor
    old_logprobs: torch.Tensor
    advantages: torch.Tensor
    mask: torch.Tensor
    truncated: torch.Tensor
    correct: torch.Tensor
    ref_logprobs: torch.Tensor | None = None
    entropy: torch.Tensor | None = None
    group_expectation: torch.Tensor | None = None
    values: torch.Tensor | None = None
    old_values: torch.Tensor | None = None
    returns: torch.Tensor | None = None


@dataclass(frozen=True)
class Denominators:
    """Counts of a whole mini-batch, shared by all its micro-batches."""

    policy: Normalizer
    value_tokens: float
    positive_tokens: float


@dataclass(frozen=True)
class LossOutput:
    """Scalar losses (``total`` is what to backpropagate) and detached diagnostics.

    metrics: means over the micro-batch. token_values: detached per-token values (1-D) whose
    statistics are taken once over a whole step (:func:`algos.update.token_statistics`): the
    importance weight of every loss token, the sampling probability of every up-clipped token.
    """

    total: torch.Tensor
    policy: torch.Tensor
    value: torch.Tensor | None
    metrics: dict[str, float]
    token_values: dict[str, torch.Tensor]


def policy_mask(cfg: RLConfig, mask: torch.Tensor, truncated: torch.Tensor) -> torch.Tensor:
    """The policy-loss mask (B, T): the response mask, minus truncated responses under overlong filtering."""
    if cfg.reward.overlong_filter:
        return mask * overlong_filter_mask(truncated).unsqueeze(-1)
    return mask


def mini_batch_denominators(
    cfg: RLConfig, mask: torch.Tensor, truncated: torch.Tensor, correct: torch.Tensor
) -> Denominators:
    """Denominators of a whole mini-batch: mask (B, T), truncated and correct (B,)."""
    loss_mask = policy_mask(cfg, mask, truncated)
    return Denominators(
        policy=Normalizer.from_mask(
            loss_mask, cfg.aggregation_constant, count_empty=cfg.policy_loss.seq_mean_denominator == "all"
        ),
        value_tokens=float(mask.sum()),
        positive_tokens=float((loss_mask * correct.unsqueeze(-1)).sum()),
    )


def compose_loss(cfg: RLConfig, batch: LossInputs, denominators: Denominators) -> LossOutput:
    """Loss of one micro-batch; summing it over a mini-batch's micro-batches gives the mini-batch loss."""
    pl = cfg.policy_loss
    loss_mask = policy_mask(cfg, batch.mask, batch.truncated)
    ratio = importance_ratio(pl.ratio_level, batch.logprobs, batch.old_logprobs, loss_mask, batch.group_expectation)
    per_token, stats = clipped_surrogate(
        ratio, batch.advantages, loss_mask, pl.clip_eps_low, pl.clip_eps_high, pl.dual_clip_c
    )
    pg_loss = aggregate(per_token, loss_mask, pl.aggregation, denominators.policy)
    policy = pg_loss
    metrics = {
        "actor/pg_loss": pg_loss.item(),
        "actor/clip_frac_low": stats.clip_frac_low.item(),
        "actor/clip_frac_high": stats.clip_frac_high.item(),
        "actor/dual_clip_frac": stats.dual_clip_frac.item(),
        "actor/approx_kl_old": masked_mean(
            kl_estimate(batch.logprobs.detach(), batch.old_logprobs, "k3"), batch.mask
        ).item(),
    }

    if batch.ref_logprobs is not None:
        metrics["actor/kl_ref"] = masked_mean(
            kl_estimate(batch.logprobs.detach(), batch.ref_logprobs, "k3"), batch.mask
        ).item()
    if cfg.kl_in_loss:
        if batch.ref_logprobs is None:
            raise ValueError("kl.placement=loss with kl.coef > 0 needs reference log-probabilities")
        kl = kl_estimate(batch.logprobs, batch.ref_logprobs, cfg.kl.estimator, cfg.kl.clamp)
        kl_loss = aggregate(kl, loss_mask, pl.aggregation, denominators.policy)
        policy = policy + cfg.kl.coef * kl_loss
        metrics["actor/kl_loss"] = kl_loss.item()

    if batch.entropy is not None:
        metrics["actor/entropy"] = masked_mean(batch.entropy.detach(), batch.mask).item()
    if pl.entropy_coef > 0:
        if batch.entropy is None:
            raise ValueError("policy_loss.entropy_coef > 0 needs per-token entropies")
        mode = pl.aggregation if pl.entropy_aggregation == "policy" else "token_mean"
        entropy_term = aggregate(batch.entropy, loss_mask, mode, denominators.policy)
        policy = policy - pl.entropy_coef * entropy_term

    if pl.pos_lm_coef > 0:
        nll = positive_example_nll(batch.logprobs, loss_mask, batch.correct, denominators.positive_tokens)
        policy = policy + pl.pos_lm_coef * nll
        metrics["actor/pos_lm_loss"] = nll.item()

    value = None
    if cfg.critic.enabled:
        if batch.values is None or batch.old_values is None or batch.returns is None:
            raise ValueError("a critic needs values, old_values and returns in the loss inputs")
        per_token_value, value_clip_frac = value_loss(
            batch.values, batch.old_values, batch.returns, batch.mask, cfg.critic.value_clip
        )
        value = aggregate(per_token_value, batch.mask, "token_mean", Normalizer(denominators.value_tokens, 1.0))
        metrics["critic/value_loss"] = value.item()
        metrics["critic/value_clip_frac"] = value_clip_frac.item()

    total = policy if value is None else policy + value
    metrics["actor/policy_loss"] = policy.item()
    real = loss_mask > 0
    up_clipped = real & stats.up_clipped
    token_values = {
        "actor/ratio": ratio.detach()[real],
        "actor/clip_high_prob": batch.old_logprobs[up_clipped].exp(),
    }
    return LossOutput(total=total, policy=policy, value=value, metrics=metrics, token_values=token_values)
