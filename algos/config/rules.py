"""The rules a config keeps across its fields, and warnings for configs that are valid but almost certainly
not what the user meant.

Invariants: each check (``*_violations``) covers one concern (the critic, std scaling, groups, the
objective, the rollout correction, KL, batching, the reward, ...) and yields a message for every
invariant of it that a config breaks, phrased as how to fix the config; :func:`invariant_violations`
runs them all, and :class:`~algos.config.schema.RLConfig` refuses to be built while one is broken.

Warnings: each check returns a message or None; :func:`warn_about` logs every message on this
module's logger and returns them, so callers (trainer, tests) can see exactly what fired.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

from algos.config.registry import ADVANTAGE_ESTIMATORS, KL_ESTIMATORS, OBJECTIVES, STD_SCALINGS
from algos.kernels import unpinned_kernels

LOGGER = logging.getLogger(__name__)

Config = Any
"""A whole run config, :class:`algos.config.schema.RLConfig`. The schema imports this module to check every config
it builds, so the rules read a config's fields without importing its declaration (one import, one direction)."""


def group_estimators() -> tuple[str, ...]:
    """Estimators that compare the responses of one prompt with each other (need G >= 2)."""
    return ADVANTAGE_ESTIMATORS.having(lambda facts: facts.kind == "group")


def per_sequence_estimators() -> tuple[str, ...]:
    """Estimators that give each response one scalar advantage from its outcome reward."""
    return ADVANTAGE_ESTIMATORS.having(lambda facts: facts.per_sequence)


def whole_mini_batch_mechanisms(cfg: Config) -> list[str]:
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


def critic_violations(cfg: Config) -> Iterator[str]:
    """The value model is on exactly when the estimator reads it; its pretraining and initialisation need it on."""
    estimator, critic = cfg.advantage.estimator, cfg.critic
    needs_critic = ADVANTAGE_ESTIMATORS[estimator].facts.needs_critic
    if needs_critic and not critic.enabled:
        yield f"advantage.estimator={estimator} needs a value model: set critic.enabled=true"
    if critic.enabled and not needs_critic:
        readers = ADVANTAGE_ESTIMATORS.having(lambda facts: facts.needs_critic)
        yield (
            f"critic.enabled=true is only used by advantage.estimator {', '.join(readers)} (got "
            f"{estimator}): set critic.enabled=false or advantage.estimator to one of them"
        )
    if critic.pretrain_steps and not critic.enabled:
        yield "critic.pretrain_steps > 0 needs critic.enabled=true"
    if critic.init == "reward_model" and not (critic.enabled and critic.reward_model_steps):
        yield "critic.init=reward_model needs critic.enabled=true and critic.reward_model_steps > 0"


def std_scaling_violations(cfg: Config) -> Iterator[str]:
    """A scaling by group statistics needs a group estimator, a scaling per response one advantage per response."""
    adv = cfg.advantage
    estimator, scaling = ADVANTAGE_ESTIMATORS[adv.estimator].facts, STD_SCALINGS[adv.std_scaling].facts
    if scaling.needs == "group" and estimator.kind != "group":
        usable = STD_SCALINGS.having(
            lambda facts: facts.needs != "group" and (facts.needs is None or estimator.per_sequence)
        )
        yield (
            f"advantage.std_scaling={adv.std_scaling} scales each group's rewards, for group estimators "
            f"{group_estimators()}; with estimator={adv.estimator} use one of {usable}"
        )
    if scaling.needs == "per_sequence" and not estimator.per_sequence:
        usable = STD_SCALINGS.having(lambda facts: facts.needs is None)
        yield (
            f"advantage.std_scaling={adv.std_scaling} scales one advantage per response, for estimators "
            f"{per_sequence_estimators()}; with estimator={adv.estimator} use one of {usable}"
        )


def group_option_violations(cfg: Config) -> Iterator[str]:
    """GPG's rescaling and the per-group reward normalisation act on groups, so they need a group estimator."""
    if ADVANTAGE_ESTIMATORS[cfg.advantage.estimator].facts.kind == "group":
        return
    if cfg.advantage.gpg_alpha != "none":
        yield f"advantage.gpg_alpha rescales group advantages: set advantage.estimator to one of {group_estimators()}"
    if cfg.reward.combine == "normalize_then_sum":
        yield (
            f"reward.combine=normalize_then_sum standardises rewards within groups: set advantage.estimator to one "
            f"of {group_estimators()}"
        )


