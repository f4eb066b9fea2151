"""Warnings for configs that are valid but almost certainly not what the user meant.

Each check returns a message; :func:`warn_about` logs every message on the ``algos.config.guardrails``
logger and returns them, so callers (trainer, tests) can see exactly what fired.
"""

from __future__ import annotations

import logging

from algos.config.schema import RLConfig
from algos.kernels import unpinned_kernels

LOGGER = logging.getLogger("algos.config.guardrails")


def inert_clip_higher(cfg: RLConfig) -> str | None:
    """Clip-higher needs the policy to move within a rollout batch; with one update the ratio is 1."""
    pl = cfg.policy_loss
    if pl.clip_eps_high != pl.clip_eps_low and cfg.updates_per_rollout == 1 and cfg.rollout.policy_staleness == 0:
        return (
            f"clip-higher is inert: clip_eps_high={pl.clip_eps_high} differs from clip_eps_low={pl.clip_eps_low}, "
            "but there is one on-policy update per rollout batch, so every ratio is 1; raise optim.mini_batches "
            "or optim.epochs (DAPO makes 16 updates per rollout batch)"
        )
    return None


def unreachable_overlong_budget(cfg: RLConfig, longest_possible_response: int | None = None) -> str | None:
    """Overlong filtering / soft punishment configured where no response can reach their lengths.

    longest_possible_response: the longest response the task or model can produce (e.g. the
    model's context left after the prompt), when the caller knows it.
    """
    budget = cfg.rollout.max_new_tokens
    if longest_possible_response is not None:
        budget = min(budget, longest_possible_response)
    messages = []
    if cfg.reward.soft_overlong_buffer is not None:
        soft_start = cfg.soft_overlong_max_length - cfg.reward.soft_overlong_buffer
        if budget <= soft_start:
            messages.append(
                f"soft overlong punishment never fires: responses stop at {budget} tokens but the punishment "
                f"starts after L_max - L_cache = {soft_start}"
            )
    if cfg.reward.overlong_filter and budget < cfg.rollout.max_new_tokens:
        messages.append(
            f"overlong filtering never fires: responses end within {budget} tokens, below the generation budget "
            f"rollout.max_new_tokens={cfg.rollout.max_new_tokens}"
        )
    return "; ".join(messages) or None


def reward_dynamic_sampling(cfg: RLConfig) -> str | None:
    """Dynamic sampling on the reward instead of correctness keeps groups that differ only in reward."""
    if cfg.dynamic_sampling.enabled and cfg.dynamic_sampling.filter_on == "reward":
        return (
            "dynamic sampling filters on the reward, not on correctness: with a graded or custom reward function, "
            "groups whose responses are all right (or all wrong) survive; DAPO filters on correctness "
            "(dynamic_sampling.filter_on=correctness)"
        )
    return None


def sequence_ratio_with_token_sum(cfg: RLConfig) -> str | None:
    """A length-normalised sequence ratio summed over tokens reweights sequences by their length again."""
    pl = cfg.policy_loss
    if pl.ratio_level in ("sequence", "group_expectation") and pl.aggregation in (
        "seq_mean_token_sum",
        "seq_mean_token_sum_norm",
    ):
        return (
            f"ratio_level={pl.ratio_level} with aggregation={pl.aggregation}: the per-sequence objective is "
            "summed over tokens, so long responses weigh more; GSPO averages per sequence (seq_mean_token_mean)"
        )
    return None


def warn_about(cfg: RLConfig, longest_possible_response: int | None = None) -> list[str]:
    """Run every guardrail, log each message as a warning, and return them."""
    found = [
        inert_clip_higher(cfg),
        unreachable_overlong_budget(cfg, longest_possible_response),
        reward_dynamic_sampling(cfg),
        sequence_ratio_with_token_sum(cfg),
        unpinned_kernels(),
    ]
    messages = [message for message in found if message]
    for message in messages:
        LOGGER.warning(message)
    return messages
