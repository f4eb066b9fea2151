"""What a run trains and evaluates on: a source of training prompts, held-out sets and a verifier.

The built-in tasks (the checked chain, the default, and the worksheet chain) are such sources; a
user's own problems (prompts with answers) and verifier are another. The verifier that grades evaluation is the one that computes
the training reward, so the two can never disagree.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from eval.tasks import synthetic, word_problems
from eval.tasks.checked_chain import CheckedChainTask
from eval.tasks.config import TaskConfig
from eval.tasks.records import Problem, Verifier
from eval.tasks.synthetic import ChainTask
from eval.tasks.word_problems import WordProblemTask

BuiltinTask = CheckedChainTask | ChainTask | WordProblemTask

DIFFICULTY = {"checked_chain": "multiplications", "chain": "steps", "word_problems": "operation"}
"""Task name -> the problem metadata key that grades its difficulty."""
VERIFIERS: dict[str, Verifier] = {
    "checked_chain": synthetic.grade,
    "chain": synthetic.grade,
    "word_problems": word_problems.grade,
}
"""Task name -> the verifier that grades its responses and computes the reward."""

EVAL_SET_SEED = 0
"""Held-out sets do not depend on the run's seed, so runs with different seeds are scored on the same problems."""


@dataclass(frozen=True)
class TaskData:
    """sample_train(count, seed) -> ``count`` training problems; evaluation: split name -> problems.

    final_evaluation, when given, replaces evaluation at a run's last step (a larger held-out set).
    """

    sample_train: Callable[[int, int], list[Problem]]
    evaluation: Mapping[str, Sequence[Problem]]
    verifier: Verifier
    longest_response_tokens: int | None = None
    final_evaluation: Mapping[str, Sequence[Problem]] | None = None

    def held_out(self, final: bool) -> Mapping[str, Sequence[Problem]]:
        """The held-out sets of an evaluation: the final ones at the last step, where the task has them."""
        return self.final_evaluation if final and self.final_evaluation is not None else self.evaluation


def make_task(cfg: TaskConfig) -> BuiltinTask:
    """The built-in task ``cfg`` names, with its knobs."""
    if cfg.name == "chain":
        return ChainTask(cfg.min_steps, cfg.max_steps, cfg.modulus)
    if cfg.name == "word_problems":
        return WordProblemTask()
    return CheckedChainTask(cfg.min_steps, cfg.max_steps, cfg.modulus, cfg.multiply_share)


def builtin_task(
    cfg: TaskConfig, splits: Sequence[str], eval_problems: int, final_eval_problems: int | None = None
) -> TaskData:
    """The configured built-in task as training prompts, held-out sets and its verifier.

    A split's first ``eval_problems`` problems do not depend on how many are drawn, so the final
    held-out set of ``final_eval_problems`` extends the earlier evaluations' set: one draw serves both.
    """
    task = make_task(cfg)
    drawn = {
        split: task.problems(split, max(eval_problems, final_eval_problems or 0), seed=EVAL_SET_SEED)
        for split in splits
    }
    return TaskData(
        sample_train=lambda count, seed: task.problems("train", count, seed),
        evaluation={split: problems[:eval_problems] for split, problems in drawn.items()},
        verifier=VERIFIERS[cfg.name],
        longest_response_tokens=task.longest_response_tokens(),
        final_evaluation=None
        if final_eval_problems is None
        else {split: problems[:final_eval_problems] for split, problems in drawn.items()},
    )


def problem_list_task(
    train: Sequence[Problem], evaluation: Mapping[str, Sequence[Problem]], verifier: Verifier
) -> TaskData:
    """A user's own problems: each step draws distinct training problems at random (seeded)."""
    if not train:
        raise ValueError("the training problem list is empty")

    def sample(count: int, seed: int) -> list[Problem]:
        rng = random.Random(seed)
        return (
            [train[i] for i in rng.sample(range(len(train)), count)]
            if count <= len(train)
            else rng.choices(train, k=count)
        )

    return TaskData(sample_train=sample, evaluation=evaluation, verifier=verifier)