def objective_violations(cfg: Config) -> Iterator[str]:
    """The objective's facts against the ratio level and the dual clip."""
    loss = cfg.policy_loss
    objective = OBJECTIVES[loss.objective].facts
    if objective.token_ratio_only and loss.ratio_level != "token":
        yield (
            f"policy_loss.objective={loss.objective} builds its sequence weight from token ratios: set "
            f"policy_loss.ratio_level=token (got {loss.ratio_level})"
        )
    if loss.dual_clip_c is not None and not objective.dual_clip:
        yield (
            f"policy_loss.dual_clip_c bounds the clipped surrogate; policy_loss.objective={loss.objective} has none: "
            "unset policy_loss.dual_clip_c"
        )


def token_mask_violations(cfg: Config) -> Iterator[str]:
    """The high-entropy token mask needs a ratio per token."""
    loss = cfg.policy_loss
    if loss.top_entropy_quantile < 1.0 and loss.ratio_level in ("sequence", "sequence_sum", "group_expectation"):
        yield (
            f"policy_loss.top_entropy_quantile masks single tokens, which needs a ratio per token; "
            f"policy_loss.ratio_level={loss.ratio_level} gives every token the whole response's gradient: use "
            "ratio_level token or sequence_token"
        )


def one_pass_violations(cfg: Config) -> Iterator[str]:
    """What selects tokens over the whole mini-batch needs the mini-batch in one forward pass."""
    one_pass, optim = whole_mini_batch_mechanisms(cfg), cfg.optim
    if one_pass and (optim.length_buckets != 1 or optim.micro_batch_size or optim.micro_batch_tokens):
        yield (
            f"{', '.join(one_pass)} selects tokens over the whole mini-batch, which must be one forward pass: set "
            "optim.length_buckets=1 and leave optim.micro_batch_size and optim.micro_batch_tokens unset"
        )


def rollout_correction_violations(cfg: Config) -> Iterator[str]:
    """A rollout correction needs a stale sampler, no second correction, ordered bounds and its objective's level."""
    rollout = cfg.rollout
    if rollout.correction == "none":
        return
    if rollout.policy_staleness == 0:
        yield (
            f"rollout.correction={rollout.correction} corrects for a sampler other than the learner: set "
            "rollout.policy_staleness > 0 (with 0 the weight is always 1)"
        )
    if cfg.policy_loss.ratio_level == "group_expectation":
        yield (
            "rollout.correction and policy_loss.ratio_level=group_expectation both correct for the sampler "
            "(GEPO's ratio is taken to it): use one of them"
        )
    if rollout.correction_low is not None and rollout.correction_low >= rollout.correction_high:
        yield "rollout.correction_low must be smaller than rollout.correction_high"
    objective = cfg.policy_loss.objective
    if OBJECTIVES[objective].facts.folds_correction and rollout.correction_level != "token":
        yield (
            f"policy_loss.objective={objective} folds the correction weights into its sequence weight token by "
            "token: set rollout.correction_level=token"
        )


def kl_violations(cfg: Config) -> Iterator[str]:
    """The KL controller needs a coefficient; an exact estimator stays in the loss and needs no importance weight."""
    kl = cfg.kl
    exact = KL_ESTIMATORS[kl.estimator].facts.exact
    if kl.controller == "adaptive" and kl.coef == 0:
        yield "kl.controller=adaptive scales beta from kl.coef, which is 0: set kl.coef > 0 or kl.controller=fixed"
    if kl.placement == "reward" and exact:
        sampled = KL_ESTIMATORS.having(lambda facts: not facts.exact and not facts.straight_through)
        yield (
            f"kl.estimator={kl.estimator} needs the full distributions of the update's forward pass: use "
            f"kl.placement=loss, or a sampled estimator ({', '.join(sampled)}) in the reward"
        )
    if kl.placement == "reward" and kl.importance_weighted:
        yield "kl.importance_weighted weights the KL term of the loss by the policy ratio: set kl.placement=loss"
    if exact and kl.importance_weighted:
        yield (
            f"kl.estimator={kl.estimator} is exact at every position and needs no importance weight: unset "
            "kl.importance_weighted"
        )


