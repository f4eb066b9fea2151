"""The full training loss composed from a config: the one place loss toggles are read.

    L = agg(m·ℓ_pg) + β·agg([r·]KL_ref)  − c_H·agg_H(H) + μ·L_NLL(correct)  [+ L_value with a critic]

ℓ_pg is the configured policy objective (PPO's clipped surrogate by default) at the configured ratio
level; m the product of the loss multipliers that are on (rollout-correction weights, the
high-entropy token mask, the off-policy sequence mask); ``agg`` the configured aggregation with
mini-batch-wide denominators; the KL term is present only when placed in the loss, weighted by the
ratio r under ``kl.importance_weighted``; the value loss is a token mean of ½(V − R)² over all
response tokens. Overlong filtering removes truncated responses from the policy terms (the critic
still learns from them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from algos.config.registry import OBJECTIVES
from algos.config.schema import RLConfig
from algos.core.aggregation import Normalizer, aggregate
from algos.core.filters import overlong_filter_mask
from algos.core.kl import kl_estimate
from algos.core.lm_loss import positive_example_nll
from algos.core.masked import masked_mean
from algos.core.objectives import ObjectiveInputs, policy_objective
from algos.core.ratios import importance_ratio
from algos.core.token_masks import correction_weights, high_entropy_mask, off_policy_sequence_mask
from algos.core.value import value_loss


@dataclass(frozen=True)
class LossInputs:
    """One micro-batch. Shapes: (B, T) per token, (B,) per sequence.

    logprobs: log π_θ of the sampled tokens, with gradient. old_logprobs: log π_old (sampling).
    advantages: per-token advantages. mask: 1 on real response tokens. truncated, correct: (B,) bool.
    ref_logprobs: log π_ref, needed when the KL term is in the loss. entropy: per-token entropy of
    π_θ, needed for an entropy bonus or the high-entropy mask (logged when given). group_expectation:
    (B,) GEPO's Ê_q[q]. values (with gradient), old_values, returns: critic tensors, needed with a
    critic. sampler_logprobs: log-probabilities of the stale sampling policy under rollout correction.
    full_kl: exact per-token KL to π_ref (with gradient), needed for ``kl.estimator=full``.
    token_draws: the random stream of objectives that draw tokens (Clip-Cov).
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
    sampler_logprobs: torch.Tensor | None = None
    full_kl: torch.Tensor | None = None
    token_draws: torch.Generator | None = None


@dataclass(frozen=True)
class Denominators:
    """Counts of a whole mini-batch, shared by all its micro-batches."""

    policy: Normalizer
    value_tokens: float
    positive_tokens: float


@dataclass(frozen=True)
class LossOutput:
    """Scalar losses (``total`` is what to backpropagate) and detached diagnostics, all left on the device.

    metrics: means over the micro-batch, 0-d tensors (:meth:`read_metrics` reads them). token_values: detached
    per-token values, flattened (B·T,) with NaN off the loss tokens, whose statistics are taken once over a
    whole step (:func:`algos.trainer.update.token_statistics`): the importance weight of every loss token,
    the sampling probability of every up-clipped token.
    """

    total: torch.Tensor
    policy: torch.Tensor
    value: torch.Tensor | None
    metrics: dict[str, torch.Tensor]
    token_values: dict[str, torch.Tensor]

    def read_metrics(self) -> dict[str, float]:
        """The metrics as numbers (one read from the device)."""
        return dict(zip(self.metrics, torch.stack(list(self.metrics.values())).tolist(), strict=True))


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


def loss_multipliers(cfg: RLConfig, batch: LossInputs, loss_mask: torch.Tensor) -> torch.Tensor | None:
    """Product of the per-token multipliers of the policy loss that are on (B, T), detached; None if none is.

    Rollout-correction weights (unless the objective folds them into its own weight), the
    high-entropy token mask and the off-policy sequence mask.
    """
    pl = cfg.policy_loss
    factors = []
    if _corrects(cfg, batch) and not OBJECTIVES[pl.objective].facts.folds_correction:
        factors.append(_correction(cfg, batch, loss_mask))
    if pl.top_entropy_quantile < 1.0:
        if batch.entropy is None:
            raise ValueError("policy_loss.top_entropy_quantile < 1 needs per-token entropies")
        factors.append(high_entropy_mask(batch.entropy, loss_mask, pl.top_entropy_quantile))
    if pl.off_policy_mask_threshold is not None:
        sampler_logprobs = batch.sampler_logprobs if batch.sampler_logprobs is not None else batch.old_logprobs
        factors.append(
            off_policy_sequence_mask(
                batch.logprobs, sampler_logprobs, batch.advantages, loss_mask, pl.off_policy_mask_threshold
            )
        )
    if not factors:
        return None
    product = factors[0]
    for factor in factors[1:]:
        product = product * factor
    return product


