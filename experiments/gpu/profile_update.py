"""Where the harness's GRPO step spends its time outside sampling, on one device: the bench's workload
(``algos.campaign.bench``), one rollout batch, then the update and its parts timed (median of
``--repeats`` after one untimed), and a profiler table of one whole update's kernels.

Parts timed: the rollout less its sampling (grading, advantages, metrics); the update in each layout of
its forward pass (``optim.update_pass``: each distinct prompt encoded once and every row continued from
its cache, or every prompt + response row run whole) and, over joined rows, with the whole (B, T, V)
logits or the output layer a chunk at a time (``optim.token_logprobs``); the forward and backward pass of
the log-probabilities and entropies alone, likewise; the model's forward and backward pass with no
vocabulary-wide operation after it; the optimizer step. On CUDA, the host synchronisations of one update
in the run's own settings are counted (``torch.cuda.set_sync_debug_mode``). The profiler table is of an
update in the run's own settings.

    python experiments/gpu/profile_update.py --model qwen2-0.5b --device cuda --precision bf16 --out DIR
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import torch
from accelerate import Accelerator

from algos.campaign.bench import (
    PRECISIONS,
    Workload,
    add_random_model_arguments,
    build_random_qwen2,
    harness_overrides,
    median_seconds,
    training_problems,
)
from algos.config.presets import load_config
from algos.engine.models import load_policy, load_tokenizer
from algos.engine.sequences import chunked_response_logprobs, response_logprobs
from algos.trainer.rollout import collect_rollout
from algos.trainer.update import Learner, update
from eval.tasks.sources import VERIFIERS, problem_list_task


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_random_model_arguments(parser)
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

    def logprobs_pass(share_prompts: bool, chunked: bool = False) -> None:
        with accelerator.autocast():
            if chunked:
                logprobs, entropy = chunked_response_logprobs(policy, sequences, 1.0)
            else:
                logprobs, entropy = response_logprobs(policy, sequences, 1.0, True, share_prompts)
            accelerator.backward(((logprobs + entropy) * mask).sum())
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

    def update_in(layout: str, token_logprobs: str = "whole_logits") -> Callable[[], object]:
        settings = [f"optim.update_pass={layout}", f"optim.token_logprobs={token_logprobs}"]
        laid_out = load_config("grpo", overrides=[*harness_overrides(work), *settings])
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
        "update (joined rows, whole logits)": median_seconds(device, update_in("joined_rows"), args.repeats),
        "update (joined rows, chunked log-probabilities)": median_seconds(
            device, update_in("joined_rows", "chunked"), args.repeats
        ),
        "log-probabilities and entropy, forward + backward (shared prompts)": median_seconds(
            device, lambda: logprobs_pass(True), args.repeats
        ),
        "log-probabilities and entropy, forward + backward (joined rows, whole logits)": median_seconds(
            device, lambda: logprobs_pass(False), args.repeats
        ),
        "log-probabilities and entropy, forward + backward (joined rows, chunked)": median_seconds(
            device, lambda: logprobs_pass(False, chunked=True), args.repeats
        ),
        "model forward + backward, no vocabulary-wide operation": median_seconds(device, model_pass, args.repeats),
        "optimizer step": median_seconds(device, optimizer_step, args.repeats),
    }
    synchronisations = count_synchronisations(device, lambda: update(cfg, batch, learner, accelerator, step_seed=1))
    activities = [torch.profiler.ProfilerActivity.CPU]
    if device.type == "cuda":
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    with torch.profiler.profile(activities=activities) as profile:
        update(cfg, batch, learner, accelerator, step_seed=1)
    sort = "self_cuda_time_total" if device.type == "cuda" else "self_cpu_time_total"
    heading = (
        f"{args.model} on {args.device} in {args.precision}: {batch.size} rows, {sequences.tokens} real tokens; "
        f"the run's update pass: {cfg.optim.update_pass}, its log-probabilities: {cfg.optim.token_logprobs}"
    )
    counted = "not counted (CPU)" if synchronisations is None else str(synchronisations)
    lines = [
        heading,
        "",
        *(f"{seconds:9.4f} s  {part}" for part, seconds in parts.items()),
        f"host synchronisations in one update (the run's settings): {counted}",
        "",
        profile.key_averages().table(sort_by=sort, row_limit=25, max_name_column_width=60),
        profile.key_averages().table(sort_by="self_cpu_time_total", row_limit=15, max_name_column_width=60),
    ]
    args.out.mkdir(parents=True, exist_ok=True)
    text = "\n".join(lines) + "\n"
    (args.out / "update_profile.txt").write_text(text)
    print(text)
    return 0


def count_synchronisations(device: torch.device, work: Callable[[], object]) -> int | None:
    """How many times ``work()`` makes the host wait for the device (CUDA's synchronisation debug mode warns at
    each); None off CUDA."""
    if device.type != "cuda":
        return None
    torch.cuda.synchronize(device)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            work()
        finally:
            torch.cuda.set_sync_debug_mode("default")
    return sum("synchroniz" in str(warning.message) for warning in caught)


if __name__ == "__main__":
    raise SystemExit(main())