def group_size_violations(cfg: Config) -> Iterator[str]:
    """Everything that compares the responses of a prompt needs at least two of them."""
    adv, loss = cfg.advantage, cfg.policy_loss
    needs_groups = [
        name
        for name, on in (
            (f"advantage.estimator={adv.estimator}", ADVANTAGE_ESTIMATORS[adv.estimator].facts.kind == "group"),
            (f"advantage.std_scaling={adv.std_scaling}", STD_SCALINGS[adv.std_scaling].facts.needs == "group"),
            ("policy_loss.ratio_level=group_expectation", loss.ratio_level == "group_expectation"),
            ("dynamic_sampling.enabled=true", cfg.dynamic_sampling.enabled),
            ("reward.combine=normalize_then_sum", cfg.reward.combine == "normalize_then_sum"),
        )
        if on
    ]
    if needs_groups and cfg.rollout.group_size < 2:
        yield f"{', '.join(needs_groups)} compares responses within a group: set rollout.group_size >= 2"


def gae_option_violations(cfg: Config) -> Iterator[str]:
    """The length-adaptive and the decoupled λ are options of GAE, the estimators that read a critic's values."""
    adv = cfg.advantage
    lambda_options = adv.adaptive_lambda_alpha is not None or adv.lambda_critic is not None
    if lambda_options and not ADVANTAGE_ESTIMATORS[adv.estimator].facts.needs_critic:
        with_critic = " or ".join(ADVANTAGE_ESTIMATORS.having(lambda facts: facts.needs_critic))
        yield (
            "advantage.adaptive_lambda_alpha and advantage.lambda_critic are GAE options: set "
            f"advantage.estimator={with_critic}"
        )


def objective_parameter_violations(cfg: Config) -> Iterator[str]:
    """The objective's own parameters (``policy_loss.objective_params``) against its declaration."""
    try:
        OBJECTIVES[cfg.policy_loss.objective].parameters(
            cfg.policy_loss.objective_params, "policy_loss.objective_params"
        )
    except ValueError as exc:
        yield str(exc)


def group_expectation_scope_violations(cfg: Config) -> Iterator[str]:
    """GEPO's scope of E_q[q] is an option of GEPO's ratio."""
    loss = cfg.policy_loss
    if loss.group_expectation_scope != "prompt" and loss.ratio_level != "group_expectation":
        yield "policy_loss.group_expectation_scope is GEPO's option: set policy_loss.ratio_level=group_expectation"


def bounds_violations(cfg: Config) -> Iterator[str]:
    """A lower bound does not exceed its upper bound: the task's operation counts, the adaptive λ's clamp, the
    evaluated steps the run's length."""
    if cfg.task.min_steps > cfg.task.max_steps:
        yield "task.min_steps must not exceed task.max_steps"
    if cfg.advantage.adaptive_lambda_min > cfg.advantage.adaptive_lambda_max:
        yield "advantage.adaptive_lambda_min must not exceed advantage.adaptive_lambda_max"
    late = [step for step in cfg.run.eval_steps or () if step > cfg.run.steps]
    if late:
        yield f"run.eval_steps {late} lie past the run's last step run.steps={cfg.run.steps}"


