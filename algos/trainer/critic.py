"""The critic's phases before RL: its fit as a reward model, value pretraining, and the probe of the critic RL
starts from."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from accelerate import Accelerator
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from algos.config.schema import RLConfig
from algos.core.advantages import discounted_returns
from algos.core.rewards import token_rewards
from algos.engine.distributed import Processes
from algos.engine.models import ChatFormat
from algos.engine.seeding import derive_seed
from algos.trainer.reward_model import fit_reward_model
from algos.trainer.rollout import RolloutBatch, collect_rollout
from algos.trainer.update import Learner, update
from eval.tasks.sources import TaskData


def prepare_critic(
    cfg: RLConfig,
    *,
    learner: Learner,
    accelerator: Accelerator,
    tokenizer: PreTrainedTokenizerBase,
    task: TaskData,
    chat: ChatFormat | None,
    log_phase: Callable[[int, dict[str, float]], None],
    processes: Processes,
) -> None:
    """The critic before RL: fitted as a reward model (``critic.init=reward_model``), then value-pretrained.

    Both phases learn from rollouts of the initial policy. Value pretraining (VAPO) makes
    critic-only updates towards Monte-Carlo returns. Every phase step's metrics go to ``log_phase``:
    ``reward_model/…`` and ``value_pretraining/…`` (the critic before that step's update, and its loss).
    """
    policy, critic = accelerator.unwrap_model(learner.policy), accelerator.unwrap_model(learner.critic)

    def initial_rollout(seed: int) -> RolloutBatch:
        """A rollout of the initial policy, scored by the critic as it is now."""
        return collect_rollout(
            cfg,
            seed,
            sampling_policy=policy,
            tokenizer=tokenizer,
            task=task,
            chat=chat,
            critic=critic,
            processes=processes,
        )

    if cfg.critic.init == "reward_model":
        for index in range(cfg.critic.reward_model_steps):
            batch = initial_rollout(derive_seed(cfg.seed, "reward-model", index))
            if batch.size:  # every process fits the whole batch: the same gradient, averaged
                log_phase(index, fit_reward_model(cfg, learner.critic, learner.critic_optimizer, accelerator, batch))
    for index in range(cfg.critic.pretrain_steps):
        seed = derive_seed(cfg.seed, "pretrain", index)
        batch = initial_rollout(seed)
        if batch.size == 0:
            continue
        mask = batch.sequences.response_mask.float()
        rewards = token_rewards(cfg, batch.scores, mask, batch.old_logprobs, batch.ref_logprobs)
        targets = discounted_returns(rewards, mask, cfg.advantage.gamma)
        metrics = {
            **batch.metrics,
            **update(
                cfg,
                dataclasses.replace(batch, returns=targets),
                learner,
                accelerator,
                step_seed=seed,
                critic_only=True,
                processes=processes,
            ),
        }
        log_phase(
            index,
            {
                key.replace("critic/", "value_pretraining/"): v
                for key, v in metrics.items()
                if key.startswith("critic/")
            },
        )


def critic_probe(
    cfg: RLConfig,
    *,
    policy: PreTrainedModel,
    critic: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    task: TaskData,
    chat: ChatFormat | None,
    processes: Processes,
) -> dict[str, float]:
    """The critic RL starts from, measured on a fresh rollout of the initial ``policy``: its ``critic/…`` metrics."""
    batch = collect_rollout(
        cfg,
        derive_seed(cfg.seed, "critic-probe"),
        sampling_policy=policy,
        tokenizer=tokenizer,
        task=task,
        chat=chat,
        critic=critic,
        processes=processes,
    )
    return {key: value for key, value in batch.metrics.items() if key.startswith("critic/")}
