"""Policy (and critic) updates on one rollout batch: E epochs x M mini-batches, with gradient accumulation.

Each mini-batch is one optimizer step. Its loss is normalised by the whole mini-batch's
denominators, so splitting it into micro-batches changes memory, not the gradient. An update whose
loss or gradient norm is not finite is skipped (no optimizer step, gradients dropped) and counted,
so a bad batch can never write NaNs into the weights or a checkpoint.

In a multi-process run every process holds the whole rollout batch and runs an even share of each
mini-batch's rows; the denominators stay the whole mini-batch's and each share's loss is multiplied
by the process count, since DDP and FSDP average the gradients. Every process runs the same number
of forward/backward passes (a process short of rows runs a pass that contributes nothing), metrics
are merged over all processes' micro-batches, and an update is skipped everywhere when it is not
finite anywhere.
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch
from accelerate import Accelerator
from transformers import PreTrainedModel

from algos.config.registry import KL_ESTIMATORS
from algos.config.schema import RLConfig
from algos.core.kl import full_kl
from algos.core.logprobs import entropy_from_logits, token_logprobs
from algos.core.loss import LossInputs, compose_loss, mini_batch_denominators
from algos.engine.distributed import Processes
from algos.engine.seeding import derive_seed
from algos.engine.sequences import (
    SequenceBatch,
    chunked_response_logprobs,
    chunked_unsupported,
    response_logits,
    response_logprobs,
    response_values,
)
from algos.trainer.rollout import RolloutBatch

log = logging.getLogger(__name__)

ADDITIVE_METRICS = frozenset(
    {"actor/pg_loss", "actor/kl_loss", "actor/pos_lm_loss", "actor/policy_loss", "critic/value_loss"}
)
"""Loss terms that add up over micro-batches (mini-batch-wide denominators); other diagnostics are token-weighted means."""


@dataclass
class Learner:
    """The trainable models and their optimizers; the critic pair is None without a value model.

    reference: the frozen reference policy, read by the update only for the exact KL (``kl.estimator=full``).
    """

    policy: PreTrainedModel
    optimizer: torch.optim.Optimizer
    critic: PreTrainedModel | None = None
    critic_optimizer: torch.optim.Optimizer | None = None
    reference: PreTrainedModel | None = None


def warmup_factor(step: int, warmup_steps: int) -> float:
    """The actor's learning-rate multiplier at rollout step ``step`` (1-based): min(1, step / warmup_steps).

    Linear warm-up, then constant (DAPO §4.1, VAPO §5.1); 1 throughout when ``warmup_steps`` is 0.
    """
    return min(1.0, step / warmup_steps) if warmup_steps else 1.0


def _micro_batches(cfg: RLConfig, rows: torch.Tensor, lengths: torch.Tensor, prompt_width: int) -> list[torch.Tensor]:
    """The mini-batch ``rows`` in passes of similar response lengths (``lengths``: (B,) of the whole batch)."""
    ordered = rows[lengths[rows].argsort(stable=True)]
    if cfg.optim.micro_batch_size:
        return list(ordered.split(cfg.optim.micro_batch_size))
    if cfg.optim.micro_batch_tokens:
        return token_budget_passes(ordered, lengths, prompt_width, cfg.optim.micro_batch_tokens)
    return [part for part in ordered.tensor_split(cfg.optim.length_buckets) if part.numel()]


def token_budget_passes(
    ordered: torch.Tensor, lengths: torch.Tensor, prompt_width: int, budget: int
) -> list[torch.Tensor]:
    """Split rows sorted by response length into passes of at most ``budget`` padded tokens each.

    A pass of n rows costs n * (prompt_width + its longest response), the (rows, columns) its forward
    pass runs on; ``ordered`` (R,) are row indices in ascending ``lengths`` (B,) order. A row that
    alone exceeds the budget gets a pass of its own.
    """
    passes: list[list[int]] = [[]]
    for row in ordered.tolist():
        width = prompt_width + int(lengths[row])  # the longest so far, since rows come in ascending length
        if passes[-1] and (len(passes[-1]) + 1) * width > budget:
            passes.append([])
        passes[-1].append(row)
    return [torch.tensor(rows, dtype=ordered.dtype, device=ordered.device) for rows in passes if rows]


def _merge_micro(metrics: list[tuple[dict[str, torch.Tensor], torch.Tensor]]) -> dict[str, torch.Tensor]:
    """Combine micro-batch metrics (0-d tensors, each with its response tokens): additive losses are summed,
    diagnostics weighted by response tokens; nothing is read from the device."""
    # In float64, as Python numbers would be: the merged values are the same bits as when each was read first.
    total_weight = sum(weight.double() for _, weight in metrics)
    total_weight = total_weight.clamp(min=1.0) if torch.is_tensor(total_weight) else 1.0
    merged: dict[str, torch.Tensor] = {}
    for values, weight in metrics:
        for key, value in values.items():
            share = 1.0 if key in ADDITIVE_METRICS else weight.double() / total_weight
            merged[key] = merged.get(key, 0.0) + share * value.double()
    return merged


def _optimizer_step(
    cfg: RLConfig,
    learner: Learner,
    accelerator: Accelerator,
    processes: Processes,
    *,
    finite_loss: torch.Tensor,
    critic_only: bool,
) -> dict[str, torch.Tensor | float]:
    """Clip the gradients, step where the loss (a 0-d bool tensor) and every gradient norm are finite on every
    process, clear the gradients. The one read from the device an optimizer step needs is this decision."""
    metrics: dict[str, torch.Tensor | float] = {}
    pairs = [] if critic_only else [("actor", learner.policy, learner.optimizer)]
    if learner.critic is not None:
        pairs.append(("critic", learner.critic, learner.critic_optimizer))
    limit = cfg.optim.max_grad_norm if cfg.optim.max_grad_norm is not None else math.inf
    norms = {
        name: _whole(torch.as_tensor(accelerator.clip_grad_norm_(list(model.parameters()), limit))).detach()
        for name, model, _ in pairs
    }
    device = finite_loss.device
    checks = torch.stack([finite_loss, *(torch.isfinite(norm).to(device) for norm in norms.values())])
    finite = processes.all_true(bool(checks.all()))
    for name, _, optimizer in pairs:
        if finite:
            optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        metrics[f"{name}/grad_norm"] = norms[name]
        metrics[f"{name}/lr"] = optimizer.param_groups[0]["lr"]
    metrics["actor/nonfinite_skipped"] = 0.0 if finite else 1.0
    if not finite:
        log.warning("non-finite loss or gradient norm %s: update skipped", {k: float(v) for k, v in norms.items()})
    return metrics


def _loss_inputs(
    cfg: RLConfig,
    batch: RolloutBatch,
    rows: torch.Tensor,
    learner: Learner,
    *,
    critic_only: bool,
    share_prompts: bool,
    chunked: bool = False,
    token_draws: torch.Generator | None = None,
) -> LossInputs:
    width = int(batch.sequences.response_mask[rows].sum(dim=-1).max())  # this pass's longest response
    sequences = batch.sequences.rows(rows).trimmed(width)
    wants_entropy_grad = cfg.policy_loss.entropy_coef > 0
    exact_kl = None
    if critic_only:
        logprobs, entropy = batch.old_logprobs[rows, :width], None
    elif cfg.kl_in_loss and KL_ESTIMATORS[cfg.kl.estimator].facts.exact:
        logprobs, entropy, exact_kl = _logprobs_with_full_kl(cfg, learner, sequences, share_prompts)
    elif chunked:
        logprobs, entropy = chunked_response_logprobs(learner.policy, sequences, cfg.rollout.temperature)
    else:
        logprobs, entropy = response_logprobs(
            learner.policy, sequences, cfg.rollout.temperature, with_entropy=True, share_prompts=share_prompts
        )
    if entropy is not None and not wants_entropy_grad:
        entropy = entropy.detach()

    def per_token(values: torch.Tensor | None) -> torch.Tensor | None:
        return values[rows, :width] if values is not None else None

    mask = sequences.response_mask.float()
    return LossInputs(
        logprobs=logprobs,
        # Without a scored π_old, this forward pass runs the sampling weights (see update_gives_old_logprobs).
        old_logprobs=per_token(batch.old_logprobs) if batch.old_logprobs is not None else logprobs.detach() * mask,
        advantages=per_token(batch.advantages),
        mask=mask,
        truncated=batch.truncated[rows],
        correct=batch.correct[rows],
        ref_logprobs=per_token(batch.ref_logprobs),
        entropy=entropy,
        group_expectation=batch.group_expectation[rows] if batch.group_expectation is not None else None,
        values=response_values(learner.critic, sequences) if learner.critic is not None else None,
        old_values=per_token(batch.old_values),
        returns=per_token(batch.returns),
        sampler_logprobs=per_token(batch.sampler_logprobs),
        full_kl=exact_kl,
        token_draws=token_draws,
    )


def _shares_prompts(cfg: RLConfig, accelerator: Accelerator) -> bool:
    """Whether the update's forward pass continues each row from its prompt's cache (see ``response_logits``),
    as ``optim.update_pass`` says (auto: on the CPU only, where it was measured faster).

    Not under gradient checkpointing: a checkpointed layer runs without a cache in training mode. Not with
    chunked log-probabilities (``optim.token_logprobs=chunked``), which take the joined rows' hidden states. Not
    under FSDP either, where every process must run the same number of forward calls and a pass of
    one-token responses would run one instead of two. The joined prompt + response pass is then
    used (the same logits, to float rounding).
    """
    joined = cfg.optim.update_pass == "joined_rows" or cfg.optim.token_logprobs == "chunked"
    if cfg.model.gradient_checkpointing or accelerator.is_fsdp2 or joined:
        return False
    return cfg.optim.update_pass == "shared_prompts" or accelerator.device.type == "cpu"


def _chunks_logprobs(cfg: RLConfig, accelerator: Accelerator, policy: PreTrainedModel) -> bool:
    """Whether the update takes its log-probabilities chunk by chunk: where ``optim.token_logprobs`` says chunked
    (auto: never, since the whole logits measured faster wherever they fit; see docs/gpus.md); ``chunked`` where
    it cannot run fails naming why."""
    choice = cfg.optim.token_logprobs
    if choice != "chunked":
        return False
    why = chunked_unsupported(policy)  # its joined rows: see _shares_prompts
    if accelerator.is_fsdp2 or accelerator.num_processes > 1:
        why = "the run is sharded or has several processes, whose forward pass must run whole"
    if why is not None:
        raise ValueError(f"optim.token_logprobs=chunked cannot run: {why}; use whole_logits or auto")
    return True


def _logprobs_with_full_kl(
    cfg: RLConfig, learner: Learner, sequences: SequenceBatch, share_prompts: bool
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Log-probabilities, entropies and the exact per-token KL to the reference, all (B, T), from one policy pass."""
    if learner.reference is None:
        raise ValueError("kl.estimator=full needs the reference policy in the learner")
    logits = response_logits(learner.policy, sequences, share_prompts) / cfg.rollout.temperature  # (B, T, V)
    with torch.no_grad():
        reference = torch.log_softmax(
            response_logits(learner.reference, sequences).float() / cfg.rollout.temperature, -1
        )
    exact = full_kl(torch.log_softmax(logits.float(), dim=-1), reference)
    return token_logprobs(logits, sequences.response_ids), entropy_from_logits(logits), exact


