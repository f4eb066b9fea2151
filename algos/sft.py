"""Build the built-in base model: a tiny Llama-architecture LM trained from scratch on worked solutions of the task.

Supervised fine-tuning on ``prompt -> solution <eos>`` (loss on the solution only) for a fixed
small number of steps gives a model that has learned the format and most of the arithmetic but
still slips, so its held-out accuracy sampled at T = 1 sits well below its ceiling and RL has room.
The directory written holds the model and tokenizer (``save_pretrained``, loadable with
``AutoModelForCausalLM`` / ``AutoTokenizer``) and ``base_model.json`` with the recipe and its
measured accuracies.

Command line: ``python -m algos.sft --out results/base_model [--steps 800] [--seed 0]``.
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
from eval.accuracy import accuracy
from eval.records import Problem
from eval.synthetic import ChainTask, grade
from eval.tokenizer import build_tokenizer

RECIPE_FILE = "base_model.json"
IGNORE_INDEX = -100


@dataclass(frozen=True, config=_STRICT)
class BaseModelRecipe:
    """Architecture and supervised warm-up of the built-in base (defaults: ~0.26 M parameters, ~1.5 min on 2 cores)."""

    hidden_size: PositiveInt = Field(64, description="Width of the model.")
    layers: PositiveInt = Field(4, description="Transformer blocks.")
    heads: PositiveInt = Field(4, description="Attention heads (hidden_size must be divisible by it).")
    steps: PositiveInt = Field(800, description="SFT steps; fewer leaves a weaker base.")
    batch_size: PositiveInt = Field(64, description="Solutions per step, taken in order from the problem pool.")
    pool_size: PositiveInt = Field(20_000, description="Distinct training problems, cycled through in order.")
    lr: float = Field(3e-3, gt=0, description="Peak AdamW learning rate of the one-cycle schedule.")
    warmup_fraction: float = Field(0.1, gt=0, lt=1, description="Share of steps spent warming up.")
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


def tokenize_solutions(tokenizer: PreTrainedTokenizerBase, problems: list[Problem]) -> Rows:
    """``<bos> prompt`` ids and ``solution <eos>`` ids of each problem (one batched tokenizer call each)."""
    prompts = tokenizer([p.prompt for p in problems])["input_ids"]
    solutions = tokenizer([p.solution for p in problems], add_special_tokens=False)["input_ids"]
    return [(prompt, solution + [tokenizer.eos_token_id]) for prompt, solution in zip(prompts, solutions, strict=True)]


def length_bucketed(rows: Rows, batch_size: int, seed: int) -> Rows:
    """``rows`` reordered so that each consecutive batch holds solutions of similar length.

    Rows are sorted by length within windows of 16 batches and the batches then shuffled (seeded),
    which cuts the padding of a mixed-length batch roughly in half without ordering the data by
    difficulty.
    """
    window = 16 * batch_size
    ordered = [
        row for start in range(0, len(rows), window) for row in sorted(rows[start : start + window], key=lambda r: len(r[1]))
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
    solutions = tokenize_solutions(tokenizer, task.problems("train", recipe.pool_size, seed=recipe.seed))
    pool = length_bucketed(solutions, recipe.batch_size, recipe.seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=recipe.lr, weight_decay=0.0)
    schedule = torch.optim.lr_scheduler.OneCycleLR(
        optimizer, max_lr=recipe.lr, total_steps=recipe.steps, pct_start=recipe.warmup_fraction
    )
    model.train()
    progress = tqdm(range(recipe.steps), desc="base model SFT", unit="step")
    for step in progress:
        start = step * recipe.batch_size % len(pool)
        batch = sft_batch(pool[start : start + recipe.batch_size], tokenizer.pad_token_id)  # shorter where the pool wraps
        loss = model(**batch).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad(set_to_none=True)
        if step % 50 == 0:
            progress.set_postfix(loss=f"{loss.item():.3f}")
    train_seconds = time.perf_counter() - started

    validation = task.problems("validation", recipe.eval_problems, seed=recipe.seed)
    generator = torch.Generator().manual_seed(recipe.seed)
    record = {
        "recipe": dataclasses.asdict(recipe),
        "parameters": sum(p.numel() for p in model.parameters()),
        "final_sft_loss": loss.item(),
        "train_seconds": round(train_seconds, 1),
        "validation_accuracy_greedy": accuracy(model, tokenizer, validation, grade, recipe.max_new_tokens, greedy=True),
        "validation_accuracy_t1": accuracy(
            model, tokenizer, validation, grade, recipe.max_new_tokens, greedy=False, generator=generator
        ),
    }
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    (out / RECIPE_FILE).write_text(json.dumps(record, indent=2) + "\n")
    return record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m algos.sft", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, type=Path, help="directory to write the model and tokenizer to")
    parser.add_argument("--steps", type=int, default=BaseModelRecipe().steps, help="SFT steps")
    parser.add_argument("--hidden-size", type=int, default=BaseModelRecipe().hidden_size, help="model width")
    parser.add_argument("--layers", type=int, default=BaseModelRecipe().layers, help="transformer blocks")
    parser.add_argument("--seed", type=int, default=BaseModelRecipe().seed, help="seed of initialisation and data")
    args = parser.parse_args(argv)
    try:
        recipe = BaseModelRecipe(hidden_size=args.hidden_size, layers=args.layers, steps=args.steps, seed=args.seed)
    except ValidationError as exc:
        problems = "; ".join(f"{error['loc'][0]}: {error['msg']}" for error in exc.errors())
        print(f"error: {problems}", file=sys.stderr)
        return 2
    record = build_base_model(recipe, args.out)
    print(json.dumps({k: v for k, v in record.items() if k != "recipe"}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