def _corrects(cfg: RLConfig, batch: LossInputs) -> bool:
    """Whether the rollout-correction weights apply: a correction is configured and the sampling log-probs given."""
    return cfg.rollout.correction != "none" and batch.sampler_logprobs is not None


def _correction(cfg: RLConfig, batch: LossInputs, loss_mask: torch.Tensor) -> torch.Tensor:
    rollout = cfg.rollout
    return correction_weights(
        batch.old_logprobs,
        batch.sampler_logprobs,
        loss_mask,
        rollout.correction,
        rollout.correction_level,
        rollout.correction_low,
        rollout.correction_high,
    )


def compose_loss(cfg: RLConfig, batch: LossInputs, denominators: Denominators) -> LossOutput:
    """Loss of one micro-batch; summing it over a mini-batch's micro-batches gives the mini-batch loss."""
    pl = cfg.policy_loss
    loss_mask = policy_mask(cfg, batch.mask, batch.truncated)
    ratio = importance_ratio(pl.ratio_level, batch.logprobs, batch.old_logprobs, loss_mask, batch.group_expectation)
    folded = (
        _correction(cfg, batch, loss_mask)
        if _corrects(cfg, batch) and OBJECTIVES[pl.objective].facts.folds_correction
        else None
    )
    inputs = ObjectiveInputs(
        batch.logprobs, batch.old_logprobs, ratio, batch.advantages, loss_mask, batch.token_draws, folded
    )
    per_token, stats = policy_objective(pl, inputs)
    multipliers = loss_multipliers(cfg, batch, loss_mask)
    if multipliers is not None:
        per_token = per_token * multipliers
    pg_loss = aggregate(per_token, loss_mask, pl.aggregation, denominators.policy)
    policy = pg_loss
    metrics = {
        "actor/pg_loss": pg_loss.detach(),
        "actor/clip_frac_low": stats.clip_frac_low.detach(),
        "actor/clip_frac_high": stats.clip_frac_high.detach(),
        "actor/dual_clip_frac": stats.dual_clip_frac.detach(),
        "actor/approx_kl_old": masked_mean(
            kl_estimate(batch.logprobs.detach(), batch.old_logprobs, "k3"), batch.mask
        ).detach(),
    }
    if multipliers is not None:
        metrics["actor/loss_multiplier_mean"] = masked_mean(multipliers, loss_mask).detach()

    if batch.ref_logprobs is not None:
        metrics["actor/kl_ref"] = masked_mean(
            kl_estimate(batch.logprobs.detach(), batch.ref_logprobs, "k3"), batch.mask
        ).detach()
    if cfg.kl_in_loss:
        kl = kl_estimate(batch.logprobs, batch.ref_logprobs, cfg.kl.estimator, cfg.kl.clamp, batch.full_kl)
        if cfg.kl.importance_weighted:
            kl = kl * ratio
        kl_loss = aggregate(kl, loss_mask, pl.aggregation, denominators.policy)
        policy = policy + cfg.kl.coef * kl_loss
        metrics["actor/kl_loss"] = kl_loss.detach()

    if batch.entropy is not None:
        metrics["actor/entropy"] = masked_mean(batch.entropy.detach(), batch.mask).detach()
    if pl.entropy_coef > 0:
        if batch.entropy is None:
            raise ValueError("policy_loss.entropy_coef > 0 needs per-token entropies")
        mode = pl.aggregation if pl.entropy_aggregation == "policy" else "token_mean"
        entropy_term = aggregate(batch.entropy, loss_mask, mode, denominators.policy)
        policy = policy - pl.entropy_coef * entropy_term

    if pl.pos_lm_coef > 0:
        nll = positive_example_nll(batch.logprobs, loss_mask, batch.correct, denominators.positive_tokens)
        policy = policy + pl.pos_lm_coef * nll
        metrics["actor/pos_lm_loss"] = nll.detach()

    value = None
    if cfg.critic.enabled:
        if batch.values is None or batch.old_values is None or batch.returns is None:
            raise ValueError("a critic needs values, old_values and returns in the loss inputs")
        per_token_value, value_clip_frac = value_loss(
            batch.values, batch.old_values, batch.returns, batch.mask, cfg.critic.value_clip
        )
        value = aggregate(per_token_value, batch.mask, "token_mean", Normalizer(denominators.value_tokens, 1.0))
        metrics["critic/value_loss"] = value.detach()
        metrics["critic/value_clip_frac"] = value_clip_frac.detach()

    total = policy if value is None else policy + value
    metrics["actor/policy_loss"] = policy.detach()
    real = loss_mask > 0
    up_clipped = real & stats.up_clipped
    token_values = {  # NaN off the tokens a statistic is over: no boolean indexing, which waits for the device
        "actor/ratio": ratio.detach().masked_fill(~real, math.nan).flatten(),
        "actor/clip_high_prob": batch.old_logprobs.exp().masked_fill(~up_clipped, math.nan).flatten(),
    }
    return LossOutput(total=total, policy=policy, value=value, metrics=metrics, token_values=token_values)