def update(
    cfg: RLConfig,
    batch: RolloutBatch,
    learner: Learner,
    accelerator: Accelerator,
    step_seed: int,
    *,
    after_optimizer_step: Callable[[], None] = lambda: None,
    critic_only: bool = False,
    processes: Processes | None = None,
) -> dict[str, float]:
    """Run E epochs of M mini-batch updates on ``batch``; return step metrics averaged over updates.

    ``critic_only`` trains the value model alone (value pretraining): the policy terms are computed
    on the sampling log-probabilities, so they carry no gradient, and only the critic steps.
    ``processes``: the processes of a multi-process run, each holding the same ``batch``.
    """
    if batch.size == 0:
        return {"actor/nonfinite_skipped": 0.0, "actor/nonfinite_skipped_frac": 0.0}
    processes = processes or Processes()
    learner.policy.train()
    if learner.critic is not None:
        learner.critic.train()
    updates: list[dict[str, float]] = []
    token_values: dict[str, list[torch.Tensor]] = defaultdict(list)
    lengths = batch.sequences.response_mask.sum(dim=-1)  # (B,)
    prompt_width = batch.sequences.prompt_ids.shape[1]
    token_draws = torch.Generator().manual_seed(derive_seed(step_seed, "token-draws"))  # Clip-Cov's choices
    share_prompts = _shares_prompts(cfg, accelerator)
    chunked = _chunks_logprobs(cfg, accelerator, learner.policy)
    for epoch in range(cfg.optim.epochs):
        generator = torch.Generator().manual_seed(derive_seed(step_seed, "epoch", epoch))
        order = torch.randperm(batch.size, generator=generator).to(batch.correct.device)
        for rows in order.tensor_split(min(cfg.optim.mini_batches, batch.size)):
            denominators = mini_batch_denominators(
                cfg, batch.sequences.response_mask[rows].float(), batch.truncated[rows], batch.correct[rows]
            )
            micro = _micro_batches(cfg, rows[processes.share(len(rows))], lengths, prompt_width)
            passes = int(processes.maximum(len(micro)))
            micro_metrics, finite = [], torch.ones((), dtype=torch.bool)
            for index in range(passes):
                real = index < len(micro)
                part = micro[index] if real else rows[:1]  # a pass of no weight keeps the processes in step
                with _gradient_sync(accelerator, learner, last=index == passes - 1), accelerator.autocast():
                    inputs = _loss_inputs(
                        cfg,
                        batch,
                        part,
                        learner,
                        critic_only=critic_only,
                        share_prompts=share_prompts,
                        chunked=chunked,
                        token_draws=token_draws,
                    )
                    output = compose_loss(cfg, inputs, denominators)
                    loss = output.total if not critic_only else output.value
                    if real:
                        finite = finite.to(loss.device) & torch.isfinite(loss.detach())
                    # Every pass runs backward, so the processes reduce gradients together; a non-finite
                    # loss is caught by the skipped optimizer step.
                    accelerator.backward(loss * (processes.count if real else 0.0))
                if real:
                    micro_metrics.append((output.metrics, batch.sequences.response_mask[part].sum().float()))
                    for key, values in output.token_values.items():
                        token_values[key].append(values)
            metrics = _merge_micro(processes.gather(micro_metrics))
            metrics.update(
                _optimizer_step(cfg, learner, accelerator, processes, finite_loss=finite, critic_only=critic_only)
            )
            updates.append(metrics)
            if not critic_only:
                after_optimizer_step()
    updates = _read(updates)
    step_metrics = {key: sum(u.get(key, 0.0) for u in updates) / len(updates) for key in updates[0]}
    step_metrics["actor/nonfinite_skipped"] = sum(u["actor/nonfinite_skipped"] for u in updates)
    step_metrics["actor/nonfinite_skipped_frac"] = step_metrics["actor/nonfinite_skipped"] / len(updates)
    if critic_only:
        return {key: value for key, value in step_metrics.items() if key.startswith("critic/")}
    step_metrics["actor/approx_kl_old_max"] = max(u["actor/approx_kl_old"] for u in updates)
    step_metrics.update(token_statistics(_gathered_token_values(processes, token_values)))
    return step_metrics


