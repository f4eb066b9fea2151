"""Build the built-in base model: a tiny Llama-architecture LM trained from scratch on a teacher's responses.

Supervised fine-tuning on ``prompt -> response <eos>`` (loss on the response only) runs in two
phases, as a pretrained LLM first learns a skill and then picks up habits. The *worked* phase trains
on correct worked responses until the arithmetic is learned; the *mixed* phase then trains on the
teacher's habits while the learning rate decays to zero. The base is therefore imperfect in the way
pretrained LLMs are before RL: the reasoning is there but not reliably used.

- checked_chain (the default task): the teacher checks lines at a rate drawn per response, slips on
  multiplications far more often than on additions (``multiply_noise``, ``other_noise``) and now and
  then falls into a loop of its check line ending in a wrong answer (``loop_share``). Sampled at
  T = 1, the base imitates all of it: responses of many lengths, a difficulty spread set by the number
  of multiplications, loops, and checked long chains that overrun the budget.
- chain: the teacher works out only ``worked_fraction`` of the problems and states the answer alone
  for the rest, which a model this small mostly guesses.

The directory written holds the model and tokenizer (``save_pretrained``, loadable with
``AutoModelForCausalLM`` / ``AutoTokenizer``) and ``base_model.json`` with the recipe and what the
task gives RL to act on, measured on the base's own samples (:mod:`algos.trainer.task_properties`), and
``environment.json`` with the machine and software it was built on (:func:`algos.engine.provenance.environment`).

Command line: ``python -m algos.trainer.sft --out results/base_model [--task chain] [--worked-steps 900] [--seed 0]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import sys
import time
from pathlib import Path

import torch
from pydantic import Field, ValidationError
from pydantic.dataclasses import dataclass
from tqdm import tqdm
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerBase

from algos.config.schema import _STRICT, PositiveInt, Probability
from algos.engine.accuracy import accuracy
from algos.engine.provenance import environment
from algos.trainer.task_properties import sample_groups, task_properties
from eval.tasks.checked_chain import CheckedChainTask, TeacherStyle, teacher_response
from eval.tasks.config import TaskConfig
from eval.tasks.records import Problem
from eval.tasks.sources import DIFFICULTY, BuiltinTask, make_task
from eval.tasks.synthetic import answer_only, grade
from eval.tasks.tokenizer import build_tokenizer

RECIPE_FILE = "base_model.json"
ENVIRONMENT_FILE = "environment.json"  # beside the recipe, which stays byte-identical across machines
IGNORE_INDEX = -100


@dataclass(frozen=True, config=_STRICT)
class BaseModelRecipe:
    """Architecture, teacher and supervised warm-up of the built-in base (defaults: ~0.26 M parameters)."""

    hidden_size: PositiveInt = Field(64, description="Width of the model.")
    layers: PositiveInt = Field(4, description="Transformer blocks.")
    heads: PositiveInt = Field(4, description="Attention heads (hidden_size must be divisible by it).")
    worked_steps: PositiveInt = Field(900, description="Steps on correct worked responses only (the skill).")
    mixed_steps: PositiveInt = Field(
        300, description="Steps on the teacher's habits; the rate decays linearly towards zero."
    )
    worked_fraction: float = Field(
        0.4,
        gt=0,
        le=1,
        description="chain: share of each mixed-phase batch that is worked out; the rest states only the answer.",
    )
    check_rates: tuple[Probability, ...] = Field(
        (0.0, 0.25, 0.5, 0.75, 1.0),
        min_length=1,
        description="checked_chain: each response checks its lines at one of these rates (drawn per response).",
    )
    multiply_noise: Probability = Field(
        0.45, description="checked_chain, mixed phase: chance that the teacher gets a multiplication wrong."
    )
    other_noise: Probability = Field(
        0.01, description="checked_chain, mixed phase: chance that it gets an addition or subtraction wrong."
    )
    loop_share: Probability = Field(
        0.09, description="checked_chain, mixed phase: share of responses that end in a loop of one check line."
    )
    loop_continue: Probability = Field(
        0.92, description="checked_chain: chance that a loop repeats its check once more (from 3 repetitions on)."
    )
    batch_size: PositiveInt = Field(64, description="Responses per step.")
    pool_size: PositiveInt = Field(20_000, description="Distinct training problems, cycled through in order.")
    lr: float = Field(3e-3, gt=0, description="AdamW learning rate, constant after the warm-up until the mixed phase.")
    warmup_fraction: float = Field(0.1, gt=0, lt=1, description="Share of the worked phase spent warming up linearly.")
    eval_problems: PositiveInt = Field(
        512, description="Validation problems whose G samples measure the task's properties (and greedy accuracy)."
    )
    group_size: PositiveInt = Field(8, description="G, samples per problem for the measured properties.")
    max_new_tokens: PositiveInt = Field(
        96, description="Budget of the measured properties (the RL default's; the chain task's is 32)."
    )
    seed: int = Field(0, description="Seed of initialisation and data.")
    task: TaskConfig = dataclasses.field(default_factory=TaskConfig)


def model_config(recipe: BaseModelRecipe, tokenizer: PreTrainedTokenizerBase, max_length: int) -> LlamaConfig:
    """A standard Llama architecture config sized by the recipe, tied embeddings, no dropout.

    Llama rather than Qwen2 because ``AutoTokenizer`` loads the saved ``tokenizers`` pipeline as it
    is for Llama-type models, while for Qwen2-type models it substitutes a byte-level Qwen2
    tokenizer that does not match this word-level vocabulary.
    """
    return LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=recipe.hidden_size,
        intermediate_size=4 * recipe.hidden_size,
        num_hidden_layers=recipe.layers,
        num_attention_heads=recipe.heads,
        num_key_value_heads=recipe.heads,
        max_position_embeddings=max_length,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )


Rows = list[tuple[list[int], list[int]]]
"""(prompt ids, solution ids) pairs."""


def tokenize_rows(
    tokenizer: PreTrainedTokenizerBase, prompts: list[str], solutions: list[str], max_tokens: int | None = None
) -> Rows:
    """``<bos> prompt`` ids and ``solution <eos>`` ids of each pair (one batched tokenizer call each).

    A solution longer than ``max_tokens`` is cut there and gets no end token: the model learns that
    such a response goes on.
    """
    prompt_ids = tokenizer(prompts)["input_ids"]
    solution_ids = tokenizer(solutions, add_special_tokens=False)["input_ids"]
    return [
        (prompt, (solution + [tokenizer.eos_token_id])[:max_tokens])
        for prompt, solution in zip(prompt_ids, solution_ids, strict=True)
    ]


def take(rows: Rows, start: int, count: int) -> Rows:
    """``count`` rows from position ``start`` on, cycling through ``rows``."""
    return [rows[(start + i) % len(rows)] for i in range(count)]


class TwoPhaseData:
    """The SFT batch of each step: worked solutions only, then a fixed mix with answer-only responses.

    Worked rows come length-bucketed (see :func:`length_bucketed`); answer-only rows all have the
    same length and are taken in problem order.
    """

    def __init__(self, worked: Rows, answer_only: Rows, recipe: BaseModelRecipe) -> None:
        self.worked = length_bucketed(worked, recipe.batch_size, recipe.seed)
        self.answer_only = answer_only
        self.recipe = recipe
        self.worked_per_mixed_batch = round(recipe.batch_size * recipe.worked_fraction)

    def batch(self, step: int) -> Rows:
        size = self.recipe.batch_size
        if step < self.recipe.worked_steps:
            return take(self.worked, step * size, size)
        mixed_step = step - self.recipe.worked_steps
        answer_only_count = size - self.worked_per_mixed_batch
        return take(self.worked, step * size, self.worked_per_mixed_batch) + take(
            self.answer_only, mixed_step * answer_only_count, answer_only_count
        )


class TeacherData:
    """The SFT batch of each step for checked_chain: the teacher's responses to the next problems of the pool.

    Worked-phase responses are correct (checks, no slips, no loops); mixed-phase responses carry the
    recipe's slips and loops. Responses are drawn afresh for every step (seeded by step) and
    length-bucketed within windows of steps of the same phase.
    """

    WINDOW = 16

    def __init__(
        self,
        tokenizer: PreTrainedTokenizerBase,
        problems: list[Problem],
        recipe: BaseModelRecipe,
        task: CheckedChainTask,
    ) -> None:
        self.tokenizer, self.problems, self.recipe, self.task = tokenizer, problems, recipe, task
        self.habits = TeacherStyle(
            recipe.check_rates, recipe.multiply_noise, recipe.other_noise, recipe.loop_share, recipe.loop_continue
        )
        self.skill = TeacherStyle(recipe.check_rates)
        self.longest = recipe.max_new_tokens + 8  # loops beyond the budget are cut and keep going
        self._cached: tuple[int, dict[int, Rows]] | None = None

    def batch(self, step: int) -> Rows:
        window = step // self.WINDOW
        if self._cached is None or self._cached[0] != window:
            self._cached = (window, self._window(window))
        return self._cached[1][step]

    def _window(self, window: int) -> dict[int, Rows]:
        steps = range(window * self.WINDOW, (window + 1) * self.WINDOW)
        batches: dict[int, Rows] = {}
        for phase in (
            [s for s in steps if s < self.recipe.worked_steps],
            [s for s in steps if s >= self.recipe.worked_steps],
        ):
            rows = [row for step in phase for row in self._rows(step)]
            ordered = length_bucketed(rows, self.recipe.batch_size, self.recipe.seed + window)
            size = self.recipe.batch_size
            batches.update({step: ordered[i * size : (i + 1) * size] for i, step in enumerate(phase)})
        return batches

    def _rows(self, step: int) -> Rows:
        size = self.recipe.batch_size
        problems = [self.problems[(step * size + i) % len(self.problems)] for i in range(size)]
        style = self.skill if step < self.recipe.worked_steps else self.habits
        rng = random.Random(f"{self.recipe.seed}:teacher:{step}")
        texts = [teacher_response(p, style, self.task.modulus, rng) for p in problems]
        return tokenize_rows(self.tokenizer, [p.prompt for p in problems], texts, self.longest)


def learning_rate_factor(recipe: BaseModelRecipe, step: int) -> float:
    """Multiplier of ``recipe.lr`` at ``step``: linear warm-up, constant, then a linear decay towards 0 over the mixed phase."""
    warmup = max(1, round(recipe.warmup_fraction * recipe.worked_steps))
    if step < recipe.worked_steps:
        return min(1.0, (step + 1) / warmup)
    return 1.0 - (step - recipe.worked_steps) / recipe.mixed_steps


def length_bucketed(rows: Rows, batch_size: int, seed: int) -> Rows:
    """``rows`` reordered so that each consecutive batch holds solutions of similar length.

    Rows are sorted by length within windows of 16 batches and the batches then shuffled (seeded),
    which cuts the padding of a mixed-length batch roughly in half without ordering the data by
    difficulty.
    """
    window = 16 * batch_size
    ordered = [
        row
        for start in range(0, len(rows), window)
        for row in sorted(rows[start : start + window], key=lambda r: len(r[1]))
    ]
    batches = [ordered[start : start + batch_size] for start in range(0, len(ordered), batch_size)]
    random.Random(seed).shuffle(batches)
    return [row for batch in batches for row in batch]


def sft_batch(rows: Rows, pad_token_id: int) -> dict[str, torch.Tensor]:
    """Right-padded ``prompt solution`` rows with labels on the solution only: all (N, L)."""
    width = max(len(prompt) + len(solution) for prompt, solution in rows)
    input_ids = torch.full((len(rows), width), pad_token_id)
    labels = torch.full((len(rows), width), IGNORE_INDEX)
    attention = torch.zeros((len(rows), width), dtype=torch.long)
    for i, (prompt, solution) in enumerate(rows):
        length = len(prompt) + len(solution)
        input_ids[i, :length] = torch.tensor(prompt + solution)
        labels[i, len(prompt) : length] = torch.tensor(solution)
        attention[i, :length] = 1
    return {"input_ids": input_ids, "attention_mask": attention, "labels": labels}


def sft_data(
    recipe: BaseModelRecipe, tokenizer: PreTrainedTokenizerBase, task: BuiltinTask
) -> TwoPhaseData | TeacherData:
    """The recipe's teacher for ``task``, on a pool of training problems."""
    problems = task.problems("train", recipe.pool_size, seed=recipe.seed)
    if isinstance(task, CheckedChainTask):
        return TeacherData(tokenizer, problems, recipe, task)
    prompts = [p.prompt for p in problems]
    return TwoPhaseData(
        worked=tokenize_rows(tokenizer, prompts, [p.solution for p in problems]),
        answer_only=tokenize_rows(tokenizer, prompts, [answer_only(p.answer) for p in problems]),
        recipe=recipe,
    )


