"""One rollout batch: sample P prompts x G responses, grade, shape, filter, score, estimate advantages.

Under dynamic sampling, rounds repeat until P informative groups are found (DAPO Algorithm 1), each
round over-sampling by the share of groups kept so far; the round cap is a safety valve, and a step
that hits it short trains on the groups found and says so (``rollout/short_batch``). Log-probabilities are those
of the sampling policy π_old, scored after sampling unless the update's own forward pass gives
them exactly (:func:`update_gives_old_logprobs`) or they are the sampler's own
(``rollout.old_logprobs=sampler``); the reference policy is scored only when KL is
on, the critic only when there is one. Rows are laid out group by group (G consecutive rows answer
one prompt). In a multi-process run each process samples and scores its share of whole groups, and
the shares are gathered so every process holds the same global batch (see :mod:`algos.engine.distributed`).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

import torch
import torch.nn.functional as F
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from algos.config.registry import ADVANTAGE_ESTIMATORS
from algos.config.schema import RLConfig
from algos.core.advantages import compute_advantages, discounted_returns
from algos.core.masked import masked_mean
from algos.core.ratios import group_expected_probability
from algos.core.repetition import tandem_repeats
from algos.core.rewards import keep_groups, outcome_scores, rewarded_verdicts, token_rewards
from algos.core.value import explained_variance
from algos.engine.distributed import Processes, score_share
from algos.engine.keyed_draws import draw_source
from algos.engine.models import ChatFormat
from algos.engine.sampling import Responses, grade, sample
from algos.engine.seeding import derive_seed
from algos.engine.sequences import SequenceBatch, response_logprobs, response_values
from eval.tasks.sources import TaskData

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RolloutBatch:
    """Everything the update needs. Per-sequence tensors (B,), per-token tensors (B, T)."""

    sequences: SequenceBatch
    correct: torch.Tensor
    truncated: torch.Tensor
    scores: torch.Tensor
    old_logprobs: torch.Tensor | None
    """(B, T) log π_old; None when the update's forward pass provides it (:func:`update_gives_old_logprobs`)."""
    advantages: torch.Tensor
    sampler_logprobs: torch.Tensor | None = None
    """(B, T) log-probabilities of the sampling policy under ``rollout.correction`` (π_old is then the current
    policy's)."""
    returns: torch.Tensor | None = None
    old_values: torch.Tensor | None = None
    ref_logprobs: torch.Tensor | None = None
    group_expectation: torch.Tensor | None = None
    metrics: dict[str, float] = field(default_factory=dict)

    @property
    def size(self) -> int:
        """Number of sequences B."""
        return self.correct.numel()


@dataclass(frozen=True)
class _Sampled:
    sequences: SequenceBatch
    correct: torch.Tensor
    truncated: torch.Tensor
    scores: torch.Tensor
    baselines: torch.Tensor | None = None  # (B,) ReMax: reward of the greedy response to the row's prompt
    logprobs: torch.Tensor | None = None  # (B, T) the sampler's own log π_old (rollout.old_logprobs=sampler)

    def rows(self, index: torch.Tensor) -> _Sampled:
        baselines = self.baselines[index] if self.baselines is not None else None
        logprobs = self.logprobs[index] if self.logprobs is not None else None
        return _Sampled(
            self.sequences.rows(index),
            self.correct[index],
            self.truncated[index],
            self.scores[index],
            baselines,
            logprobs,
        )

    def to(self, device: torch.device | str) -> _Sampled:
        baselines = self.baselines.to(device) if self.baselines is not None else None
        logprobs = self.logprobs.to(device) if self.logprobs is not None else None
        return _Sampled(
            self.sequences.to(device),
            self.correct.to(device),
            self.truncated.to(device),
            self.scores.to(device),
            baselines,
            logprobs,
        )


def has_dropout(model: PreTrainedModel) -> bool:
    """Whether a training-mode forward pass of ``model`` is random (a dropout module or probability above 0)."""
    if any(isinstance(module, torch.nn.Dropout) and module.p > 0 for module in model.modules()):
        return True
    settings = model.config.to_dict()
    return any(isinstance(value, float) and value > 0 for key, value in settings.items() if key.endswith("dropout"))