def _gathered_token_values(
    processes: Processes, token_values: dict[str, list[torch.Tensor]]
) -> dict[str, list[torch.Tensor]]:
    """Every process's token values of each key, concatenated in process order, in one collective call.

    A process whose share of every mini-batch was empty (a mini-batch of one row under two processes) holds no key,
    so a gather per key would leave it waiting in the next collective while the others wait in the next gather.
    """
    shares = processes.gather([dict(token_values)])
    keys = sorted({key for share in shares for key in share})
    return {key: [values for share in shares for values in share.get(key, [])] for key in keys}


def _whole(tensor: torch.Tensor) -> torch.Tensor:
    """A distributed tensor (FSDP2's gradient norm) as the plain tensor it stands for; others as they are."""
    return tensor.full_tensor() if hasattr(tensor, "full_tensor") else tensor


def _read(updates: list[dict[str, torch.Tensor | float]]) -> list[dict[str, float]]:
    """Every update's metrics as numbers, the tensors among them read from the device at once."""
    tensors = [
        (index, key, value) for index, u in enumerate(updates) for key, value in u.items() if torch.is_tensor(value)
    ]
    read = [dict(u) for u in updates]
    if tensors:
        device = tensors[0][2].device
        numbers = torch.stack([value.detach().double().reshape(()).to(device) for *_, value in tensors]).tolist()
        for (index, key, _), number in zip(tensors, numbers, strict=True):
            read[index][key] = number
    return read


