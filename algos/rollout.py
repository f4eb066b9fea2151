"""One rollout batch: sample P prompts x G responses, grade, shape, filter, score, estimate advantages.

Sampling rounds repeat under dynamic sampling until P informative groups are found or the round cap
is hit (then the step trains on the informative groups found so far). Log-probabilities are those
of the sampling policy π_old, scored after sampling unless the update's own forward pass gives
them exactly (:func:`update_gives_old_logprobs`); the reference policy is scored only when KL is
on, the critic only when there is one. Rows are laid out group by group (G consecutive rows answer
one prompt).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from algos.advantages import compute_advantages
from algos.config import RLConfig
from algos.generation import generate
from algos.models import encode_prompts
from algos.ratios import group_expected_probability
from algos.rewards import keep_groups, outcome_scores, token_rewards
from algos.seeding import derive_seed
from algos.sequences import SequenceBatch, response_logprobs, response_values
from eval.tasks import TaskData


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

    def rows(self, index: torch.Tensor) -> _Sampled:
        return _Sampled(self.sequences.rows(index), self.correct[index], self.truncated[index], self.scores[index])


def has_dropout(model: PreTrainedModel) -> bool:
    """Whether a training-mode forward pass of ``model`` is random (a dropout module or probability above 0)."""
    if any(isinstance(module, torch.nn.Dropout) and module.p > 0 for module in model.modules()):
        return True
    settings = model.config.to_dict()
    return any(isinstance(value, float) and value > 0 for key, value in settings.items() if key.endswith("dropout"))


def update_gives_old_logprobs(cfg: RLConfig, sampler: PreTrainedModel) -> bool:
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
        and not has_dropout(sampler)
    )


def _pad_cat(tensors: list[torch.Tensor], value: int, left: bool) -> torch.Tensor:
    """Concatenate (N_i, T_i) tensors along rows, padding each to the widest T on the left or right."""
    width = max(t.shape[1] for t in tensors)
    return torch.cat(
        [F.pad(t, (width - t.shape[1], 0) if left else (0, width - t.shape[1]), value=value) for t in tensors]
    )


def _concat(parts: list[_Sampled], pad_id: int) -> _Sampled:
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
    )


def _sample_round(
    cfg: RLConfig,
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    task: TaskData,
    chat: bool,
    seed: int,
) -> _Sampled:
    group = cfg.rollout.group_size
    problems = task.sample_train(cfg.rollout.prompts_per_step, seed)
    prompt_ids, prompt_mask = encode_prompts(tokenizer, [p.prompt for p in problems], chat)
    device = next(model.parameters()).device
    prompt_ids = prompt_ids.repeat_interleave(group, dim=0).to(device)  # (P*G, T_prompt), group by group
    prompt_mask = prompt_mask.repeat_interleave(group, dim=0).to(device)
    generator = torch.Generator(device).manual_seed(seed)
    result = generate(
        model,
        prompt_ids,
        prompt_mask,
        cfg.rollout.max_new_tokens,
        tokenizer.eos_token_id,
        tokenizer.pad_token_id,
        temperature=cfg.rollout.temperature,
        top_p=cfg.rollout.top_p,
        generator=generator,
    )
    texts = tokenizer.batch_decode(result.response_ids, skip_special_tokens=True)
    answers = [p.answer for p in problems for _ in range(group)]
    correct = torch.tensor([task.verifier(t, a) for t, a in zip(texts, answers, strict=True)], device=device)
    scores = outcome_scores(cfg, correct, result.lengths)
    return _Sampled(
        SequenceBatch(prompt_ids, prompt_mask, result.response_ids, result.response_mask),
        correct,
        result.truncated,
        scores,
    )


def _rollout_metrics(sampled: _Sampled, rounds: int, dropped_fraction: float, seconds: float) -> dict[str, float]:
    lengths = sampled.sequences.response_mask.sum(dim=-1).float()
    return {
        "rollout/reward_mean": sampled.scores.mean().item(),
        "rollout/reward_std": sampled.scores.std().item() if sampled.scores.numel() > 1 else 0.0,
        "rollout/accuracy": sampled.correct.float().mean().item(),
        "rollout/response_length_mean": lengths.mean().item(),
        "rollout/response_length_max": lengths.max().item(),
        "rollout/truncated_frac": sampled.truncated.float().mean().item(),
        "rollout/zero_variance_groups_filtered_frac": dropped_fraction,
        "rollout/generation_rounds": float(rounds),
        "perf/gen_tokens_per_s": lengths.sum().item() / max(seconds, 1e-9),
        "perf/gen_seconds": seconds,
    }


@torch.no_grad()
def collect_rollout(
    cfg: RLConfig,
    step_seed: int,
    sampler: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    task: TaskData,
    chat: bool,
    reference: PreTrainedModel | None = None,
    critic: PreTrainedModel | None = None,
) -> RolloutBatch:
    """Sample, grade and score one rollout batch with ``sampler`` as π_old.

    Metrics describe every response generated this step (all rounds); the batch holds the kept
    groups only: the first P informative groups under dynamic sampling, all P groups otherwise.
    """
    group, wanted = cfg.rollout.group_size, cfg.rollout.prompts_per_step
    sampler.eval()
    started = time.perf_counter()
    rounds, generated, kept = 0, [], []
    while True:
        rounds += 1
        sampled = _sample_round(cfg, sampler, tokenizer, task, chat, derive_seed(step_seed, "round", rounds))
        generated.append(sampled)
        keep = keep_groups(cfg, sampled.correct, sampled.scores).repeat_interleave(group)  # (P*G,)
        index = keep.nonzero().squeeze(-1)
        kept.append(sampled.rows(index))
        kept_groups = sum(k.correct.numel() for k in kept) // group
        if not cfg.dynamic_sampling.enabled or kept_groups >= wanted or rounds >= cfg.dynamic_sampling.max_rounds:
            break
    gen_seconds = time.perf_counter() - started
    everything = _concat(generated, tokenizer.pad_token_id)
    total_groups = everything.correct.numel() // group
    metrics = _rollout_metrics(everything, rounds, 1 - kept_groups / total_groups, gen_seconds)

    batch = _concat(kept, tokenizer.pad_token_id)
    rows = torch.arange(min(kept_groups, wanted) * group, device=batch.correct.device)
    return _score_rollout(cfg, batch.rows(rows), sampler, reference, critic, metrics)


def _score_rollout(
    cfg: RLConfig,
    batch: _Sampled,
    sampler: PreTrainedModel,
    reference: PreTrainedModel | None,
    critic: PreTrainedModel | None,
    metrics: dict[str, float],
) -> RolloutBatch:
    """π_old and π_ref log-probabilities, values, per-token rewards and advantages of the kept rows."""
    mask = batch.sequences.response_mask.float()
    if batch.correct.numel() == 0:  # dynamic sampling found no informative group: nothing to learn from
        empty = torch.zeros_like(mask)
        return RolloutBatch(
            batch.sequences, batch.correct, batch.truncated, batch.scores, empty, empty, metrics=metrics
        )
    old_logprobs = (
        None
        if update_gives_old_logprobs(cfg, sampler)
        else response_logprobs(sampler, batch.sequences, cfg.rollout.temperature)[0]
    )
    ref_logprobs = (
        response_logprobs(reference, batch.sequences, cfg.rollout.temperature)[0] if reference is not None else None
    )
    values = response_values(critic, batch.sequences) * mask if critic is not None else None
    rewards = token_rewards(cfg, batch.scores, mask, old_logprobs, ref_logprobs)
    estimate = compute_advantages(cfg.advantage, rewards, mask, cfg.rollout.group_size, values)
    group_expectation = (
        group_expected_probability(old_logprobs, mask, cfg.rollout.group_size)
        if cfg.policy_loss.ratio_level == "group_expectation"
        else None
    )
    return RolloutBatch(
        sequences=batch.sequences,
        correct=batch.correct,
        truncated=batch.truncated,
        scores=batch.scores,
        old_logprobs=old_logprobs * mask if old_logprobs is not None else None,
        advantages=estimate.advantages,
        returns=estimate.returns,
        old_values=values,
        ref_logprobs=ref_logprobs * mask if ref_logprobs is not None else None,
        group_expectation=group_expectation,
        metrics=metrics,
    )
