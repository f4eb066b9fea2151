"""What a run trains and evaluates on: a source of training prompts, held-out sets and a verifier.

The built-in chained-arithmetic task is one such source; a user's own problems (prompts with
answers) and verifier are another. The verifier that grades evaluation is the one that computes
the training reward, so the two can never disagree.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from algos.config import TaskConfig
from eval.accuracy import Verifier
from eval.records import Problem
from eval.synthetic import ChainTask, grade

EVAL_SET_SEED = 0
"""Held-out sets do not depend on the run's seed, so runs with different seeds are scored on the same problems."""


@dataclass(frozen=True)
class TaskData:
    """sample_train(count, seed) -> ``count`` training problems; evaluation: split name -> problems."""

    sample_train: Callable[[int, int], list[Problem]]
    evaluation: Mapping[str, Sequence[Problem]]
    verifier: Verifier
    longest_solution_tokens: int | None = None


def builtin_task(cfg: TaskConfig, splits: Sequence[str], eval_problems: int) -> TaskData:
    """The chained-arithmetic task with the configured difficulty."""
    task = ChainTask(cfg.min_steps, cfg.max_steps, cfg.modulus)
    return TaskData(
        sample_train=lambda count, seed: task.problems("train", count, seed),
        evaluation={split: task.problems(split, eval_problems, seed=EVAL_SET_SEED) for split in splits},
        verifier=grade,
        longest_solution_tokens=task.solution_tokens(cfg.max_steps) + 1,
    )


def problem_list_task(
    train: Sequence[Problem], evaluation: Mapping[str, Sequence[Problem]], verifier: Verifier
) -> TaskData:
    """A user's own problems: each step draws distinct training problems at random (seeded)."""
    if not train:
        raise ValueError("the training problem list is empty")

    def sample(count: int, seed: int) -> list[Problem]:
        rng = random.Random(seed)
        return [train[i] for i in rng.sample(range(len(train)), count)] if count <= len(train) else rng.choices(train, k=count)

    return TaskData(sample_train=sample, evaluation=evaluation, verifier=verifier)
