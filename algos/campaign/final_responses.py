"""A finished run's final evaluation regenerated: the tokens and verdict of each response, which the run itself
keeps only as an accuracy.

The run's own config (``config.yaml``) and final policy (``checkpoint/policy``) give the evaluation exactly as
the trainer ran it at its last step: the final set of the split, one sample per problem at T = 1, from the same
draws (stream or keyed, seeded by the run's seed, last step and split), in batches of the same size. The first
``problems`` of the set are the trainer's first batches, so their tokens are the ones the run was graded on: any
number of them under keyed draws, whole batches (or the whole set) under stream draws, whose draws depend on a
batch's size. Two rows' files of one seed say how much of their final evaluations they share
(:mod:`reports.coupling`).

Command line: ``python -m algos.campaign.final_responses --run results/runs/dapo_table1/clip_higher/seed15
--problems 256 --out responses.json``; the file holds ``{"run", "split", "draws", "accuracy", "responses":
[{"problem", "tokens", "correct"}, ...]}``.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import torch

from algos.config.presets import ConfigError, load_config
from algos.engine.accuracy import PROMPTS_PER_BATCH
from algos.engine.keyed_draws import draw_source
from algos.engine.models import chat_format, load_policy, load_tokenizer
from algos.engine.sampling import grade, sample_batches
from algos.engine.seeding import derive_seed
from algos.trainer import run_files
from eval.tasks.sources import builtin_task

POLICY = Path("checkpoint") / "policy"


def final_responses(run: Path, problems: int, split: str = "test") -> dict:
    """The first ``problems`` responses of ``run``'s final evaluation on ``split`` (see the module)."""
    for needed in (run_files.CONFIG_FILE, run_files.FINAL_FILE, POLICY):
        if not (run / needed).exists():
            raise FileNotFoundError(f"{run} is not a finished run: it has no {needed}")
    torch.set_num_threads(1)
    cfg = load_config(files=[run / run_files.CONFIG_FILE])
    if split not in cfg.run.eval_splits or "t1" not in cfg.run.eval_modes:
        raise ConfigError(
            f"{run}: its final evaluation sampled no '{split}' split at T = 1 "
            f"(run.eval_splits={list(cfg.run.eval_splits)}, run.eval_modes={list(cfg.run.eval_modes)})"
        )
    model = dataclasses.replace(cfg.model, name_or_path=str(run / POLICY))
    policy, tokenizer = load_policy(model), load_tokenizer(model)
    task = builtin_task(cfg.task, cfg.run.eval_splits, cfg.run.eval_problems, cfg.run.final_eval_problems)
    final_set = task.held_out(final=True)[split]
    if problems > len(final_set):
        raise ValueError(f"{run}: its final '{split}' set has {len(final_set)} problems, fewer than {problems}")
    if cfg.rollout.draws == "stream" and problems % PROMPTS_PER_BATCH and problems != len(final_set):
        raise ValueError(
            f"{run}: under stream draws a batch's draws depend on its size, so only whole batches of "
            f"{PROMPTS_PER_BATCH} (or the whole set of {len(final_set)}) regenerate what the run was graded on, "
            f"not {problems}"
        )
    chosen = final_set[:problems]
    seed = derive_seed(cfg.seed, "eval", cfg.run.steps, split)
    tokens: list[list[int]] = []
    texts: list[str] = []
    for part in sample_batches(
        policy,
        tokenizer,
        chosen,
        cfg.rollout.max_new_tokens,
        prompts_per_batch=PROMPTS_PER_BATCH,
        chat=chat_format(model, tokenizer),
        greedy=False,
        temperature=1.0,
        generator=draw_source(cfg.rollout.draws, seed, torch.device("cpu")),
        engine=cfg.rollout.engine,
    ):
        ids, mask = part.sequences.response_ids, part.sequences.response_mask
        tokens += [row[keep].tolist() for row, keep in zip(ids, mask.bool(), strict=True)]
        texts += part.texts
    verdicts = grade(task.verifier, texts, [p.answer for p in chosen]).correct.tolist()
    return {
        "run": str(run),
        "split": split,
        "draws": cfg.rollout.draws,
        "accuracy": sum(verdicts) / len(chosen),
        "responses": [
            {"problem": problem.id, "tokens": ids, "correct": correct}
            for problem, ids, correct in zip(chosen, tokens, verdicts, strict=True)
        ],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", type=Path, required=True, help="a finished run's directory")
    parser.add_argument("--problems", type=int, required=True, help="the first this many of its final set")
    parser.add_argument("--split", default="test", help="the evaluation split (default test)")
    parser.add_argument("--out", type=Path, required=True, help="the JSON file to write")
    args = parser.parse_args(argv)
    if args.problems < 1:
        parser.error(f"--problems must be at least 1, not {args.problems}")
    try:
        record = final_responses(args.run, args.problems, args.split)
    except (ConfigError, FileNotFoundError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    args.out.parent.mkdir(parents=True, exist_ok=True)
    run_files.write_json(args.out, record)
    print(f"{args.run}: {args.problems} final responses, accuracy {record['accuracy']:.3f} -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
