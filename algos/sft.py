"""Build the built-in base model: a tiny Llama-architecture LM trained from scratch on solutions of the task.

Supervised fine-tuning on ``prompt -> solution <eos>`` (loss on the solution only) runs in two
phases. The *worked* phase trains on worked solutions only, long enough for the model to learn the
arithmetic. The *mixed* phase then replaces a share of each batch with answer-only responses
(``answer 5``), as if the teacher showed its work on only ``worked_fraction`` of the problems, while
the learning rate decays to zero. A model this small cannot carry a chain without writing it out, so
its answer-only responses are mostly guesses: sampled at T = 1 it works about ``worked_fraction`` of
the problems out and mostly gets those right; greedy decoding takes the more frequent answer-only
style. The base is therefore clearly imperfect in the way pretrained LLMs are before RL: the
reasoning is there but not reliably used. RL has to learn to work problems out, and, since working
out the longest chains overruns the generation budget, when not to.

The directory written holds the model and tokenizer (``save_pretrained``, loadable with
``AutoModelForCausalLM`` / ``AutoTokenizer``) and ``base_model.json`` with the recipe and its
measured accuracies.

Command line: ``python -m algos.sft --out results/base_model [--worked-steps 900] [--seed 0]``.
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

from algos.config import _STRICT, PositiveInt, TaskConfig
from eval.accuracy import accuracy, responses, share_correct
from eval.synthetic import ChainTask, answer_only, grade, is_worked
from eval.tokenizer import build_tokenizer

RECIPE_FILE = "base_model.json"
IGNORE_INDEX = -100


@dataclass(frozen=True, config=_STRICT)
class BaseModelRecipe:
    """Architecture and supervised warm-up of the built-in base (defaults: ~0.26 M parameters, ~2 min on 2 cores)."""

    hidden_size: PositiveInt = Field(64, description="Width of the model.")
    layers: PositiveInt = Field(4, description="Transformer blocks.")
    heads: PositiveInt = Field(4, description="Attention heads (hidden_size must be divisible by it).")
    worked_steps: PositiveInt = Field(
        900, description="Steps on worked solutions only; the arithmetic is learned after about 700."
    )
    mixed_steps: PositiveInt = Field(
        150, description="Steps on worked and answer-only solutions mixed; the rate decays linearly towards zero."
    )
    worked_fraction: float = Field(
        0.4,
        gt=0,
        le=1,
        description="Share of each mixed-phase batch that is worked out; the rest states only the answer.",
    )
    batch_size: PositiveInt = Field(64, description="Solutions per step, taken in order from the problem pool.")
    pool_size: PositiveInt = Field(20_000, description="Distinct training problems, cycled through in order.")
    lr: float = Field(3e-3, gt=0, description="AdamW learning rate, constant after the warm-up until the mixed phase.")
    warmup_fraction: float = Field(0.1, gt=0, lt=1, description="Share of the worked phase spent warming up linearly.")
    eval_problems: PositiveInt = Field(256, description="Validation problems for the recorded accuracies.")
    max_new_tokens: PositiveInt = Field(32, description="Budget of the recorded accuracies (the RL default's).")
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


def tokenize_rows(tokenizer: PreTrainedTokenizerBase, prompts: list[str], solutions: list[str]) -> Rows:
    """``<bos> prompt`` ids and ``solution <eos>`` ids of each pair (one batched tokenizer call each)."""
    prompt_ids = tokenizer(prompts)["input_ids"]
    solution_ids = tokenizer(solutions, add_special_tokens=False)["input_ids"]
    return [
        (prompt, solution + [tokenizer.eos_token_id]) for prompt, solution in zip(prompt_ids, solution_ids, strict=True)
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


def build_base_model(recipe: BaseModelRecipe, out: Path) -> dict:
    """Train the base per ``recipe``, save it with its tokenizer to ``out``, and return the record written."""
    started = time.perf_counter()
    torch.manual_seed(recipe.seed)
    task = ChainTask(recipe.task.min_steps, recipe.task.max_steps, recipe.task.modulus)
    tokenizer = build_tokenizer(task)
    longest = 1 + task.prompt_tokens() + task.solution_tokens(task.max_steps) + 1
    model = LlamaForCausalLM(model_config(recipe, tokenizer, max_length=max(256, 2 * longest)))
    problems = task.problems("train", recipe.pool_size, seed=recipe.seed)
    prompts = [p.prompt for p in problems]
    data = TwoPhaseData(
        worked=tokenize_rows(tokenizer, prompts, [p.solution for p in problems]),
        answer_only=tokenize_rows(tokenizer, prompts, [answer_only(p.answer) for p in problems]),
        recipe=recipe,
    )
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
    sampled = responses(
        model,
        tokenizer,
        validation,
        recipe.max_new_tokens,
        greedy=False,
        generator=torch.Generator().manual_seed(recipe.seed),
    )
    record = {
        "recipe": dataclasses.asdict(recipe),
        "parameters": sum(p.numel() for p in model.parameters()),
        "final_sft_loss": loss.item(),
        "train_seconds": round(train_seconds, 1),
        "validation_accuracy_greedy": accuracy(model, tokenizer, validation, grade, recipe.max_new_tokens, greedy=True),
        "validation_accuracy_t1": share_correct(sampled, validation, grade),
        "validation_worked_share_t1": sum(map(is_worked, sampled)) / len(sampled),
    }
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    (out / RECIPE_FILE).write_text(json.dumps(record, indent=2) + "\n")
    return record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m algos.sft", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, type=Path, help="directory to write the model and tokenizer to")
    defaults = BaseModelRecipe()
    parser.add_argument(
        "--worked-steps", type=int, default=defaults.worked_steps, help="steps on worked solutions only"
    )
    parser.add_argument(
        "--mixed-steps", type=int, default=defaults.mixed_steps, help="steps on the worked/answer-only mix"
    )
    parser.add_argument(
        "--worked-fraction", type=float, default=defaults.worked_fraction, help="worked share of a mixed-phase batch"
    )
    parser.add_argument("--hidden-size", type=int, default=defaults.hidden_size, help="model width")
    parser.add_argument("--layers", type=int, default=defaults.layers, help="transformer blocks")
    parser.add_argument("--seed", type=int, default=defaults.seed, help="seed of initialisation and data")
    args = parser.parse_args(argv)
    try:
        recipe = BaseModelRecipe(
            hidden_size=args.hidden_size,
            layers=args.layers,
            worked_steps=args.worked_steps,
            mixed_steps=args.mixed_steps,
            worked_fraction=args.worked_fraction,
            seed=args.seed,
        )
    except ValidationError as exc:
        problems = "; ".join(f"{error['loc'][0]}: {error['msg']}" for error in exc.errors())
        print(f"error: {problems}", file=sys.stderr)
        return 2
    record = build_base_model(recipe, args.out)
    print(json.dumps({k: v for k, v in record.items() if k != "recipe"}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
