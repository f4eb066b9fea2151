"""What a task gives the RL components to act on, measured on a model's own samples (G per problem).

Each property says whether a component can have an effect at all, before any training:

- free length: correct responses to one problem differ in length (token- vs sequence-level losses,
  Dr. GRPO's length bias, length shaping);
- a long wrong failure mode: looping responses, mostly wrong or cut off (token-level loss, overlong
  shaping);
- a difficulty spread: groups that are all right or all wrong (dynamic sampling, std scaling), and
  a hard band of problems solved only now and then (room to learn);
- truncation on solvable problems: cut-off responses to problems the model solves in another sample
  (overlong filtering, soft overlong punishment);
- long responses: γλ-discounting over the longest correct responses (decoupled and length-adaptive GAE);
- room to improve: accuracy at T = 1.

Command line (a model's properties on a built-in task's validation problems, e.g. a pretrained model
on the word problems, at the temperature its runs sample at)::

    python -m algos.trainer.task_properties --model results/models/smollm2-135m-instruct --task word_problems
        --problems 64 --group-size 8 --max-new-tokens 64 --temperature 0.7 --out results/task_properties/x.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from algos.config.schema import ModelConfig
from algos.core.repetition import tandem_repeats
from algos.engine.accuracy import accuracy
from algos.engine.models import ChatFormat, ModelNotFoundError, chat_format, load_policy, load_tokenizer
from algos.engine.provenance import environment
from algos.engine.sampling import grade, sample_batches
from eval.tasks.config import TaskConfig
from eval.tasks.records import Problem, Verifier
from eval.tasks.sources import DIFFICULTY, VERIFIERS, make_task

HARD_BAND = (0.05, 0.15)
"""Pass rates of the hard band: solved now and then, so that a group of 8 sometimes has a success."""
GAE_LAMBDA = 0.95
"""PPO's fixed λ, whose λ^l over the longest correct responses says how far GAE's signal reaches."""


@dataclass(frozen=True)
class SampledGroups:
    """G samples of each problem, row i·G + j being sample j of problem i: every tensor is (N·G,)."""

    problems: Sequence[Problem]
    group_size: int
    lengths: torch.Tensor
    correct: torch.Tensor
    truncated: torch.Tensor
    repetitive: torch.Tensor

    def grouped(self, values: torch.Tensor) -> torch.Tensor:
        """(N·G,) -> (N, G)."""
        return values.view(-1, self.group_size)


def sample_groups(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    problems: Sequence[Problem],
    verifier: Verifier,
    group_size: int,
    max_new_tokens: int,
    seed: int = 0,
    prompts_per_batch: int = 32,
    chat: ChatFormat | None = None,
    temperature: float = 1.0,
) -> SampledGroups:
    """Sample ``group_size`` responses to each problem at ``temperature`` within ``max_new_tokens`` and grade
    them (a response the verifier cannot score counts as wrong); ``chat``: how prompts go through the
    model's chat template (None: raw)."""
    generator = torch.Generator(next(model.parameters()).device).manual_seed(seed)
    parts: dict[str, list[torch.Tensor]] = defaultdict(list)
    for part in sample_batches(
        model,
        tokenizer,
        problems,
        max_new_tokens,
        prompts_per_batch=prompts_per_batch,
        group_size=group_size,
        chat=chat,
        temperature=temperature,
        generator=generator,
    ):
        parts["lengths"].append(part.lengths)
        parts["correct"].append(grade(verifier, part.texts, part.answers).correct)
        parts["truncated"].append(part.truncated)
        parts["repetitive"].append(tandem_repeats(part.sequences.response_ids, part.sequences.response_mask))
    return SampledGroups(problems, group_size, **{key: torch.cat(values).cpu() for key, values in parts.items()})


