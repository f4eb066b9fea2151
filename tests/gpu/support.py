"""What the GPU tests share: one rollout batch sampled on a device, and one update of it on any device."""

from __future__ import annotations

import copy
import dataclasses

import torch
from accelerate import Accelerator
from accelerate.state import AcceleratorState

from algos.config.schema import RLConfig
from algos.engine.models import load_critic, load_policy, load_tokenizer
from algos.engine.sequences import SequenceBatch
from algos.trainer.rollout import RolloutBatch, collect_rollout
from algos.trainer.update import Learner, update
from eval.tasks.sources import builtin_task

STEP_SEED = 3


def accelerator_on(device: str, mixed_precision: str = "no") -> Accelerator:
    """A fresh accelerator for ``device`` (accelerate keeps one process-wide state, reset here)."""
    AcceleratorState._reset_state(reset_partial_state=True)
    return Accelerator(cpu=device == "cpu", mixed_precision=mixed_precision)


def rollout_on(cfg: RLConfig, device: str) -> RolloutBatch:
    """One step's rollout batch of ``cfg`` sampled, graded and scored (π_old, π_ref, values) on ``device``."""
    policy = load_policy(cfg.model).to(device)
    critic = load_critic(cfg.model, head_seed=0).to(device) if cfg.critic.enabled else None
    reference = copy.deepcopy(policy) if cfg.kl.coef > 0 else None
    task = builtin_task(cfg.task, cfg.run.eval_splits, cfg.run.eval_problems)
    return collect_rollout(
        cfg, STEP_SEED, policy, load_tokenizer(cfg.model), task, chat=None, reference=reference, critic=critic
    )


def batch_on(batch: RolloutBatch, device: str) -> RolloutBatch:
    """``batch`` with every tensor on ``device``."""

    def moved(value):
        return value.to(device) if isinstance(value, (torch.Tensor, SequenceBatch)) else value

    return dataclasses.replace(batch, **{f.name: moved(getattr(batch, f.name)) for f in dataclasses.fields(batch)})


@dataclasses.dataclass(frozen=True)
class Updated:
    """One update's metrics, the updated weights (policy, then critic) on the CPU, and the gradients it stepped by."""

    metrics: dict[str, float]
    weights: list[torch.Tensor]
    gradients: list[torch.Tensor]


def update_on(cfg: RLConfig, batch: RolloutBatch, device: str, mixed_precision: str = "no") -> Updated:
    """One update of the base policy (and a fresh critic) on ``batch`` under ``cfg`` on ``device``.

    Plain SGD at rate 1: the weights move by exactly the (clipped) gradient, which is what must agree.
    """
    policy = load_policy(cfg.model).to(device)
    models = [policy]
    learner = Learner(policy, torch.optim.SGD(policy.parameters(), lr=1.0))
    if cfg.critic.enabled:
        learner.critic = load_critic(cfg.model, head_seed=0).to(device)
        learner.critic_optimizer = torch.optim.SGD(learner.critic.parameters(), lr=1.0)
        models.append(learner.critic)
    before = [p.detach().cpu().clone() for model in models for p in model.parameters()]
    metrics = update(cfg, batch_on(batch, device), learner, accelerator_on(device, mixed_precision), STEP_SEED)
    after = [p.detach().cpu().clone() for model in models for p in model.parameters()]
    return Updated(metrics, after, [old - new for old, new in zip(before, after, strict=True)])


def cosine(first: list[torch.Tensor], second: list[torch.Tensor]) -> float:
    """Cosine similarity of two parameter lists taken as one flat vector each."""
    a, b = torch.cat([t.flatten() for t in first]), torch.cat([t.flatten() for t in second])
    return float(torch.nn.functional.cosine_similarity(a.double(), b.double(), dim=0))
