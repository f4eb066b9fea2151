"""Seconds a campaign row's rollout batch takes to sample with stream draws and with keyed draws.

The row's config as the campaign runs it (its budget from the workflow config) gives the batch: P training
problems × G samples at the row's temperature, top-p, budget of new tokens and decoding engine, from the
given model on one thread, as a workflow job runs. Each repeat samples the same problems both ways, the
first alternating from repeat to repeat so that drift in the machine's speed falls on both alike; the
command prints the median seconds a batch of each and their ratio (keyed over stream).

Command line: ``python -m algos.campaign.draw_speed --spec dapo_table1 --row dynamic_sampling --model results/base_model
[--repeats 12] [--out results/draw_speed.json]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import time
from pathlib import Path

import torch

from algos.campaign.ablations import campaign_budget, read_spec
from algos.engine.keyed_draws import draw_source
from algos.engine.models import chat_format, load_policy, load_tokenizer
from algos.engine.sampling import sample
from eval.tasks.sources import builtin_task


def measure(spec: str, row: str, model: str, repeats: int) -> dict:
    """Median seconds a batch of ``spec``'s ``row`` takes under each kind of draws, over ``repeats`` interleaved pairs."""
    torch.set_num_threads(1)
    cfg = read_spec(spec).config(row, campaign_budget())
    cfg = dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, name_or_path=model))
    policy, tokenizer = load_policy(cfg.model), load_tokenizer(cfg.model)
    chat = chat_format(cfg.model, tokenizer)
    task = builtin_task(cfg.task, cfg.run.eval_splits, cfg.run.eval_problems, cfg.run.final_eval_problems)
    seconds: dict[str, list[float]] = {"stream": [], "keyed": []}
    tokens: dict[str, list[int]] = {"stream": [], "keyed": []}
    for repeat in range(repeats):
        problems = task.sample_train(cfg.rollout.prompts_per_step, repeat)
        for draws in ("stream", "keyed") if repeat % 2 == 0 else ("keyed", "stream"):
            started = time.perf_counter()
            batch = sample(
                policy,
                tokenizer,
                problems,
                cfg.rollout.max_new_tokens,
                group_size=cfg.rollout.group_size,
                chat=chat,
                temperature=cfg.rollout.temperature,
                top_p=cfg.rollout.top_p,
                generator=draw_source(draws, repeat),
                engine=cfg.rollout.engine,
            )
            seconds[draws].append(time.perf_counter() - started)
            tokens[draws].append(int(batch.lengths.sum()))
    record = {
        "spec": spec,
        "row": row,
        "batch": f"{cfg.rollout.prompts_per_step} x {cfg.rollout.group_size}",
        "repeats": repeats,
        **{draws: {"median s": statistics.median(s), "tokens": sum(tokens[draws])} for draws, s in seconds.items()},
    }
    record["ratio"] = record["keyed"]["median s"] / record["stream"]["median s"]
    return record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m algos.campaign.draw_speed", description=__doc__.split("\n\n")[0])
    parser.add_argument("--spec", required=True, help="an ablation spec (python -m algos.campaign.ablations --list)")
    parser.add_argument("--row", required=True, help="one of the spec's rows")
    parser.add_argument("--model", required=True, help="the model the batches are sampled from (results/base_model)")
    parser.add_argument("--repeats", type=int, default=12, help="interleaved pairs of batches")
    parser.add_argument("--out", type=Path, help="a JSON file for the record")
    args = parser.parse_args(argv)
    record = measure(args.spec, args.row, args.model, args.repeats)
    print(
        f"{args.spec}/{args.row}, {record['batch']}: stream {record['stream']['median s']:.3f} s, "
        f"keyed {record['keyed']['median s']:.3f} s a batch (medians of {args.repeats}); keyed/stream {record['ratio']:.3f}"
    )
    if args.out:
        args.out.write_text(json.dumps(record, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
