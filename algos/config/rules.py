"""The rules a config keeps across its fields, and warnings for configs that are valid but almost certainly
not what the user meant.

:func:`invariant_violations` lists every broken cross-field invariant, each phrased as how to fix it;
:class:`~algos.config.schema.RLConfig` refuses to be built while one is broken. Each warning check
returns a message; :func:`warn_about` logs every message on this module's logger and returns them,
so callers (trainer, tests) can see exactly what fired.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from algos.config.registry import ADVANTAGE_ESTIMATORS, KL_ESTIMATORS, OBJECTIVES, STD_SCALINGS
from algos.kernels import unpinned_kernels

if TYPE_CHECKING:  # for annotations only: the schema imports this module to check every config it builds
    from algos.config.schema import RLConfig

LOGGER = logging.getLogger(__name__)


def group_estimators() -> tuple[str, ...]:
    """Estimators that compare the responses of one prompt with each other (need G >= 2)."""
    return ADVANTAGE_ESTIMATORS.having(lambda facts: facts.kind == "group")


def per_sequence_estimators() -> tuple[str, ...]:
    """Estimators that give each response one scalar advantage from its outcome reward."""
    return ADVANTAGE_ESTIMATORS.having(lambda facts: facts.per_sequence)


def invariant_violations(cfg: RLConfig) -> list[str]:
    """Every broken cross-field invariant of ``cfg``, each phrased as how to fix it."""
    adv, loss, rollout = cfg.advantage, cfg.policy_loss, cfg.rollout
    problems: list[str] = []
    estimator, scaling = ADVANTAGE_ESTIMATORS[adv.estimator].facts, STD_SCALINGS[adv.std_scaling].facts
    groups, per_sequence = group_estimators(), per_sequence_estimators()
    critic_estimators = ADVANTAGE_ESTIMATORS.having(lambda facts: facts.needs_critic)
    if estimator.needs_critic and not cfg.critic.enabled:
        problems.append(f"advantage.estimator={adv.estimator} needs a value model: set critic.enabled=true")
    if cfg.critic.enabled and not estimator.needs_critic:
        problems.append(
            f"critic.enabled=true is only used by advantage.estimator {', '.join(critic_estimators)} (got "
            f"{adv.estimator}): set critic.enabled=false or advantage.estimator to one of them"
        )
    if cfg.critic.pretrain_steps and not cfg.critic.enabled:
        problems.append("critic.pretrain_steps > 0 needs critic.enabled=true")
    if cfg.critic.init == "reward_model" and not (cfg.critic.enabled and cfg.critic.reward_model_steps):
        problems.append("critic.init=reward_model needs critic.enabled=true and critic.reward_model_steps > 0")
    if scaling.needs == "group" and estimator.kind != "group":
        usable = STD_SCALINGS.having(
            lambda facts: facts.needs != "group" and (facts.needs is None or estimator.per_sequence)
        )
        problems.append(
            f"advantage.std_scaling={adv.std_scaling} scales each group's rewards, for group estimators "
            f"{groups}; with estimator={adv.estimator} use one of {usable}"
        )
    if scaling.needs == "per_sequence" and not estimator.per_sequence:
        usable = STD_SCALINGS.having(lambda facts: facts.needs is None)
        problems.append(
            f"advantage.std_scaling={adv.std_scaling} scales one advantage per response, for estimators "
            f"{per_sequence}; with estimator={adv.estimator} use one of {usable}"
        )
    if adv.gpg_alpha != "none" and estimator.kind != "group":
        problems.append(f"advantage.gpg_alpha rescales group advantages: set advantage.estimator to one of {groups}")
    if cfg.reward.combine == "normalize_then_sum" and estimator.kind != "group":
        problems.append(
            f"reward.combine=normalize_then_sum standardises rewards within groups: set advantage.estimator to one "
            f"of {groups}"
        )
    problems.extend(_policy_loss_violations(cfg))
    problems.extend(_kl_violations(cfg))
    needs_groups = [
        name
        for name, on in (
            (f"advantage.estimator={adv.estimator}", estimator.kind == "group"),
            (f"advantage.std_scaling={adv.std_scaling}", scaling.needs == "group"),
            ("policy_loss.ratio_level=group_expectation", loss.ratio_level == "group_expectation"),
            ("dynamic_sampling.enabled=true", cfg.dynamic_sampling.enabled),
            ("reward.combine=normalize_then_sum", cfg.reward.combine == "normalize_then_sum"),
        )
        if on
    ]
    if needs_groups and rollout.group_size < 2:
        problems.append(f"{', '.join(needs_groups)} compares responses within a group: set rollout.group_size >= 2")
    if adv.estimator != "gae" and (adv.adaptive_lambda_alpha is not None or adv.lambda_critic is not None):
        problems.append(
            "advantage.adaptive_lambda_alpha and advantage.lambda_critic are GAE options: set advantage.estimator=gae"
        )
    problems.extend(_member_parameter_violations(cfg))
    if loss.group_expectation_scope != "prompt" and loss.ratio_level != "group_expectation":
        problems.append(
            "policy_loss.group_expectation_scope is GEPO's option: set policy_loss.ratio_level=group_expectation"
        )
    if cfg.task.min_steps > cfg.task.max_steps:
        problems.append("task.min_steps must not exceed task.max_steps")
    if adv.adaptive_lambda_min > adv.adaptive_lambda_max:
        problems.append("advantage.adaptive_lambda_min must not exceed advantage.adaptive_lambda_max")
    if cfg.rollout_batch_size % cfg.optim.mini_batches:
        problems.append(
            f"optim.mini_batches={cfg.optim.mini_batches} must divide the rollout batch P*G={cfg.rollout_batch_size}"
        )
    elif cfg.optim.micro_batch_size and cfg.mini_batch_size % cfg.optim.micro_batch_size:
        problems.append(
            f"optim.micro_batch_size={cfg.optim.micro_batch_size} must divide the mini-batch size "
            f"{cfg.mini_batch_size} (= P*G / optim.mini_batches)"
        )
    if cfg.optim.micro_batch_size and cfg.optim.micro_batch_tokens:
        problems.append(
            "optim.micro_batch_size and optim.micro_batch_tokens both size the forward/backward passes: set one of them"
        )
    if cfg.dynamic_sampling.enabled and cfg.dynamic_sampling.filter_on == "reward" and cfg.reward_is_shaped:
        problems.append(
            "dynamic sampling must not filter on a shaped reward (soft overlong punishment or KL in the reward "
            "makes equally correct groups look informative): set dynamic_sampling.filter_on=correctness"
        )
    if cfg.reward.correct <= cfg.reward.incorrect:
        problems.append("reward.correct must be greater than reward.incorrect")
    if cfg.reward.soft_overlong_buffer is not None and cfg.reward.soft_overlong_buffer >= cfg.soft_overlong_max_length:
        problems.append(
            f"reward.soft_overlong_buffer={cfg.reward.soft_overlong_buffer} must be smaller than "
            f"L_max={cfg.soft_overlong_max_length} (reward.soft_overlong_max_length or rollout.max_new_tokens)"
        )
    return problems


def _member_parameter_violations(cfg: RLConfig) -> list[str]:
    """The objective's own parameters (``policy_loss.objective_params``) against its declaration."""
    try:
        OBJECTIVES[cfg.policy_loss.objective].parameters(
            cfg.policy_loss.objective_params, "policy_loss.objective_params"
        )
    except ValueError as exc:
        return [str(exc)]
    return []