def task_properties(samples: SampledGroups, difficulty: str) -> dict[str, float | int | dict]:
    """The six properties (see the module docstring) of ``samples``; ``difficulty``: the metadata key of levels."""
    correct, lengths = samples.grouped(samples.correct), samples.grouped(samples.lengths)
    solved = correct.any(dim=1, keepdim=True)  # (N, 1)
    right_per_group = correct.sum(dim=1)
    correct_length_stds = [
        statistics.stdev(row[ok].tolist()) for row, ok in zip(lengths, correct, strict=True) if int(ok.sum()) >= 2
    ]
    correct_lengths = samples.lengths[samples.correct]
    longest = int(correct_lengths.max()) if correct_lengths.numel() else 0
    repetitive = samples.repetitive
    rates_by_level: dict[int, list[float]] = defaultdict(list)
    for problem, right in zip(samples.problems, right_per_group.tolist(), strict=True):
        rates_by_level[int(problem.metadata[difficulty])].append(right / samples.group_size)
    pass_rate = {level: sum(rates) / len(rates) for level, rates in sorted(rates_by_level.items())}
    band = [level for level, rate in pass_rate.items() if HARD_BAND[0] <= rate <= HARD_BAND[1]]
    return {
        "problems": len(samples.problems),
        "group_size": samples.group_size,
        "accuracy_t1": samples.correct.float().mean().item(),
        "correct_length_std_median": statistics.median(correct_length_stds) if correct_length_stds else 0.0,
        "groups_with_two_correct": len(correct_length_stds),
        "repetitive_frac": repetitive.float().mean().item(),
        "repetitive_wrong_or_truncated_frac": (
            (~samples.correct | samples.truncated)[repetitive].float().mean().item() if repetitive.any() else 0.0
        ),
        "zero_variance_groups_frac": ((right_per_group == 0) | (right_per_group == samples.group_size))
        .float()
        .mean()
        .item(),
        "all_wrong_groups_frac": (right_per_group == 0).float().mean().item(),
        "pass_rate_by_difficulty": {f"{difficulty}={level}": rate for level, rate in pass_rate.items()},
        "hard_band_levels": band,
        "hard_band_problems_frac": sum(len(rates_by_level[level]) for level in band) / len(samples.problems),
        "truncated_frac": samples.truncated.float().mean().item(),
        "truncated_on_solvable_frac": (samples.grouped(samples.truncated) & solved).float().mean().item(),
        "longest_correct_tokens": longest,
        "correct_tokens_p90": float(correct_lengths.float().quantile(0.9)) if correct_lengths.numel() else 0.0,
        "gae_lambda_power_longest_correct": GAE_LAMBDA**longest,
    }


def measure(
    model_cfg: ModelConfig,
    task_cfg: TaskConfig,
    problems: int,
    group_size: int,
    max_new_tokens: int,
    temperature: float,
    seed: int = 0,
) -> dict:
    """The properties of ``model_cfg``'s samples on ``problems`` validation problems of the task, with its greedy
    accuracy on them, the settings and the seconds taken."""
    started = time.perf_counter()
    tokenizer = load_tokenizer(model_cfg)
    chat = chat_format(model_cfg, tokenizer)
    model = load_policy(model_cfg)
    validation = make_task(task_cfg).problems("validation", problems, seed=seed)
    verifier = VERIFIERS[task_cfg.name]
    samples = sample_groups(
        model, tokenizer, validation, verifier, group_size, max_new_tokens, seed, chat=chat, temperature=temperature
    )
    greedy = accuracy(model, tokenizer, validation, verifier, max_new_tokens, greedy=True, chat=chat)
    return {
        "model": model_cfg.name_or_path,
        "task": task_cfg.name,
        "settings": {
            "problems": problems,
            "group_size": group_size,
            "max_new_tokens": max_new_tokens,
            "temperature": temperature,
            "seed": seed,
            "chat_template": chat is not None,
        },
        "accuracy_greedy": greedy,
        "accuracy_sampled": samples.correct.float().mean().item(),
        "properties": task_properties(samples, DIFFICULTY[task_cfg.name]),
        "seconds": round(time.perf_counter() - started, 1),
        "environment": environment(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m algos.trainer.task_properties", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--model", required=True, help="model directory or hub id")
    parser.add_argument("--task", default="checked_chain", choices=sorted(VERIFIERS), help="built-in task")
    parser.add_argument("--problems", type=int, default=64, help="validation problems sampled")
    parser.add_argument("--group-size", type=int, default=8, help="samples per problem")
    parser.add_argument("--max-new-tokens", type=int, default=96)
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", required=True, type=Path, help="JSON file written with the measurement")
    args = parser.parse_args(argv)
    try:
        record = measure(
            ModelConfig(name_or_path=args.model),
            TaskConfig(name=args.task),
            args.problems,
            args.group_size,
            args.max_new_tokens,
            args.temperature,
            args.seed,
        )
    except (ModelNotFoundError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=2) + "\n")
    print(json.dumps({key: record[key] for key in ("accuracy_greedy", "accuracy_sampled", "seconds")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