@contextlib.contextmanager
def _gradient_sync(accelerator: Accelerator, learner: Learner, last: bool) -> Iterator[None]:
    """Gradients are reduced across processes only in a mini-batch's last pass (DDP's and FSDP's no_sync)."""
    with contextlib.ExitStack() as stack:
        if not last:
            for model in (learner.policy, learner.critic):
                if model is not None:
                    stack.enter_context(accelerator.no_sync(model))
        yield


def token_statistics(token_values: dict[str, list[torch.Tensor]]) -> dict[str, float]:
    """Statistics over every loss token of a step's updates; each list holds one 1-D tensor per micro-batch, NaN
    where a position is not one of the statistic's tokens (read from the device here, once a step).

    actor/ratio_mean, _max, _var: the importance weights (population variance). actor/clip_high_prob_mean:
    mean sampling probability of the up-clipped tokens (DAPO Fig. 3a). A statistic of no tokens is left out.
    """
    ratios, clipped = (_tokens(token_values.get(key, [])) for key in ("actor/ratio", "actor/clip_high_prob"))
    metrics = {}
    if ratios.numel():
        metrics["actor/ratio_mean"] = ratios.mean().item()
        metrics["actor/ratio_max"] = ratios.max().item()
        metrics["actor/ratio_var"] = ratios.var(unbiased=False).item()
    if clipped.numel():
        metrics["actor/clip_high_prob_mean"] = clipped.mean().item()
    return metrics


def _tokens(parts: list[torch.Tensor]) -> torch.Tensor:
    """The parts' values that are not NaN, joined, as float32 on the CPU."""
    values = torch.cat([torch.zeros(0), *(part.float().cpu() for part in parts)])
    return values[~values.isnan()]