def batching_violations(cfg: Config) -> Iterator[str]:
    """Mini-batches divide the rollout batch, micro-batches the mini-batch, and one setting sizes the passes."""
    optim = cfg.optim
    if cfg.rollout_batch_size % optim.mini_batches:
        yield f"optim.mini_batches={optim.mini_batches} must divide the rollout batch P*G={cfg.rollout_batch_size}"
    elif optim.micro_batch_size and cfg.mini_batch_size % optim.micro_batch_size:
        yield (
            f"optim.micro_batch_size={optim.micro_batch_size} must divide the mini-batch size "
            f"{cfg.mini_batch_size} (= P*G / optim.mini_batches)"
        )
    if optim.micro_batch_size and optim.micro_batch_tokens:
        yield (
            "optim.micro_batch_size and optim.micro_batch_tokens both size the forward/backward passes: set one of them"
        )
    if optim.update_pass == "shared_prompts" and cfg.model.gradient_checkpointing:
        yield (
            "optim.update_pass=shared_prompts continues rows from a cache, which a checkpointed layer does not keep: "
            "set optim.update_pass=auto or joined_rows, or model.gradient_checkpointing=false"
        )
    if optim.update_pass == "shared_prompts" and optim.token_logprobs == "chunked":
        yield (
            "optim.token_logprobs=chunked runs the output layer over the joined rows' hidden states, which "
            "optim.update_pass=shared_prompts does not make: set optim.update_pass=auto or joined_rows, or "
            "optim.token_logprobs=auto or whole_logits"
        )


def dynamic_sampling_violations(cfg: Config) -> Iterator[str]:
    """Dynamic sampling never filters on a shaped reward, which makes equally correct groups differ."""
    sampling = cfg.dynamic_sampling
    if sampling.enabled and sampling.filter_on == "reward" and cfg.reward_is_shaped:
        yield (
            "dynamic sampling must not filter on a shaped reward (soft overlong punishment or KL in the reward "
            "makes equally correct groups look informative): set dynamic_sampling.filter_on=correctness"
        )


def reward_violations(cfg: Config) -> Iterator[str]:
    """A correct response earns more than an incorrect one, and the soft overlong buffer fits below L_max."""
    reward = cfg.reward
    if reward.correct <= reward.incorrect:
        yield "reward.correct must be greater than reward.incorrect"
    if reward.soft_overlong_buffer is not None and reward.soft_overlong_buffer >= cfg.soft_overlong_max_length:
        yield (
            f"reward.soft_overlong_buffer={reward.soft_overlong_buffer} must be smaller than "
            f"L_max={cfg.soft_overlong_max_length} (reward.soft_overlong_max_length or rollout.max_new_tokens)"
        )


INVARIANTS: tuple[Callable[[Config], Iterator[str]], ...] = (
    critic_violations,
    std_scaling_violations,
    group_option_violations,
    objective_violations,
    token_mask_violations,
    one_pass_violations,
    rollout_correction_violations,
    kl_violations,
    group_size_violations,
    gae_option_violations,
    objective_parameter_violations,
    group_expectation_scope_violations,
    bounds_violations,
    batching_violations,
    dynamic_sampling_violations,
    reward_violations,
)
"""Every invariant check, in the order their messages are joined into the error."""


def invariant_violations(cfg: Config) -> list[str]:
    """Every broken cross-field invariant of ``cfg``, each phrased as how to fix it."""
    return [message for check in INVARIANTS for message in check(cfg)]


def inert_clip_higher(cfg: Config) -> str | None:
    """Clip-higher needs the policy to move within a rollout batch; with one update the ratio is 1."""
    pl = cfg.policy_loss
    if pl.clip_eps_high != pl.clip_eps_low and cfg.updates_per_rollout == 1 and cfg.rollout.policy_staleness == 0:
        return (
            f"clip-higher is inert: clip_eps_high={pl.clip_eps_high} differs from clip_eps_low={pl.clip_eps_low}, "
            "but there is one on-policy update per rollout batch, so every ratio is 1; raise optim.mini_batches "
            "or optim.epochs (DAPO makes 16 updates per rollout batch)"
        )
    return None


def unreachable_overlong_budget(cfg: Config, longest_possible_response: int | None = None) -> str | None:
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


def reward_dynamic_sampling(cfg: Config) -> str | None:
    """Dynamic sampling on the reward instead of correctness keeps groups that differ only in reward."""
    if cfg.dynamic_sampling.enabled and cfg.dynamic_sampling.filter_on == "reward":
        return (
            "dynamic sampling filters on the reward, not on correctness: with a graded or custom reward function, "
            "groups whose responses are all right (or all wrong) survive; DAPO filters on correctness "
            "(dynamic_sampling.filter_on=correctness)"
        )
    return None


def sequence_ratio_with_token_sum(cfg: Config) -> str | None:
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


def warn_about(cfg: Config, longest_possible_response: int | None = None) -> list[str]:
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