def update_gives_old_logprobs(cfg: RLConfig, sampling_policy: PreTrainedModel) -> bool:
    """Whether log π_old equals the update's own log-probabilities, detached, so no scoring pass is needed.

    True when ``rollout.old_logprobs`` is auto and the batch gets exactly one optimizer step, taken by
    the policy that sampled it (1 epoch, 1 mini-batch, staleness 0): every micro-batch's forward pass
    then runs the sampling weights. Nothing may read π_old before the update (KL in the reward, the
    group-expectation ratio, a critic's pretraining), and the forward pass must be deterministic (no
    dropout), since the update runs in training mode.
    """
    return (
        cfg.rollout.old_logprobs == "auto"
        and cfg.optim.epochs == 1
        and cfg.optim.mini_batches == 1
        and cfg.rollout.policy_staleness == 0
        and not cfg.kl_in_reward
        and cfg.policy_loss.ratio_level != "group_expectation"
        and not cfg.critic.enabled
        and cfg.kl.controller == "fixed"
        and not has_dropout(sampling_policy)
    )


def _pad_cat(tensors: list[torch.Tensor], value: int, left: bool) -> torch.Tensor:
    """Concatenate (N_i, T_i) tensors along rows, padding each to the widest T on the left or right."""
    width = max(t.shape[1] for t in tensors)
    return torch.cat(
        [F.pad(t, (width - t.shape[1], 0) if left else (0, width - t.shape[1]), value=value) for t in tensors]
    )


def _concat(parts: list[_Sampled], pad_id: int) -> _Sampled:
    baselines = [p.baselines for p in parts if p.baselines is not None]
    logprobs = [p.logprobs for p in parts if p.logprobs is not None]
    return _Sampled(
        sequences=SequenceBatch(
            prompt_ids=_pad_cat([p.sequences.prompt_ids for p in parts], pad_id, left=True),
            prompt_mask=_pad_cat([p.sequences.prompt_mask for p in parts], 0, left=True),
            response_ids=_pad_cat([p.sequences.response_ids for p in parts], pad_id, left=False),
            response_mask=_pad_cat([p.sequences.response_mask for p in parts], 0, left=False),
        ),
        correct=torch.cat([p.correct for p in parts]),
        truncated=torch.cat([p.truncated for p in parts]),
        scores=torch.cat([p.scores for p in parts]),
        baselines=torch.cat(baselines) if baselines else None,
        logprobs=_pad_cat(logprobs, 0, left=False) if logprobs else None,
    )