def whole_mini_batch_mechanisms(cfg: RLConfig) -> list[str]:
    """The settings on that select tokens over a whole mini-batch at once, so it must be one forward pass."""
    loss = cfg.policy_loss
    return [
        name
        for name, on in (
            (f"policy_loss.objective={loss.objective}", OBJECTIVES[loss.objective].facts.one_pass),
            ("policy_loss.top_entropy_quantile < 1", loss.top_entropy_quantile < 1.0),
        )
        if on
    ]


def _policy_loss_violations(cfg: RLConfig) -> list[str]:
    loss, rollout, optim = cfg.policy_loss, cfg.rollout, cfg.optim
    objective = OBJECTIVES[loss.objective].facts
    problems = []
    if objective.token_ratio_only and loss.ratio_level != "token":
        problems.append(
            f"policy_loss.objective={loss.objective} builds its sequence weight from token ratios: set "
            f"policy_loss.ratio_level=token (got {loss.ratio_level})"
        )
    if loss.dual_clip_c is not None and not objective.dual_clip:
        problems.append(
            f"policy_loss.dual_clip_c bounds the clipped surrogate; policy_loss.objective={loss.objective} has none: "
            "unset policy_loss.dual_clip_c"
        )
    sequence_levels = ("sequence", "sequence_sum", "group_expectation")
    if loss.top_entropy_quantile < 1.0 and loss.ratio_level in sequence_levels:
        problems.append(
            f"policy_loss.top_entropy_quantile masks single tokens, which needs a ratio per token; "
            f"policy_loss.ratio_level={loss.ratio_level} gives every token the whole response's gradient: use "
            "ratio_level token or sequence_token"
        )
    one_pass = whole_mini_batch_mechanisms(cfg)
    if one_pass and (optim.length_buckets != 1 or optim.micro_batch_size or optim.micro_batch_tokens):
        problems.append(
            f"{', '.join(one_pass)} selects tokens over the whole mini-batch, which must be one forward pass: set "
            "optim.length_buckets=1 and leave optim.micro_batch_size and optim.micro_batch_tokens unset"
        )
    if rollout.correction != "none":
        if rollout.policy_staleness == 0:
            problems.append(
                f"rollout.correction={rollout.correction} corrects for a sampler other than the learner: set "
                "rollout.policy_staleness > 0 (with 0 the weight is always 1)"
            )
        if loss.ratio_level == "group_expectation":
            problems.append(
                "rollout.correction and policy_loss.ratio_level=group_expectation both correct for the sampler "
                "(GEPO's ratio is taken to it): use one of them"
            )
        if rollout.correction_low is not None and rollout.correction_low >= rollout.correction_high:
            problems.append("rollout.correction_low must be smaller than rollout.correction_high")
    if objective.folds_correction and rollout.correction != "none" and rollout.correction_level != "token":
        problems.append(
            f"policy_loss.objective={loss.objective} folds the correction weights into its sequence weight token by "
            "token: set rollout.correction_level=token"
        )
    return problems


def _kl_violations(cfg: RLConfig) -> list[str]:
    kl = cfg.kl
    exact = KL_ESTIMATORS[kl.estimator].facts.exact
    problems = []
    if kl.controller == "adaptive" and kl.coef == 0:
        problems.append(
            "kl.controller=adaptive scales beta from kl.coef, which is 0: set kl.coef > 0 or kl.controller=fixed"
        )
    if kl.placement == "reward" and exact:
        sampled = KL_ESTIMATORS.having(lambda facts: not facts.exact and not facts.straight_through)
        problems.append(
            f"kl.estimator={kl.estimator} needs the full distributions of the update's forward pass: use "
            f"kl.placement=loss, or a sampled estimator ({', '.join(sampled)}) in the reward"
        )
    if kl.placement == "reward" and kl.importance_weighted:
        problems.append(
            "kl.importance_weighted weights the KL term of the loss by the policy ratio: set kl.placement=loss"
        )
    if exact and kl.importance_weighted:
        problems.append(
            f"kl.estimator={kl.estimator} is exact at every position and needs no importance weight: unset "
            "kl.importance_weighted"
        )
    return problems


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
    """Run every warning check, log each message as a warning, and return them."""
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
