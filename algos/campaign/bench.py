"""Step time of the harness's GRPO beside TRL's ``GRPOTrainer`` at equal work, in one process.

Both start from the same checkpoint and train on the same P prompts every step (the first P problems
of the task's training split), with G samples each, the same generation budget and sampling (T,
top-p, no top-k), one update per rollout, no KL term (so no reference model), the same optimiser
settings (by default a rate too small to move the policy: see ``Workload``), the same loss (GRPO's
per-sequence token mean with group-std-scaled advantages), the same arithmetic (``--precision``:
float32, or float32 weights under bf16 autocast on both sides) and no activation recomputation, on
the same device (``--device``). TRL's own default recomputes activations (gradient checkpointing);
``--trl-option gradient_checkpointing=true`` times it, and any other ``GRPOConfig`` field can be set
the same way.
The harness runs once per decoding loop named by ``--engines`` (``rollout.engine``: eager, static), a side
each; TRL runs its default generation, and with ``--trl-static-cache`` also transformers' static KV cache.
``--micro-batch`` splits both sides' one optimiser step into passes of that many rows.
Each side runs ``warmup + repeats`` steps and the timed steps are the last ``repeats``; a step is
everything from sampling to the optimiser step. Reported per side: median step time with its spread, the
first (untimed) step, generation tokens/s, training tokens/s and mean completion length; then each side's
step-time ratio to TRL's, each decoding loop's tokens/s over the eager loop's, TRL's settings and the peak
resident memory of the process. A side that fails is reported with its error beside the others, and the
report is written after every side. Each side's peak memory (allocated on
CUDA, resident on the CPU) is measured over its own run, on CUDA above what was allocated when it started
(the earlier sides' garbage is collected first). The update's achieved FLOP/s counts the
model FLOPs of a plain forward and backward pass over every row, 6 x (matrix-multiplied parameters)
x (prompt + completion tokens) per step (attention's own products not counted), over the step time
less sampling; it is set beside the rate this device measures for a large matrix product in the same
precision (:func:`measured_matmul_tflops`). The comparison is declared void when the mean completion
lengths differ by more than ``--length-tolerance`` (equal work means equally long completions).

``--scaling DIR`` times the harness alone as G doubles (4..32) and as the generation budget doubles
(20..160), and writes ``scaling.json`` and ``scaling.png`` there: step time should grow at most
linearly with G, and with the tokens actually generated (a budget only costs what is sampled).

``--model tiny-qwen2`` builds the reference setting: a randomly initialised Qwen2-architecture model
of about 0.6 M parameters over the built-in tokenizer; ``--model qwen2-0.5b`` builds the shapes of
Qwen2.5-0.5B (24 layers, width 896, 151,936-token vocabulary, 0.49 B parameters) with random weights,
for GPUs (:data:`RANDOM_MODELS`). TRL is optional (``pip install -e ".[bench]"``); without it only the
harness is timed.

Command line::

    python -m algos.campaign.bench --model results/base_model [--prompts 16 --group 8 --max-new-tokens 96 --repeats 6]
    python -m algos.campaign.bench --model qwen2-0.5b --device cuda --precision bf16 --engines eager static \
        --prompts 64 --group 8 --max-new-tokens 256 --micro-batch 64 --json bench.json
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import functools
import gc
import json
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import torch

from algos.config.presets import load_config
from algos.engine.memory import held_memory_mb, peak_memory_mb, reset_peak_memory
from algos.engine.static_decoding import ENGINES
from algos.trainer.run_files import read_metrics
from algos.trainer.train import train
from eval.tasks.config import TaskConfig
from eval.tasks.records import Problem
from eval.tasks.sources import VERIFIERS, make_task

RANDOM_MODELS = {
    "tiny-qwen2": {
        "hidden_size": 112,
        "intermediate_size": 320,
        "num_hidden_layers": 4,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
    },
    # Qwen2.5-0.5B's shapes. Its vocabulary is wider than the built-in tokenizer's: the random model
    # samples ids the tokenizer does not know (decoded as nothing), so no response ends early and
    # every one is as long as the budget on both sides.
    "qwen2-0.5b": {
        "hidden_size": 896,
        "intermediate_size": 4864,
        "num_hidden_layers": 24,
        "num_attention_heads": 14,
        "num_key_value_heads": 2,
        "vocab_size": 151936,
        "rope_theta": 1_000_000.0,
    },
}
"""Randomly initialised Qwen2 models ``--model`` can name: their shapes (config fields)."""

PRECISIONS = {"fp32": "no", "bf16": "bf16"}
"""``--precision`` -> the harness's ``run.mixed_precision`` (TRL's ``bf16`` flag likewise)."""


@dataclass(frozen=True)
class Workload:
    """What both sides do per step. ``prompts`` x ``group`` completions of up to ``max_new_tokens``.

    ``engine``: the harness's decoding loop (``rollout.engine``). ``micro_batch``: rows per forward/backward pass
    on both sides (gradient accumulation over the one optimiser step); None runs the whole batch at once.

    The default learning rate is too small to move the policy measurably: every update is computed in
    full, but both sides keep sampling from the model they started from. At a real rate each side's
    policy follows its own samples, and on a pretrained model the completion lengths (so the work)
    drift apart within a few steps.
    """

    model: str
    prompts: int = 16
    group: int = 8
    max_new_tokens: int = 96
    temperature: float = 1.0
    top_p: float = 1.0
    warmup: int = 1
    repeats: int = 6
    seed: int = 0
    task: str = "checked_chain"
    learning_rate: float = 1e-9
    device: str = "cpu"
    precision: str = "fp32"
    trl_options: tuple[tuple[str, object], ...] = ()
    engine: str = "auto"
    micro_batch: int | None = None

    @property
    def steps(self) -> int:
        return self.warmup + self.repeats


@dataclass(frozen=True)
class SideResult:
    """One side's timed steps: seconds, generation seconds and mean completion length of each.

    completions: completions per step (P x G). peak_memory_mb: the side's peak over its whole run
    (allocated on CUDA, resident on the CPU); None where not measured. first_step_seconds: the first untimed
    step, which pays what is paid once (a CUDA graph's capture, kernels' first choices); None without one.
    """

    name: str
    step_seconds: list[float]
    generation_seconds: list[float]
    lengths: list[float]
    completions: int
    peak_memory_mb: float | None = None
    first_step_seconds: float | None = None

    @property
    def median_step(self) -> float:
        return statistics.median(self.step_seconds)

    @property
    def mean_completion_length(self) -> float:
        return statistics.mean(self.lengths)

    def summary(self) -> dict[str, float]:
        tokens, steps = sum(self.lengths) * self.completions, sum(self.step_seconds)
        generation = sum(self.generation_seconds)
        summary = {
            "median_step_s": round(self.median_step, 4),
            "min_step_s": round(min(self.step_seconds), 4),
            "max_step_s": round(max(self.step_seconds), 4),
            "generation_tokens_per_s": round(tokens / generation, 1) if generation else float("nan"),
            "training_tokens_per_s": round(tokens / (steps - generation), 1) if steps > generation else float("nan"),
            "mean_completion_length": round(self.mean_completion_length, 2),
        }
        if self.peak_memory_mb is not None:
            summary["peak_memory_mb"] = round(self.peak_memory_mb, 1)
        if self.first_step_seconds is not None:
            summary["first_step_s"] = round(self.first_step_seconds, 4)
        return summary

    def update_tflops(self, flops_per_completion_token: float, prompt_tokens: int) -> float:
        """Achieved model TFLOP/s of everything but sampling: the steps' model FLOPs over their time less sampling.

        flops_per_completion_token: 6 x matrix-multiplied parameters; prompt_tokens: real prompt tokens per step
        (over all P x G rows), each costing the same.
        """
        tokens = sum(length * self.completions + prompt_tokens for length in self.lengths)
        seconds = sum(self.step_seconds) - sum(self.generation_seconds)
        return flops_per_completion_token * tokens / seconds / 1e12


def add_random_model_arguments(parser: argparse.ArgumentParser, device: str = "cuda") -> None:
    """``--model`` (a random Qwen2 of :data:`RANDOM_MODELS`), ``--device`` and ``--precision``, as the profiles take them."""
    parser.add_argument("--model", choices=sorted(RANDOM_MODELS), default="qwen2-0.5b")
    parser.add_argument("--device", choices=("cpu", "cuda"), default=device)
    parser.add_argument("--precision", choices=sorted(PRECISIONS), default="bf16")


def build_random_qwen2(out: Path, name: str = "tiny-qwen2", seed: int = 0) -> Path:
    """A randomly initialised Qwen2 model of :data:`RANDOM_MODELS` ``name`` with the built-in tokenizer, saved to
    ``out`` in float32."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from eval.tasks.tokenizer import build_tokenizer

    tokenizer = build_tokenizer(make_task(TaskConfig()).vocabulary())
    shapes = {"vocab_size": len(tokenizer), **RANDOM_MODELS[name]}
    config = Qwen2Config(
        **shapes,
        max_position_embeddings=4096,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(seed)
    Qwen2ForCausalLM(config).save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


@functools.cache  # the report is rewritten after every side
def matmul_parameters(model: str) -> int:
    """Parameters of ``model`` that multiply activations: all but an untied input embedding (a lookup)."""
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.from_pretrained(model)
    with torch.device("meta"):
        built = AutoModelForCausalLM.from_config(config)
    total = sum(parameter.numel() for parameter in built.parameters())
    tied = built.get_input_embeddings().weight is built.get_output_embeddings().weight
    return total if tied else total - built.get_input_embeddings().weight.numel()


def measured_matmul_tflops(device: str, precision: str, size: int, repeats: int = 10) -> float:
    """This device's rate for a (size x size) @ (size x size) product in ``precision``, TFLOP/s (median of ``repeats``
    after three untimed ones), the ceiling the update's achieved rate is set beside."""
    dtype = torch.bfloat16 if precision == "bf16" else torch.float32
    generator = torch.Generator(device).manual_seed(0)
    a, b = (torch.randn(size, size, device=device, dtype=dtype, generator=generator) for _ in range(2))
    return 2 * size**3 / median_seconds(torch.device(device), lambda: torch.matmul(a, b), repeats, warmup=3) / 1e12


def median_seconds(device: torch.device, work: Callable[[], object], repeats: int, warmup: int = 1) -> float:
    """Median wall seconds of ``work()`` over ``repeats`` runs after ``warmup`` untimed ones, the device
    synchronised around each (CUDA runs its kernels after the call returns)."""
    seconds = []
    for index in range(warmup + repeats):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        started = time.perf_counter()
        work()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        if index >= warmup:
            seconds.append(time.perf_counter() - started)
    return statistics.median(seconds)


@functools.cache
def prompt_tokens(work: Workload) -> int:
    """Real prompt tokens of one step, over all P x G rows (each side encodes the same prompts)."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(work.model)
    lengths = [len(tokenizer(problem.prompt)["input_ids"]) for problem in training_problems(work)]
    return sum(lengths) * work.group


def harness_overrides(work: Workload) -> list[str]:
    """The harness's GRPO preset set to the shared workload (no evaluation beyond a minimal final one)."""
    return [
        f"model.name_or_path={work.model}",
        f"rollout.prompts_per_step={work.prompts}",
        f"rollout.group_size={work.group}",
        f"rollout.max_new_tokens={work.max_new_tokens}",
        f"rollout.temperature={work.temperature}",
        f"rollout.top_p={work.top_p}",
        "kl.coef=0",
        "policy_loss.aggregation=seq_mean_token_mean",
        "advantage.std_scaling=group",
        "optim.epochs=1",
        "optim.mini_batches=1",
        f"optim.lr={work.learning_rate}",
        "optim.lr_warmup_steps=0",
        "optim.max_grad_norm=1.0",
        f"run.steps={work.steps}",
        "run.eval_every=0",
        f"run.checkpoint_every={work.steps}",
        f"run.device={work.device}",
        f"run.mixed_precision={PRECISIONS[work.precision]}",
        "tracking.backend=none",
        f"seed={work.seed}",
        f"rollout.engine={work.engine}",
        *([f"optim.micro_batch_size={work.micro_batch}"] if work.micro_batch else []),
    ]


def training_problems(work: Workload) -> list[Problem]:
    """The P prompts both sides train on at every step: the first P problems of the task's training split.

    One fixed set rather than a pool, because each side draws from a pool in its own order, and with
    a few prompts per step which prompts were drawn decides the completion lengths, so the work.
    """
    return make_task(TaskConfig(name=work.task)).problems("train", work.prompts, seed=work.seed)


def trl_settings(work: Workload) -> dict[str, object]:
    """TRL's ``GRPOConfig`` fields for the workload (all but the output directory), ``work.trl_options`` last."""
    completions = work.prompts * work.group
    passes = completions // work.micro_batch if work.micro_batch else 1  # micro-batches of one optimiser step
    settings = {
        "per_device_train_batch_size": completions // passes,
        "gradient_accumulation_steps": passes,
        "num_generations": work.group,
        "steps_per_generation": passes,  # one generation of the whole batch per optimiser step
        "num_iterations": 1,
        "max_completion_length": work.max_new_tokens,
        "temperature": work.temperature,
        "top_p": work.top_p,
        "top_k": 0,
        "beta": 0.0,
        "loss_type": "grpo",
        "scale_rewards": "group",
        "learning_rate": work.learning_rate,
        "lr_scheduler_type": "constant",
        "max_grad_norm": 1.0,
        "bf16": work.precision == "bf16",  # autocast over float32 weights, as the harness's run.mixed_precision
        "gradient_checkpointing": False,  # the harness keeps its activations
        "max_steps": work.steps,
        "logging_steps": 1,
        "save_strategy": "no",
        "report_to": "none",
        "use_cpu": work.device == "cpu",
        "seed": work.seed,
        "disable_tqdm": True,
    }
    return settings | dict(work.trl_options)


def parse_trl_option(text: str) -> tuple[str, object]:
    """``KEY=VALUE`` -> (key, value), the value read as JSON (true, 0.5, "x") or else kept as text.

    With TRL installed, KEY must name a field of its ``GRPOConfig``.
    """
    key, equals, value = text.partition("=")
    if not equals or not key:
        raise argparse.ArgumentTypeError(f"'{text}' is not KEY=VALUE")
    try:
        from trl import GRPOConfig
    except ImportError:
        pass  # reported when TRL's side is skipped
    else:
        names = sorted(field.name for field in dataclasses.fields(GRPOConfig))
        if key not in names:
            near = ", ".join(difflib.get_close_matches(key, names, n=5)) or "none"
            raise argparse.ArgumentTypeError(f"TRL's GRPOConfig has no field '{key}' (nearest: {near})")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


def run_harness(work: Workload) -> SideResult:
    """``work.steps`` GRPO steps of :func:`algos.trainer.train.train`; the per-step timings and peak memory come
    from its metrics."""
    cfg = load_config("grpo", overrides=harness_overrides(work))
    held = held_memory_mb(torch.device(work.device))
    with tempfile.TemporaryDirectory(prefix="bench-harness-") as out:
        train(cfg, out, problems=training_problems(work), eval_problems={}, verifier=VERIFIERS[work.task])
        lines = [line for line in read_metrics(Path(out)) if line["step"] >= 1 and "perf/step_seconds" in line]
    timed = lines[work.warmup :]
    return SideResult(
        f"harness_{work.engine}",
        [line["perf/step_seconds"] for line in timed],
        [line["perf/gen_seconds"] for line in timed],
        [line["rollout/response_length_mean"] for line in timed],
        work.prompts * work.group,
        max(line["perf/peak_memory_mb"] for line in lines) - held,  # each step's peak, as the run measures it
        lines[0]["perf/step_seconds"] if work.warmup else None,
    )


def run_trl(work: Workload, name: str = "trl") -> SideResult:
    """``work.steps`` steps of TRL's ``GRPOTrainer`` on the same workload, timed by a trainer callback; ``name``
    names the side (its settings are ``work.trl_options``)."""
    from accelerate.state import AcceleratorState
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, PrinterCallback, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    tokenizer = AutoTokenizer.from_pretrained(work.model, padding_side="left")
    chat = tokenizer.chat_template is not None  # as the harness (model.chat_template=auto): then TRL gets turns
    dataset = Dataset.from_list(
        [
            {"prompt": [{"role": "user", "content": p.prompt}] if chat else p.prompt, "answer": p.answer}
            for p in training_problems(work)
        ]
    )
    verifier = VERIFIERS[work.task]

    def correctness(prompts, completions, answer, **_):
        texts = [completion[-1]["content"] if chat else completion for completion in completions]
        return [1.0 if verifier(text, reference) else 0.0 for text, reference in zip(texts, answer, strict=True)]

    class StepClock(TrainerCallback):
        def __init__(self):
            self.started, self.seconds, self.generation, self.lengths = 0.0, [], [], []

        def on_step_begin(self, args, state, control, **kwargs):
            self.started = time.perf_counter()
            self.generation.append(0.0)

        def on_step_end(self, args, state, control, **kwargs):
            self.seconds.append(time.perf_counter() - self.started)

        def on_log(self, args, state, control, logs=None, **kwargs):
            if logs and "completions/mean_length" in logs:
                self.lengths.append(logs["completions/mean_length"])

    clock = StepClock()
    device = torch.device(work.device)

    class TimedGRPOTrainer(GRPOTrainer):
        """TRL's trainer, unchanged, with its generation call timed."""

        def _generate_single_turn(self, *args, **kwargs):
            started = time.perf_counter()
            result = super()._generate_single_turn(*args, **kwargs)
            clock.generation[-1] += time.perf_counter() - started
            return result

    with tempfile.TemporaryDirectory(prefix="bench-trl-") as out:
        args = GRPOConfig(output_dir=out, **trl_settings(work))
        trainer = TimedGRPOTrainer(
            model=AutoModelForCausalLM.from_pretrained(work.model),
            reward_funcs=correctness,
            args=args,
            train_dataset=dataset,
            processing_class=tokenizer,
            callbacks=[clock],
        )
        trainer.remove_callback(PrinterCallback)  # the report is the output, not TRL's per-step log lines
        held = held_memory_mb(device)
        reset_peak_memory(device)
        try:
            trainer.train()
        finally:
            AcceleratorState._reset_state(reset_partial_state=True)  # TRL's settings must not outlive its run
    return SideResult(
        name,
        clock.seconds[work.warmup :],
        clock.generation[work.warmup :],
        clock.lengths[work.warmup :],
        work.prompts * work.group,
        peak_memory_mb(device) - held,
        clock.seconds[0] if work.warmup else None,
    )


def compare(sides: dict[str, SideResult], length_tolerance: float) -> dict:
    """Every side's summary; beside TRL's (the first side named ``trl``), each other side's step-time ratio; the
    harness's decoding speed-up of each engine over the eager one; and whether the work was equal (every
    side's mean completion length within ``length_tolerance`` of the first side's)."""
    report: dict = {"sides": {name: side.summary() for name, side in sides.items()}}
    first = next(iter(sides.values()))
    gap = max(
        abs(side.mean_completion_length - first.mean_completion_length) / first.mean_completion_length
        for side in sides.values()
    )
    report["completion_length_gap"] = round(gap, 3)
    report["comparable"] = gap <= length_tolerance
    if "trl" in sides:
        report["step_ratio_over_trl"] = {
            name: round(side.median_step / sides["trl"].median_step, 3) for name, side in sides.items() if name != "trl"
        }
    if "harness_eager" in sides:
        eager = report["sides"]["harness_eager"]["generation_tokens_per_s"]
        report["decode_speedup_over_eager"] = {
            name: round(report["sides"][name]["generation_tokens_per_s"] / eager, 2)
            for name in sides
            if name.startswith("harness_") and name != "harness_eager"
        }
    return report


def update_throughput(
    work: Workload, sides: dict[str, SideResult], matmul_size: int, ceiling: float
) -> dict[str, object]:
    """The device, its measured matrix-product rate ``ceiling`` (TFLOP/s, of a ``matmul_size`` product), the model's
    size, and each side's achieved update TFLOP/s and its share of that rate."""
    parameters = matmul_parameters(work.model)
    device = torch.device(work.device)
    tokens = prompt_tokens(work)
    rates = {name: side.update_tflops(6 * parameters, tokens) for name, side in sides.items()}
    return {
        "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "matmul_parameters": parameters,
        "matmul_size": matmul_size,
        "matmul_tflops": round(ceiling, 4),
        "update_tflops": {name: round(rate, 4) for name, rate in rates.items()},
        "share_of_matmul": {name: round(rate / ceiling, 4) for name, rate in rates.items()},
    }


GROUP_SIZES = (4, 8, 16, 32)
BUDGETS = (20, 40, 80, 160)


def scaling(work: Workload, out: Path) -> dict[str, list[dict[str, float]]]:
    """Harness step time over ``GROUP_SIZES`` (budget fixed) and ``BUDGETS`` (G fixed); JSON and PNG in ``out``."""

    def point(variant: Workload) -> dict[str, float]:
        result = run_harness(variant)
        return {
            "group": variant.group,
            "max_new_tokens": variant.max_new_tokens,
            "median_step_s": round(result.median_step, 4),
            "mean_completion_length": round(result.mean_completion_length, 2),
        }

    curves = {
        "group": [point(replace(work, group=group)) for group in GROUP_SIZES],
        "budget": [point(replace(work, max_new_tokens=budget)) for budget in BUDGETS],
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / "scaling.json").write_text(json.dumps(curves, indent=2) + "\n")
    (out / "scaling.png").write_bytes(_scaling_figure(curves, work))
    return curves


def _scaling_figure(curves: dict[str, list[dict[str, float]]], work: Workload) -> bytes:
    import io

    from matplotlib.figure import Figure
    from matplotlib.ticker import NullFormatter

    figure = Figure(figsize=(10, 3.8), dpi=100, layout="tight")
    by_group, by_budget = figure.subplots(1, 2)
    groups = [p["group"] for p in curves["group"]]
    steps = [p["median_step_s"] for p in curves["group"]]
    by_group.plot(groups, steps, marker="o", label="measured")
    by_group.plot(groups, [steps[0] * g / groups[0] for g in groups], linestyle="--", label="linear from G = 4")
    by_group.set_xscale("log", base=2)
    by_group.set(xlabel="G (samples per prompt)", ylabel="median step time (s)")
    by_group.set_xticks(groups, [str(g) for g in groups])
    by_group.set_title(f"P = {work.prompts}, budget {work.max_new_tokens} tokens")
    budgets = [p["max_new_tokens"] for p in curves["budget"]]
    by_budget.plot(budgets, [p["median_step_s"] for p in curves["budget"]], marker="o", label="step time")
    by_budget.set_xscale("log", base=2)
    by_budget.set(xlabel="generation budget (tokens)", ylabel="median step time (s)")
    by_budget.set_xticks(budgets, [str(b) for b in budgets])
    by_budget.set_title(f"P = {work.prompts}, G = {work.group}")
    lengths = by_budget.twinx()
    lengths.plot(budgets, [p["mean_completion_length"] for p in curves["budget"]], color="gray", linestyle=":")
    lengths.set_ylabel("mean completion length (tokens, dotted)")
    for axes in (by_group, by_budget):
        axes.xaxis.set_minor_formatter(NullFormatter())
        axes.grid(alpha=0.3)
        axes.legend(fontsize="small", loc="upper left")
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m algos.campaign.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--model",
        default="results/base_model",
        help=f"model directory, hub id, or a random Qwen2 built here: {', '.join(RANDOM_MODELS)}",
    )
    parser.add_argument("--prompts", type=int, default=16, help="prompts per step (P)")
    parser.add_argument("--group", type=int, default=8, help="samples per prompt (G)")
    parser.add_argument("--max-new-tokens", type=int, default=40)
    parser.add_argument(
        "--task", default="checked_chain", choices=sorted(VERIFIERS), help="built-in task the prompts come from"
    )
    parser.add_argument("--temperature", type=float, default=1.0, help="sampling temperature of both sides")
    parser.add_argument("--repeats", type=int, default=6, help="timed steps per side (the median is reported)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed steps per side before the timed ones")
    parser.add_argument(
        "--learning-rate", type=float, default=Workload.learning_rate, help="both sides' rate (see Workload)"
    )
    parser.add_argument("--threads", type=int, default=2, help="torch intra-op threads")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="where both sides run")
    parser.add_argument(
        "--precision", choices=sorted(PRECISIONS), default="fp32", help="both sides: float32, or bf16 autocast"
    )
    parser.add_argument(
        "--matmul-size",
        type=int,
        default=None,
        help="side of the matrix product timed as the device's ceiling (default 8192 on CUDA, 1024 on the CPU)",
    )
    parser.add_argument("--length-tolerance", type=float, default=0.1, help="largest relative completion-length gap")
    parser.add_argument("--no-trl", action="store_true", help="time the harness only")
    parser.add_argument(
        "--engines",
        nargs="+",
        choices=ENGINES,
        default=["auto"],
        help="the harness's decoding loops to time, a side each (rollout.engine)",
    )
    parser.add_argument(
        "--micro-batch", type=int, help="rows per forward/backward pass on both sides (default: the whole batch)"
    )
    parser.add_argument(
        "--trl-static-cache",
        action="store_true",
        help="also time TRL with transformers' static KV cache in its generation (cache_implementation=static)",
    )
    parser.add_argument(
        "--trl-option",
        type=parse_trl_option,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a field of TRL's GRPOConfig over the equal-work settings (repeatable), e.g. bf16=true",
    )
    parser.add_argument("--json", type=Path, help="also write the report here")
    parser.add_argument("--scaling", type=Path, metavar="DIR", help="time the harness over G and budgets instead")
    args = parser.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda but no CUDA device is visible; use --device cpu")
    completions = args.prompts * args.group
    if args.micro_batch and (completions % args.micro_batch or args.micro_batch % args.group):
        parser.error(
            f"--micro-batch {args.micro_batch} must divide the batch of P x G = {completions} completions into "
            f"whole groups of G = {args.group}"
        )
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory(prefix="bench-model-") as scratch:
        model = str(build_random_qwen2(Path(scratch), args.model)) if args.model in RANDOM_MODELS else args.model
        work = Workload(
            model,
            args.prompts,
            args.group,
            args.max_new_tokens,
            args.temperature,
            warmup=args.warmup,
            repeats=args.repeats,
            task=args.task,
            learning_rate=args.learning_rate,
            device=args.device,
            precision=args.precision,
            trl_options=tuple(args.trl_option),
            micro_batch=args.micro_batch,
        )
        if args.scaling:
            print(json.dumps(scaling(replace(work, engine=args.engines[0]), args.scaling), indent=2))
            return 0
        matmul_size = args.matmul_size or (8192 if args.device == "cuda" else 1024)
        ceiling = measured_matmul_tflops(work.device, work.precision, matmul_size)
        runs: list[tuple[str, Callable[[], SideResult]]] = []
        if not args.no_trl:  # first: a bench stopped at its time limit keeps the reference every ratio needs
            runs.append(("trl", functools.partial(run_trl, work)))
            if args.trl_static_cache:
                static = replace(work, trl_options=(*work.trl_options, ("cache_implementation", "static")))
                runs.append(("trl_static_cache", functools.partial(run_trl, static, "trl_static_cache")))
        runs += [
            (f"harness_{engine}", functools.partial(run_harness, replace(work, engine=engine)))
            for engine in args.engines
        ]
        sides: dict[str, SideResult] = {}
        failures: dict[str, str] = {}
        trl_missing = False
        for name, run in runs:
            if trl_missing and name.startswith("trl"):
                continue
            gc.collect()  # an earlier side's trainer, unreachable in reference cycles, still holds its tensors
            if work.device == "cuda":
                torch.cuda.empty_cache()
            try:
                sides[name] = run()
            except ImportError as error:
                if not name.startswith("trl"):
                    raise
                trl_missing = True
                print(f"TRL is not installed ({error}); timing the harness only", file=sys.stderr)
                continue
            except Exception as error:  # a side that fails is reported beside the others' numbers
                failures[name] = f"{type(error).__name__}: {error}"[:2000]
                print(f"the {name} side failed: {failures[name]}", file=sys.stderr)
            # Written after every side, so that a bench stopped at its time limit leaves what it measured.
            report = bench_report(args, work, sides, failures, matmul_size, ceiling)
            if args.json:
                args.json.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
    if failures or not sides:
        return 1
    if not report["comparable"]:
        print("the comparison is void: completion lengths differ, so the work is not equal", file=sys.stderr)
        return 1
    return 0


def bench_report(
    args: argparse.Namespace,
    work: Workload,
    sides: dict[str, SideResult],
    failures: dict[str, str],
    matmul_size: int,
    ceiling: float,
) -> dict:
    """The bench's report of the sides measured so far (and those that failed, with their error)."""
    report = {
        "workload": {**asdict(work), "model": args.model, "threads": args.threads, "engines": args.engines},
        **(compare(sides, args.length_tolerance) if sides else {"sides": {}, "comparable": False}),
        "failed_sides": failures,
        "throughput": update_throughput(work, sides, matmul_size, ceiling),
        **({"trl_settings": trl_settings(work)} if "trl" in sides else {}),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }
    return report


if __name__ == "__main__":
    sys.exit(main())
