"""Where the harness's GRPO step spends its time outside sampling, on one device: the bench's workload
(``algos.campaign.bench``), one rollout batch, then the update and its parts timed (median of
``--repeats`` after one untimed), and a profiler table of one whole update's kernels.

Parts timed: the rollout less its sampling (grading, advantages, metrics); the update in each layout of
its forward pass (``optim.update_pass``: each distinct prompt encoded once and every row continued from
its cache, or every prompt + response row run whole); the forward and backward pass of the
log-probabilities alone in each layout; the model's forward and backward pass with no vocabulary-wide
operation after it; the optimizer step. The profiler table is of an update in the run's own layout.

    python experiments/gpu/profile_update.py --model qwen2-0.5b --device cuda --precision bf16 --out DIR
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch
from accelerate import Accelerator

from algos.campaign.bench import (
    PRECISIONS,
    RANDOM_MODELS,
    Workload,
    build_random_qwen2,
    harness_overrides,
    median_seconds,
    training_problems,
)
from algos.config.presets import load_config
from algos.engine.models import load_policy, load_tokenizer
from algos.engine.sequences import response_logprobs
from algos.trainer.rollout import collect_rollout
from algos.trainer.update import Learner, update
from eval.tasks.sources import VERIFIERS, problem_list_task


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=sorted(RANDOM_MODELS), default="qwen2-0.5b")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cuda")
    parser.add_argument("--precision", choices=sorted(PRECISIONS), default="bf16")
    parser.add_argument("--prompts", type=int, default=8)
    parser.add_argument("--group", type=int, default=8)
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, required=True, help="folder for update_profile.txt")
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    with tempfile.TemporaryDirectory(prefix="profile-model-") as scratch:
        model = str(build_random_qwen2(Path(scratch), args.model))
        work = Workload(
            model, args.prompts, args.group, args.max_new_tokens, device=args.device, precision=args.precision
        )
        cfg = load_config("grpo", overrides=harness_overrides(work))
        accelerator = Accelerator(cpu=args.device == "cpu", mixed_precision=PRECISIONS[args.precision])
        policy = load_policy(cfg.model)
        optimizer = torch.optim.AdamW(policy.parameters(), lr=cfg.optim.lr)
        policy, optimizer = accelerator.prepare(policy, optimizer)
        tokenizer = load_tokenizer(cfg.model)
    task = problem_list_task(training_problems(work), {}, VERIFIERS[work.task])
    learner = Learner(policy, optimizer)

    def rollout():
        return collect_rollout(cfg, 1, policy, tokenizer, task, chat=None)

    batch = rollout()
    sequences, mask = batch.sequences, batch.sequences.response_mask.float()

    def logprobs_pass(share_prompts: bool, with_entropy: bool = False) -> None:
        with accelerator.autocast():
            logprobs, _ = response_logprobs(policy, sequences, 1.0, with_entropy, share_prompts)
            accelerator.backward((logprobs * mask).sum())
        optimizer.zero_grad(set_to_none=True)

    def model_pass() -> None:
        with accelerator.autocast():
            logits = policy(**sequences.model_inputs()).logits
            accelerator.backward(logits.float().mean())
        optimizer.zero_grad(set_to_none=True)

    def optimizer_step() -> None:
        for parameter in policy.parameters():
            parameter.grad = torch.zeros_like(parameter)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    def update_in(layout: str) -> Callable[[], object]:
        laid_out = load_config("grpo", overrides=[*harness_overrides(work), f"optim.update_pass={layout}"])
        return lambda: update(laid_out, batch, learner, accelerator, step_seed=1)

    rollout_seconds = []
    for _ in range(args.repeats):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        started = time.perf_counter()
        sampled = rollout()
        rollout_seconds.append(time.perf_counter() - started - sampled.metrics["perf/gen_seconds"])
    parts = {
        "rollout less its sampling": statistics.median(rollout_seconds),
        "update (shared prompts)": median_seconds(device, update_in("shared_prompts"), args.repeats),
        "update (joined rows)": median_seconds(device, update_in("joined_rows"), args.repeats),
        "log-probabilities, forward + backward (shared prompts)": median_seconds(
            device, lambda: logprobs_pass(True), args.repeats
        ),
        "log-probabilities, forward + backward (joined rows)": median_seconds(
            device, lambda: logprobs_pass(False), args.repeats
        ),
        "log-probabilities and entropy, forward + backward (shared prompts)": median_seconds(
            device, lambda: logprobs_pass(True, with_entropy=True), args.repeats
        ),
        "model forward + backward, no vocabulary-wide operation": median_seconds(device, model_pass, args.repeats),
        "optimizer step": median_seconds(device, optimizer_step, args.repeats),
    }
    activities = [torch.profiler.ProfilerActivity.CPU]
    if device.type == "cuda":
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    with torch.profiler.profile(activities=activities) as profile:
        update(cfg, batch, learner, accelerator, step_seed=1)
    sort = "self_cuda_time_total" if device.type == "cuda" else "self_cpu_time_total"
    heading = (
        f"{args.model} on {args.device} in {args.precision}: {batch.size} rows, {sequences.tokens} real tokens; "
        f"the run's update pass: {cfg.optim.update_pass}"
    )
    lines = [
        heading,
        "",
        *(f"{seconds:9.4f} s  {part}" for part, seconds in parts.items()),
        "",
        profile.key_averages().table(sort_by=sort, row_limit=25, max_name_column_width=60),
        profile.key_averages().table(sort_by="self_cpu_time_total", row_limit=15, max_name_column_width=60),
    ]
    args.out.mkdir(parents=True, exist_ok=True)
    text = "\n".join(lines) + "\n"
    (args.out / "update_profile.txt").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