def build_base_model(recipe: BaseModelRecipe, out: Path) -> dict:
    """Train the base per ``recipe``, save it with its tokenizer to ``out``, and return the record written."""
    started = time.perf_counter()
    torch.manual_seed(recipe.seed)
    task = make_task(recipe.task)
    tokenizer = build_tokenizer(task.vocabulary())
    model = LlamaForCausalLM(model_config(recipe, tokenizer, max_length=512))
    data = sft_data(recipe, tokenizer, task)
    optimizer = torch.optim.AdamW(model.parameters(), lr=recipe.lr, weight_decay=0.0)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: learning_rate_factor(recipe, step))
    model.train()
    total_steps = recipe.worked_steps + recipe.mixed_steps
    progress = tqdm(range(total_steps), desc="base model SFT", unit="step")
    for step in progress:
        loss = model(**sft_batch(data.batch(step), tokenizer.pad_token_id)).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad(set_to_none=True)
        if step % 50 == 0:
            progress.set_postfix(loss=f"{loss.item():.3f}")
    train_seconds = time.perf_counter() - started

    validation = task.problems("validation", recipe.eval_problems, seed=recipe.seed)
    samples = sample_groups(
        model, tokenizer, validation, grade, recipe.group_size, recipe.max_new_tokens, seed=recipe.seed
    )
    record = {
        "recipe": dataclasses.asdict(recipe),
        "parameters": sum(p.numel() for p in model.parameters()),
        "final_sft_loss": loss.item(),
        "train_seconds": round(train_seconds, 1),
        "validation_accuracy_greedy": accuracy(model, tokenizer, validation, grade, recipe.max_new_tokens, greedy=True),
        "validation_accuracy_t1": samples.correct.float().mean().item(),
        "properties": task_properties(samples, DIFFICULTY[recipe.task.name]),
    }
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    (out / RECIPE_FILE).write_text(json.dumps(record, indent=2) + "\n")
    (out / ENVIRONMENT_FILE).write_text(json.dumps(environment(), indent=2) + "\n")
    return record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m algos.trainer.sft", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, type=Path, help="directory to write the model and tokenizer to")
    defaults = BaseModelRecipe()
    parser.add_argument("--task", default=defaults.task.name, help="built-in task: checked_chain or chain")
    parser.add_argument("--min-steps", type=int, default=None, help="fewest operations (the task's default)")
    parser.add_argument("--max-steps", type=int, default=None, help="most operations (the task's default)")
    for name in ("worked_steps", "mixed_steps", "hidden_size", "layers", "max_new_tokens", "seed"):
        parser.add_argument(f"--{name.replace('_', '-')}", type=int, default=getattr(defaults, name))
    for name in ("worked_fraction", "multiply_noise", "other_noise", "loop_share", "loop_continue", "lr"):
        parser.add_argument(f"--{name.replace('_', '-')}", type=float, default=getattr(defaults, name))
    args = parser.parse_args(argv)
    try:
        task = TaskConfig(
            name=args.task,
            **{key: value for key in ("min_steps", "max_steps") if (value := getattr(args, key)) is not None},
        )
        fields = {f.name for f in dataclasses.fields(BaseModelRecipe)} - {"task"}
        recipe = BaseModelRecipe(task=task, **{k: v for k, v in vars(args).items() if k in fields})
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, error['loc']))}: {error['msg']}" for error in exc.errors())
        print(f"error: {problems}", file=sys.stderr)
        return 2
    record = build_base_model(recipe, args.out)
    print(json.dumps({k: v for k, v in record.items() if k != "recipe"}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