def _graded(
    cfg: RLConfig, task: TaskData, part: Responses, seed: int | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """The verifier's verdicts and the outcome rewards of ``part``'s responses: (correct (N,) bool, scores (N,)).

    An unscorable response (the verifier returned None) is incorrect, and its reward is NaN unless another
    reward function scores it. With a ``seed`` (sampled responses), the reward sees the verdicts of
    :func:`~algos.core.rewards.rewarded_verdicts`; the returned verdicts stay the verifier's.
    """
    verdicts = grade(task.verifier, part.texts, part.answers, part.lengths.device)
    rewarded = verdicts.correct
    if seed is not None:
        rewarded = rewarded_verdicts(
            cfg, verdicts.correct, torch.Generator().manual_seed(derive_seed(seed, "coin-flips"))
        )
    return verdicts.correct, outcome_scores(cfg, rewarded, part.lengths, part.truncated, verdicts.scorable)


def _sample_round(
    cfg: RLConfig,
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    task: TaskData,
    chat: ChatFormat | None,
    seed: int,
    prompts: int,
    processes: Processes,
) -> _Sampled:
    """One round of ``prompts`` prompts x G responses; each process samples its share of the groups, all get all.

    Under ReMax the round first decodes one greedy response per prompt, whose reward is the baseline of
    the prompt's G rows.
    """
    group = cfg.rollout.group_size
    problems = task.sample_train(prompts, seed)
    common = {"max_new_tokens": cfg.rollout.max_new_tokens, "chat": chat, "processes": processes}
    baselines = None
    if ADVANTAGE_ESTIMATORS[cfg.advantage.estimator].facts.needs_baselines:
        greedy = sample(model, tokenizer, problems, greedy=True, **common)
        baselines = _graded(cfg, task, greedy)[1].repeat_interleave(group)  # (P_p G,)
    generator = draw_source(cfg.rollout.draws, seed, next(model.parameters()).device)
    part = sample(
        model,
        tokenizer,
        problems,
        group_size=group,
        temperature=cfg.rollout.temperature,
        top_p=cfg.rollout.top_p,
        generator=generator,
        with_logprobs=cfg.rollout.old_logprobs == "sampler",
        engine=cfg.rollout.engine,
        **common,
    )
    correct, scores = _graded(cfg, task, part, seed)
    share = _Sampled(part.sequences, correct, part.truncated, scores, baselines, part.logprobs)
    return share if processes.count == 1 else _concat(processes.gather([share]), tokenizer.pad_token_id)


MAX_ROUND_PROMPTS = 8
"""A dynamic-sampling round draws at most this many times P prompts."""


def round_prompts(cfg: RLConfig, kept_groups: int, sampled_groups: int) -> int:
    """Prompts dynamic sampling's next round draws, given the informative groups kept and groups sampled so far:
    ``oversample`` times the groups still missing, divided by the share of groups kept so far (1 before
    the first round), at most ``MAX_ROUND_PROMPTS`` * P.
    """
    wanted = cfg.rollout.prompts_per_step
    keep_rate = kept_groups / sampled_groups if sampled_groups else 1.0
    most = MAX_ROUND_PROMPTS * wanted
    if keep_rate == 0:
        return most
    return min(most, math.ceil(cfg.dynamic_sampling.oversample * (wanted - kept_groups) / keep_rate))


def step_groups(
    cfg: RLConfig, sample_round: Callable[[int, int], _Sampled]
) -> tuple[list[_Sampled], list[_Sampled], int]:
    """The step's groups: the one place ``dynamic_sampling`` is read.

    ``sample_round(index, prompts)`` samples round ``index`` (from 1) of ``prompts`` prompts x G
    responses. Without dynamic sampling: one round of P prompts, every group kept. With it (DAPO
    Algorithm 1): rounds of :func:`round_prompts` prompts, keeping the informative groups
    (:func:`~algos.core.rewards.keep_groups`), until P are kept or ``max_rounds`` is reached.
    Returns every round's responses, each round's kept rows, and the number of groups kept.
    """
    group, wanted = cfg.rollout.group_size, cfg.rollout.prompts_per_step
    if not cfg.dynamic_sampling.enabled:
        sampled = sample_round(1, wanted)
        return [sampled], [sampled], wanted
    generated, kept, kept_groups = [], [], 0
    while len(generated) < cfg.dynamic_sampling.max_rounds and kept_groups < wanted:
        prompts = round_prompts(cfg, kept_groups, sum(g.correct.numel() for g in generated) // group)
        sampled = sample_round(len(generated) + 1, prompts)
        generated.append(sampled)
        keep = keep_groups(cfg, sampled.correct, sampled.scores).repeat_interleave(group)  # (prompts*G,)
        kept.append(sampled.rows(keep.nonzero().squeeze(-1)))
        kept_groups += int(keep.sum()) // group
    return generated, kept, kept_groups


def rollout_metrics(sampled: _Sampled, group_size: int) -> dict[str, float]:
    """Diagnostics of every response generated in a step (all rounds): rewards, lengths, groups, loops.

    Groups are ``group_size`` consecutive rows; with one response per prompt the group metrics are left
    out, as is a mean over an empty selection (no correct response, say), rather than logged as NaN.
    """
    lengths = sampled.sequences.response_mask.sum(dim=-1).float()  # (N,)
    correct, truncated = sampled.correct, sampled.truncated
    metrics = {
        "rollout/reward_mean": sampled.scores.mean().item(),
        "rollout/reward_std": sampled.scores.std().item() if sampled.scores.numel() > 1 else 0.0,
        "rollout/accuracy": correct.float().mean().item(),
        "rollout/response_length_mean": lengths.mean().item(),
        "rollout/response_length_max": lengths.max().item(),
        "rollout/truncated_frac": truncated.float().mean().item(),
        "rollout/repetition_frac": tandem_repeats(sampled.sequences.response_ids, sampled.sequences.response_mask)
        .float()
        .mean()
        .item(),
        "rollout/samples_generated": float(correct.numel()),
    }
    if group_size > 1:  # a group of one response is trivially all right or all wrong
        right_per_group = correct.view(-1, group_size).sum(dim=1)  # (N / G,)
        metrics["rollout/group_length_std"] = lengths.view(-1, group_size).std(dim=1).mean().item()
        metrics["rollout/all_correct_groups_frac"] = (right_per_group == group_size).float().mean().item()
        metrics["rollout/all_wrong_groups_frac"] = (right_per_group == 0).float().mean().item()
    for key, values, where in (
        ("rollout/correct_length_mean", lengths, correct),
        ("rollout/incorrect_length_mean", lengths, ~correct),
        ("rollout/accuracy_untruncated", correct.float(), ~truncated),
    ):
        if bool(where.any()):
            metrics[key] = values[where].mean().item()
    return metrics


@torch.no_grad()
def collect_rollout(
    cfg: RLConfig,
    step_seed: int,
    sampling_policy: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    task: TaskData,
    chat: ChatFormat | None,
    *,
    reference: PreTrainedModel | None = None,
    critic: PreTrainedModel | None = None,
    current_policy: PreTrainedModel | None = None,
    processes: Processes | None = None,
) -> RolloutBatch:
    """Sample, grade and score one rollout batch with ``sampling_policy`` as π_old.

    Under ``rollout.correction``, π_old is instead ``current_policy`` (the policy about to be updated) and
    the sampling policy's log-probabilities go to the correction weights. Metrics describe every response
    generated this step (all rounds); the batch holds the kept groups only: the first P informative
    groups under dynamic sampling, all P groups otherwise. ``processes``: the processes of a
    multi-process run; each returns the same global batch.
    """
    processes = processes or Processes()
    group, wanted = cfg.rollout.group_size, cfg.rollout.prompts_per_step
    sampling_policy.eval()
    started = time.perf_counter()

    def sample_round(index: int, prompts: int) -> _Sampled:
        seed = derive_seed(step_seed, "round", index)
        return _sample_round(
            cfg,
            model=sampling_policy,
            tokenizer=tokenizer,
            task=task,
            chat=chat,
            seed=seed,
            prompts=prompts,
            processes=processes,
        )

    generated, kept, kept_groups = step_groups(cfg, sample_round)
    rounds = len(generated)
    gen_seconds = time.perf_counter() - started
    everything = _concat(generated, tokenizer.pad_token_id)
    total_groups = everything.correct.numel() // group
    metrics = rollout_metrics(everything, group)
    metrics.update(
        {
            "rollout/zero_variance_groups_filtered_frac": 1 - kept_groups / total_groups,
            "rollout/generation_rounds": float(rounds),
            "rollout/trained_groups": float(min(kept_groups, wanted)),
            "rollout/short_batch": float(kept_groups < wanted),
            "perf/gen_tokens_per_s": everything.sequences.response_mask.sum().item() / max(gen_seconds, 1e-9),
            "perf/gen_seconds": gen_seconds,
        }
    )
    if kept_groups < wanted:
        log.warning(
            "dynamic sampling found %d of %d informative groups in %d rounds (dynamic_sampling.max_rounds): "
            "this step trains on a short batch",
            kept_groups,
            wanted,
            rounds,
        )

    batch = _concat(kept, tokenizer.pad_token_id)
    rows = torch.arange(min(kept_groups, wanted) * group, device=batch.correct.device)
    return _score_rollout(
        cfg,
        batch.rows(rows),
        sampling_policy=sampling_policy,
        reference=reference,
        critic=critic,
        metrics=metrics,
        step_seed=step_seed,
        current_policy=current_policy,
        processes=processes,
    )


def _score_rollout(
    cfg: RLConfig,
    batch: _Sampled,
    *,
    sampling_policy: PreTrainedModel,
    reference: PreTrainedModel | None,
    critic: PreTrainedModel | None,
    metrics: dict[str, float],
    step_seed: int,
    current_policy: PreTrainedModel | None,
    processes: Processes,
) -> RolloutBatch:
    """π_old and π_ref log-probabilities, values, per-token rewards and advantages of the kept rows.

    The model passes are split over ``processes`` by whole groups; everything after them runs on the
    whole batch in every process.
    """
    group = cfg.rollout.group_size

    def logprobs_of(model: PreTrainedModel) -> torch.Tensor:
        """log π (B, T) of the batch's responses under ``model``."""
        return score_share(
            processes, lambda part: response_logprobs(model, part, cfg.rollout.temperature)[0], batch.sequences, group
        )

    mask = batch.sequences.response_mask.float()
    if batch.correct.numel() == 0:  # dynamic sampling found no informative group: nothing to learn from
        empty = torch.zeros_like(mask)
        return RolloutBatch(
            batch.sequences, batch.correct, batch.truncated, batch.scores, empty, empty, metrics=metrics
        )
    if batch.logprobs is not None:  # rollout.old_logprobs=sampler
        old_logprobs = batch.logprobs
    elif update_gives_old_logprobs(cfg, sampling_policy):
        old_logprobs = None
    else:
        old_logprobs = logprobs_of(sampling_policy)
    sampler_logprobs = None
    if cfg.rollout.correction != "none":
        if current_policy is None:
            raise ValueError("rollout.correction needs the current policy to score pi_old")
        was_training = current_policy.training
        sampler_logprobs = old_logprobs * mask
        old_logprobs = logprobs_of(current_policy.eval())
        current_policy.train(was_training)
    ref_logprobs = logprobs_of(reference) if reference is not None else None
    values = (
        score_share(processes, partial(response_values, critic), batch.sequences, group) * mask
        if critic is not None
        else None
    )
    rewards = token_rewards(cfg, batch.scores, mask, old_logprobs, ref_logprobs)
    estimate = compute_advantages(cfg.advantage, rewards, mask, cfg.rollout.group_size, values, batch.baselines)
    if values is not None:
        monte_carlo = discounted_returns(rewards, mask, cfg.advantage.gamma)
        metrics = {**metrics, **critic_metrics(values, estimate.returns, monte_carlo, mask)}
    return RolloutBatch(
        sequences=batch.sequences,
        correct=batch.correct,
        truncated=batch.truncated,
        scores=batch.scores,
        old_logprobs=old_logprobs * mask if old_logprobs is not None else None,
        advantages=estimate.advantages,
        sampler_logprobs=sampler_logprobs,
        returns=estimate.returns,
        old_values=values,
        ref_logprobs=ref_logprobs * mask if ref_logprobs is not None else None,
        group_expectation=_group_expectation(cfg, old_logprobs, mask, step_seed),
        metrics=metrics,
    )


def _group_expectation(
    cfg: RLConfig, old_logprobs: torch.Tensor | None, mask: torch.Tensor, step_seed: int
) -> torch.Tensor | None:
    """GEPO's Ê_q[q] per row (B,) over the configured scope; None for the other ratio levels."""
    if cfg.policy_loss.ratio_level != "group_expectation":
        return None
    order = None
    if cfg.policy_loss.group_expectation_scope == "micro_batch":
        generator = torch.Generator().manual_seed(derive_seed(step_seed, "group-expectation-chunks"))
        order = torch.randperm(mask.shape[0], generator=generator).to(mask.device)
    return group_expected_probability(old_logprobs, mask, cfg.rollout.group_size, order)


def critic_metrics(
    values: torch.Tensor, targets: torch.Tensor, monte_carlo: torch.Tensor, mask: torch.Tensor
) -> dict[str, float]:
    """The critic before it learns from a batch: explained variance of its targets, error against the returns.

    values, targets (its λ_critic returns), monte_carlo (λ = 1 returns), mask: (B, T). Explained
    variance is computed once over the whole batch, and left out when the targets do not vary.
    """
    error = values - monte_carlo
    metrics = {
        "critic/value_error": masked_mean(error**2, mask).sqrt().item(),
        "critic/value_bias": masked_mean(error, mask).item(),
    }
    explained = explained_variance(values, targets, mask)
    if explained is not None:
        metrics["critic/explained_variance"] = explained
    return metrics
