"""The critic fitted as an outcome reward model before it serves as the value model (VAPO §3.1, §4.1).

VAPO initialises its value model from a reward model. A reward model scores a whole response at its
last token; what it outputs at earlier tokens was never trained, and it is this mismatch with a value
model (the expected return at every token) that value pretraining exists to remove. The fit regresses
the critic's score after each response onto the verifier reward, ½ (V_last − R)², one optimizer step
per rollout batch of the initial policy.
"""

from __future__ import annotations

import math

import torch
from accelerate import Accelerator

from algos.config.schema import RLConfig
from algos.core.shaping import correctness_reward
from algos.engine.sequences import final_values
from algos.trainer.rollout import RolloutBatch


def reward_model_loss(scores: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """½ mean over responses of (score − reward)²: scores, targets (B,) -> scalar."""
    return 0.5 * ((scores - targets) ** 2).mean()


def fit_reward_model(
    cfg: RLConfig,
    critic: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    accelerator: Accelerator,
    batch: RolloutBatch,
) -> dict[str, float]:
    """One optimizer step of the critic towards the verifier reward of ``batch``'s responses.

    Micro-batches of ``optim.micro_batch_size`` responses (all at once when None) accumulate the
    gradient of the whole batch's loss. Returns reward_model/loss and reward_model/accuracy (the
    share of responses whose score falls on the side of the midpoint between the two reward values
    that their correctness gives).
    """
    critic.train()
    targets = correctness_reward(batch.correct, cfg.reward.correct, cfg.reward.incorrect).to(batch.correct.device)
    midpoint = (cfg.reward.correct + cfg.reward.incorrect) / 2
    rows = torch.arange(batch.size, device=batch.correct.device)
    loss_total, agree = 0.0, 0
    for micro in rows.split(cfg.optim.micro_batch_size or batch.size):
        with accelerator.autocast():
            scores = final_values(critic, batch.sequences.rows(micro))
            loss = reward_model_loss(scores, targets[micro]) * (len(micro) / batch.size)
        accelerator.backward(loss)
        loss_total += loss.item()
        agree += int(((scores.detach() > midpoint) == batch.correct[micro]).sum())
    norm = float(accelerator.clip_grad_norm_(critic.parameters(), cfg.optim.max_grad_norm or math.inf))
    if math.isfinite(loss_total) and math.isfinite(norm):
        optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return {"reward_model/loss": loss_total, "reward_model/accuracy": agree / batch.size}
