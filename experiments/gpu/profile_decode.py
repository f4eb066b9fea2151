"""Where the harness's decoding spends its time on one device: the bench's random Qwen2 under the run's autocast,
P x G rows of the bench's prompts, each decoding loop timed (median of ``--repeats`` after one untimed), the
static loop's parts timed alone (the CUDA graph's replay, the sampling between replays), and profiler tables of
one static call's kernels (by device time and by host time).

    python experiments/gpu/profile_decode.py --model qwen2-0.5b --device cuda --rows 64 512 --out DIR
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import torch
from accelerate import Accelerator

from algos.campaign.bench import (
    PRECISIONS,
    Workload,
    add_random_model_arguments,
    build_random_qwen2,
    median_seconds,
    training_problems,
)
from algos.config.schema import ModelConfig
from algos.engine.generation import generate, sample_tokens
from algos.engine.models import encode_prompts, end_token_ids, load_policy, load_tokenizer
from algos.engine.static_decoding import generate_static, last_decoder


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_random_model_arguments(parser)
    parser.add_argument("--rows", type=int, nargs="+", default=[64, 512], help="decoding batch sizes (P x G)")
    parser.add_argument("--group", type=int, default=8)
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", type=Path, required=True, help="folder for decode_profile.txt")
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    lines = []
    with tempfile.TemporaryDirectory(prefix="decode-model-") as scratch:
        model_dir = str(build_random_qwen2(Path(scratch), args.model))
        accelerator = Accelerator(cpu=args.device == "cpu", mixed_precision=PRECISIONS[args.precision])
        policy = accelerator.prepare(load_policy(ModelConfig(name_or_path=model_dir))).eval()
        tokenizer = load_tokenizer(ModelConfig(name_or_path=model_dir))
        end_ids = end_token_ids(tokenizer, policy)
        for rows in args.rows:
            work = Workload(model_dir, rows // args.group, args.group)
            prompts = [p.prompt for p in training_problems(work) for _ in range(args.group)]
            ids, mask = (t.to(device) for t in encode_prompts(tokenizer, prompts, chat=None))
            common = {"eos_token_id": end_ids, "pad_token_id": tokenizer.pad_token_id, "with_logprobs": True}

            def eager():
                return generate(
                    policy, ids, mask, args.max_new_tokens, generator=torch.Generator(device).manual_seed(0), **common
                )

            def static():
                return generate_static(
                    policy, ids, mask, args.max_new_tokens, generator=torch.Generator(device).manual_seed(0), **common
                )

            steps = args.max_new_tokens
            with torch.no_grad():
                static()
                decoder = last_decoder(policy)

                def replays():
                    decoder.cache.write_at.fill_(decoder.prompt_columns)  # within the cache's columns again
                    return [decoder.step(ids[:, -1]) for _ in range(steps)]

                logits = replays()[-1]
                generator = torch.Generator(device).manual_seed(0)
                parts = {
                    "eager loop": median_seconds(device, eager, args.repeats),
                    "static loop": median_seconds(device, static, args.repeats),
                    f"{steps} decode steps alone (graph replays on CUDA)": median_seconds(
                        device, replays, args.repeats
                    ),
                    f"{steps} samplings alone": median_seconds(
                        device, lambda: [sample_tokens(logits, 1.0, 1.0, generator) for _ in range(steps)], args.repeats
                    ),
                }
                lines.append(
                    f"{args.model}, {rows} rows, {ids.shape[1]} prompt columns, {steps} new tokens, "
                    f"{args.precision} autocast, capture {decoder.capture_seconds:.3f} s"
                )
                lines += [
                    f"{seconds:9.4f} s  {part}  ({rows * steps / seconds:.0f} tokens/s)"
                    for part, seconds in parts.items()
                ]
                activities = [torch.profiler.ProfilerActivity.CPU]
                if device.type == "cuda":
                    activities.append(torch.profiler.ProfilerActivity.CUDA)
                with torch.profiler.profile(activities=activities) as profile:
                    static()
                sort = "self_cuda_time_total" if device.type == "cuda" else "self_cpu_time_total"
                lines += [
                    "",
                    profile.key_averages().table(sort_by=sort, row_limit=20, max_name_column_width=70),
                    profile.key_averages().table(sort_by="self_cpu_time_total", row_limit=12, max_name_column_width=70),
                    "",
                ]
                print("\n".join(lines[-8:]), flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "decode_profile.txt").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
