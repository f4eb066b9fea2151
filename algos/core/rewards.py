"""From verifier outcomes to what the estimators see: the one place reward toggles are read."""

from __future__ import annotations

import torch

from algos.config.schema import RLConfig
from algos.core.filters import informative_groups
from algos.core.kl import kl_estimate
from algos.core.reward_functions import Graded, combine_rewards, reward_matrix
from algos.core.shaping import place_outcome_reward, soft_overlong_punishment


def outcome_scores(
    cfg: RLConfig,
    correct: torch.Tensor,
    lengths: torch.Tensor,
    truncated: torch.Tensor | None = None,
    scorable: torch.Tensor | None = None,
) -> torch.Tensor:
    """Scalar reward per response (B,): the combined reward functions plus, if on, DAPO's soft overlong
    punishment times ``reward.soft_overlong_factor``. NaN for a response no function could score.

    correct: (B,) bool from the verifier; lengths: (B,) response lengths in tokens; truncated: (B,)
    bool, responses cut off at the budget (default: none); scorable: (B,) bool, responses the
    verifier gave a verdict on (default: all). Groups are ``rollout.group_size`` consecutive rows.
    """
    graded = Graded(
        correct=correct,
        scorable=torch.ones_like(correct) if scorable is None else scorable,
        lengths=lengths,
        truncated=torch.zeros_like(correct) if truncated is None else truncated,
    )
    scores = combine_rewards(cfg, reward_matrix(cfg, graded), cfg.rollout.group_size)
    if cfg.reward.soft_overlong_buffer is not None:
        punishment = soft_overlong_punishment(lengths, cfg.soft_overlong_max_length, cfg.reward.soft_overlong_buffer)
        scores = scores + cfg.reward.soft_overlong_factor * punishment
    return scores


def rewarded_verdicts(cfg: RLConfig, correct: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """The verdicts the reward sees (B,) bool: ``correct`` with a ``reward.coin_flip_share`` of its entries,
    drawn with ``generator`` (CPU), replaced by fair coin flips; ``correct`` itself when the share is 0."""
    share = cfg.reward.coin_flip_share
    if share == 0:
        return correct
    chosen = torch.rand(correct.shape, generator=generator) < share  # (B,)
    coins = torch.rand(correct.shape, generator=generator) < 0.5  # (B,)
    return torch.where(chosen.to(correct.device), coins.to(correct.device), correct)


def token_rewards(
    cfg: RLConfig,
    scores: torch.Tensor,
    mask: torch.Tensor,
    old_logprobs: torch.Tensor | None = None,
    ref_logprobs: torch.Tensor | None = None,
) -> torch.Tensor:
    """Per-token rewards (B, T): the outcome on the last real token, minus β·KL per token if the KL
    penalty is placed in the reward (classic RLHF PPO). old_logprobs/ref_logprobs: (B, T)."""
    rewards = place_outcome_reward(scores, mask)
    if cfg.kl_in_reward:
        if old_logprobs is None or ref_logprobs is None:
            raise ValueError("kl.placement=reward needs sampling and reference log-probabilities")
        rewards = rewards - cfg.kl.coef * kl_estimate(old_logprobs, ref_logprobs, cfg.kl.estimator, cfg.kl.clamp) * mask
    return rewards


def keep_groups(cfg: RLConfig, correct: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
    """Dynamic sampling's keep mask (P,): the informative groups.

    correct: (B,) bool; scores: (B,) final rewards. Filters on correctness unless configured
    to filter on the reward.
    """
    metric = correct.float() if cfg.dynamic_sampling.filter_on == "correctness" else scores
    return informative_groups(metric, cfg.rollout.group_size)
