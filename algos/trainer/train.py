"""Train a policy with any preset: the one driver every algorithm runs through.

Each step:
  1. sample P prompts x G responses from π_old (the current policy, or the one k updates old
     under ``rollout.policy_staleness``), grade them with the verifier, shape the reward;
  2. under dynamic sampling, keep informative groups and sample more until P (or the round cap);
  3. score the batch: log π_old, log π_ref (only with KL), values (only with a critic), advantages;
  4. E epochs x M mini-batch updates of the composed loss (``algos.core.loss``);
  5. log metrics (MLflow and ``metrics.jsonl``), evaluate held-out accuracy every few steps,
     checkpoint.
A critic is first fitted alone on rollouts of the initial policy: as an outcome reward model with
``critic.init=reward_model``, then to Monte-Carlo returns for ``critic.pretrain_steps`` (VAPO's value
pretraining); those phases' metrics go to ``critic_metrics.jsonl``, and the critic RL starts from is
measured at step 0. The actor's learning rate warms up linearly over ``optim.lr_warmup_steps``.
Everything random is seeded per (seed, step, purpose), so a run is deterministic on CPU and a killed
run resumed from its checkpoint ends exactly where an uninterrupted one does.

Under ``accelerate launch`` (DDP; FSDP2 on accelerators) the processes share each step's sampling,
scoring and update as :mod:`algos.engine.distributed` describes, so the run equals one process's on the same
global batch; only the main process writes files, tracks and checkpoints.

Python: ``train(load_config("dapo"), "runs/dapo")``; pass ``problems`` / ``eval_problems`` /
``verifier`` to train on your own data. Command line:
``python -m algos.trainer.train --preset dapo --out runs/dapo run.steps=80 seed=1``.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import logging
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from accelerate import Accelerator
from accelerate.utils import DistributedDataParallelKwargs
from tqdm import tqdm
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from algos.config.presets import ConfigError, config_to_dict, flatten, load_config
from algos.config.rules import warn_about, whole_mini_batch_mechanisms
from algos.config.schema import RLConfig
from algos.core.kl_control import adapted_coef, measured_kl, with_coef
from algos.engine.accuracy import accuracy
from algos.engine.adapters import AdaptersOff
from algos.engine.checkpoint import Checkpoint, latest_checkpoint, save_checkpoint
from algos.engine.distributed import Processes, full_optimizer_state, load_full_optimizer_state
from algos.engine.keyed_draws import draw_source
from algos.engine.memory import peak_memory_mb, reset_peak_memory
from algos.engine.models import (
    ChatFormat,
    ModelNotFoundError,
    chat_format,
    load_critic,
    load_policy,
    load_tokenizer,
)
from algos.engine.provenance import environment, run_tags
from algos.engine.seeding import derive_seed
from algos.engine.staleness import StalePolicy
from algos.trainer import run_files
from algos.trainer.critic import critic_probe, prepare_critic
from algos.trainer.critic_store import CriticStore
from algos.trainer.resume import ON_CONFIG_CHANGE, OnConfigChange, checkpoint_to_resume
from algos.trainer.rollout import collect_rollout
from algos.trainer.tracking import NullTracker, Tracker, make_tracker
from algos.trainer.update import Learner, update, warmup_factor
from eval.tasks.records import Problem, Verifier
from eval.tasks.sources import TaskData, builtin_task, problem_list_task


class NonFiniteTrainingError(RuntimeError):
    """A step skipped more of its updates for non-finite values than ``run.max_nonfinite_frac`` allows."""


class StopTraining(Exception):
    """Raised by an ``on_evaluation`` callback to end a run early (a pruned sweep trial)."""


@dataclass(frozen=True)
class TrainResult:
    """Final metrics (held-out accuracies of the final policy and of the base) and where the policy is saved."""

    metrics: dict[str, float]
    checkpoint: Path
    out: Path


def train(
    config: RLConfig,
    out: str | Path,
    problems: Sequence[Problem] | None = None,
    eval_problems: Mapping[str, Sequence[Problem]] | None = None,
    verifier: Verifier | None = None,
    tracker: Tracker | None = None,
    preset: str | None = None,
    on_evaluation: Callable[[int, Mapping[str, float]], None] | None = None,
    on_config_change: OnConfigChange = "fail",
    critic_store: Path | None = None,
) -> TrainResult:
    """Train ``config`` into ``out`` (resuming from its checkpoint if there is one).

    problems, eval_problems, verifier: your own training problems, held-out sets (split name ->
    problems) and verifier(response, answer) -> bool; default: the built-in task. tracker:
    overrides ``config.tracking`` (e.g. a NullTracker in tests). on_evaluation(step, metrics) is
    called after every held-out evaluation of a training step; raising :class:`StopTraining` there
    ends the run early (the tracker run is marked KILLED and the exception propagates).
    A checkpoint in ``out`` left by a different config (tracking aside) raises
    :class:`algos.trainer.resume.ConfigChangedError` naming the keys that differ; with
    ``on_config_change="restart"`` it is discarded with the run's files and the run starts afresh.
    critic_store: a folder where the critic's phases before RL are kept for every run that shares them
    (:mod:`algos.trainer.critic_store`; a run of the built-in task in one process): the same numbers, computed once.
    """
    # 1. Build the learner: task, processes, models and optimizers, resumed from a checkpoint in `out` if any.
    run = _build_run(
        config,
        Path(out),
        problems=problems,
        eval_problems=eval_problems,
        verifier=verifier,
        tracker=tracker,
        preset=preset,
        on_config_change=on_config_change,
        critic_store=critic_store,
    )

    # 2. A fresh run first fits its critic (if any), then evaluates the initial policy: step 0.
    if run.latest is None:
        _initial_evaluation(run)

    # 3. The loop: each step samples, updates, evaluates when due, logs and checkpoints.
    with _progress(run.cfg.run.steps, run.start, run.main) as progress:
        for step in range(run.start, run.cfg.run.steps + 1):
            metrics = _train_step(run, step)
            _record_step(run, step, metrics, on_evaluation)
            progress.update(1)
            progress.set_postfix(
                acc=f"{metrics['rollout/accuracy']:.2f}", len=f"{metrics['rollout/response_length_mean']:.0f}"
            )

    # 4. Finish: the final and base metrics written beside the checkpoint, the tracker closed.
    return _finish(run)


@dataclass
class _Run:
    """What one run holds between its steps: its config and task, the learner and the models around it,
    where it writes, and the counters a checkpoint keeps.

    stale_policy: serves π_old (the policy ``rollout.policy_staleness`` updates ago); its ``policy`` is the
    bare current policy that samples, scores and evaluates (no DDP wrapper: it takes no gradient). latest: the
    newest checkpoint (None before a fresh run's first). start: the first step to train. critic_store: where the
    critic's phases are shared with other runs (None: computed here).
    """

    cfg: RLConfig
    out: Path
    task: TaskData
    accelerator: Accelerator
    processes: Processes
    learner: Learner
    tokenizer: PreTrainedTokenizerBase
    chat: ChatFormat | None
    stale_policy: StalePolicy
    tracker: Tracker
    latest: Checkpoint | None
    start: int
    kl_coef: float
    train_seconds: float
    samples_generated: int
    critic_store: CriticStore | None = None

    @property
    def main(self) -> bool:
        return self.processes.is_main

    @property
    def policy(self) -> PreTrainedModel:
        return self.stale_policy.policy

    @property
    def critic(self) -> PreTrainedModel | None:
        """The bare critic, or None without one."""
        return self.accelerator.unwrap_model(self.learner.critic) if self.learner.critic is not None else None

    def held_out_accuracy(self, step: int) -> dict[str, float]:
        """The held-out accuracies of :func:`held_out_accuracy`, with the evaluation's wall time."""
        started = time.perf_counter()
        accuracies = held_out_accuracy(
            self.cfg,
            self.policy,
            tokenizer=self.tokenizer,
            task=self.task,
            chat=self.chat,
            step=step,
            processes=self.processes,
        )
        return {**accuracies, "perf/eval_seconds": time.perf_counter() - started}

    def log(self, step: int, metrics: dict[str, float], name: str = run_files.METRICS_FILE) -> None:
        """A step's metrics (a critic phase's, with ``name``) to the run's file (main process) and the tracker."""
        if self.main:
            run_files.append_metrics(self.out, step, metrics, name)
        self.tracker.log_metrics(metrics, step)

    def checkpoint(self, step: int) -> Checkpoint:
        """Save the run after ``step``. Every process takes part in gathering the state (FSDP holds shards); the
        main process writes it."""
        accelerator, learner = self.accelerator, self.learner
        state = {
            "step": step,
            "optimizer": full_optimizer_state(accelerator, learner.policy, learner.optimizer),
            "critic_optimizer": (
                full_optimizer_state(accelerator, learner.critic, learner.critic_optimizer)
                if learner.critic_optimizer
                else None
            ),
            "snapshots": list(self.stale_policy.snapshots),
            "train_seconds": self.train_seconds,
            "samples_generated": self.samples_generated,
            "kl_coef": self.kl_coef,
            "tracker_run_id": self.tracker.run_id,
        }
        weights = None
        if accelerator.is_fsdp2:
            critic_weights = accelerator.get_state_dict(learner.critic) if learner.critic is not None else None
            weights = (accelerator.get_state_dict(learner.policy), critic_weights)
        saved = (
            save_checkpoint(self.out, self.policy, self.tokenizer, self.critic, state, weights) if self.main else None
        )
        accelerator.wait_for_everyone()
        self.latest = saved or latest_checkpoint(self.out)
        return self.latest


def _build_run(
    cfg: RLConfig,
    out: Path,
    *,
    problems: Sequence[Problem] | None,
    eval_problems: Mapping[str, Sequence[Problem]] | None,
    verifier: Verifier | None,
    tracker: Tracker | None,
    preset: str | None,
    on_config_change: OnConfigChange,
    critic_store: Path | None = None,
) -> _Run:
    """The run's task, processes and learner, from the checkpoint in ``out`` if there is one; its records opened."""
    if out.exists() and not out.is_dir():
        raise ValueError(f"output directory {out} is a file; pass a directory (new or holding a run) as --out")
    task = _task_data(cfg, problems, eval_problems, verifier)
    warnings = warn_about(cfg, task.longest_response_tokens)
    accelerator = _accelerator(cfg)
    processes = Processes(accelerator)
    resumed = _checkpoint_to_resume(out, cfg, on_config_change, accelerator)
    state = resumed.state() if resumed else {}
    learner, tokenizer, chat = _load_learner(cfg, accelerator, resumed)
    stale_policy = StalePolicy(
        accelerator.unwrap_model(learner.policy), cfg.rollout.policy_staleness, state.get("snapshots")
    )
    if resumed:
        load_full_optimizer_state(accelerator, learner.policy, learner.optimizer, state["optimizer"])
        if learner.critic_optimizer is not None:
            load_full_optimizer_state(accelerator, learner.critic, learner.critic_optimizer, state["critic_optimizer"])
        if processes.is_main:
            run_files.truncate_metrics(out, state["step"])
    if processes.is_main:
        out.mkdir(parents=True, exist_ok=True)  # only once the models load, so a bad model path leaves nothing behind
    tags = {**run_tags(cfg, preset, accelerator.device), "processes": str(processes.count)}
    if not processes.is_main:
        tracker = NullTracker()
    elif tracker is None:
        tracker = make_tracker(cfg.tracking, cfg.tracking.run_name or out.name, tags, state.get("tracker_run_id"))
    if not resumed and processes.is_main:
        run_files.write_config(out, config_to_dict(cfg))
        run_files.write_json(
            out / run_files.RUN_FILE,
            {**tags, "warnings": warnings, "tracker_run_id": tracker.run_id, "environment": environment()},
        )
        tracker.log_params(flatten(config_to_dict(cfg)))
        tracker.log_artifact(out / run_files.CONFIG_FILE)
    return _Run(
        cfg=cfg,
        out=out,
        task=task,
        accelerator=accelerator,
        processes=processes,
        learner=learner,
        tokenizer=tokenizer,
        chat=chat,
        stale_policy=stale_policy,
        tracker=tracker,
        latest=resumed,
        start=state.get("step", 0) + 1,
        kl_coef=state.get("kl_coef", cfg.kl.coef),
        train_seconds=state.get("train_seconds", 0.0),
        samples_generated=state.get("samples_generated", 0),
        critic_store=CriticStore(critic_store) if critic_store and problems is None and processes.count == 1 else None,
    )


def _task_data(
    cfg: RLConfig,
    problems: Sequence[Problem] | None,
    eval_problems: Mapping[str, Sequence[Problem]] | None,
    verifier: Verifier | None,
) -> TaskData:
    if problems is None:
        return builtin_task(cfg.task, cfg.run.eval_splits, cfg.run.eval_problems, cfg.run.final_eval_problems)
    if verifier is None:
        raise ValueError("training on your own problems needs a verifier(response, answer) -> bool")
    return problem_list_task(problems, eval_problems or {}, verifier)


def deterministic_kernels() -> None:
    """Deterministic kernels only from here on: CUDA's atomics-based reductions (embedding and index
    backward passes) add in a varying order otherwise, so the same seed gives other bits."""
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # read when cuBLAS starts; before any CUDA work
    torch.use_deterministic_algorithms(True, warn_only=True)  # an op with no such kernel warns, naming itself


def _accelerator(cfg: RLConfig) -> Accelerator:
    if cfg.run.device == "cuda" and not torch.cuda.is_available():
        raise ValueError("run.device=cuda but no CUDA device is visible; set run.device=cpu or auto")
    use_cpu = cfg.run.device == "cpu" or not torch.cuda.is_available()
    if cfg.run.deterministic:
        deterministic_kernels()
    # Buffers (rotary tables) never change, and a pass may run the model once or twice: no broadcast per forward.
    ddp = DistributedDataParallelKwargs(broadcast_buffers=False)
    accelerator = Accelerator(cpu=use_cpu, mixed_precision=cfg.run.mixed_precision, kwargs_handlers=[ddp])
    single_pass = whole_mini_batch_mechanisms(cfg)
    if accelerator.num_processes > 1 and single_pass:
        raise ValueError(
            f"{', '.join(single_pass)} selects tokens over the whole mini-batch in one forward pass, which "
            f"{accelerator.num_processes} processes cannot split: run it in one process"
        )
    if accelerator.is_fsdp2 and cfg.optim.update_pass == "shared_prompts":
        raise ValueError(
            "optim.update_pass=shared_prompts runs one forward call or two depending on the responses, and FSDP needs every "
            "process in every call: set optim.update_pass=auto or joined_rows"
        )
    if accelerator.is_fsdp2 and cfg.rollout.policy_staleness:
        raise ValueError(
            "rollout.policy_staleness keeps whole copies of past weights, which FSDP shards: use DDP "
            "(experiments/accelerate/ddp.yaml) or set rollout.policy_staleness=0"
        )
    return accelerator


def _checkpoint_to_resume(
    out: Path, cfg: RLConfig, on_config_change: OnConfigChange, accelerator: Accelerator
) -> Checkpoint | None:
    """:func:`checkpoint_to_resume`, decided by the main process first (it may discard the run), then by the others.

    A config mismatch that fails the main process fails the others the same way, after it.
    """
    if accelerator.is_main_process:
        try:
            return checkpoint_to_resume(out, cfg, on_config_change)
        finally:
            accelerator.wait_for_everyone()
    accelerator.wait_for_everyone()
    return checkpoint_to_resume(out, cfg, on_config_change)


def _load_learner(
    cfg: RLConfig, accelerator: Accelerator, resumed: Checkpoint | None
) -> tuple[Learner, PreTrainedTokenizerBase, ChatFormat | None]:
    """The policy, the critic (with a value model) and the reference (with KL; with LoRA the policy with its
    adapters off), prepared for the processes; the tokenizer; and how prompts go through its chat template."""
    tokenizer = load_tokenizer(cfg.model)
    chat = chat_format(cfg.model, tokenizer)
    policy = load_policy(cfg.model, resumed.policy if resumed else None, derive_seed(cfg.seed, "lora"))
    trainable = [parameter for parameter in policy.parameters() if parameter.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=cfg.optim.lr, weight_decay=cfg.optim.weight_decay)
    learner = Learner(*accelerator.prepare(policy, optimizer))
    if cfg.critic.enabled:
        critic_source = dataclasses.replace(cfg.model, name_or_path=str(resumed.critic)) if resumed else cfg.model
        critic = load_critic(critic_source, derive_seed(cfg.seed, "critic-head"))
        critic_optimizer = torch.optim.AdamW(critic.parameters(), lr=cfg.critic.lr, weight_decay=cfg.optim.weight_decay)
        learner.critic, learner.critic_optimizer = accelerator.prepare(critic, critic_optimizer)
    if cfg.kl.coef > 0 and cfg.model.lora.enabled:
        learner.reference = AdaptersOff(accelerator.unwrap_model(learner.policy))
    elif cfg.kl.coef > 0:
        reference = load_policy(cfg.model).eval().requires_grad_(False)
        # Whole on every process, also under FSDP, where accelerate would leave a model it does not shard in place.
        learner.reference = accelerator.prepare_model(reference, evaluation_mode=True, device_placement=True)
    return learner, tokenizer, chat


def _initial_evaluation(run: _Run) -> None:
    """Step 0 of a fresh run: the critic's phases and its probe (with a critic), the initial policy's
    held-out evaluation, and the first checkpoint."""
    if run.main:
        run_files.clear(run.out, run_files.CRITIC_METRICS_FILE)  # left by an attempt killed before its first checkpoint
    initial = {}
    if run.learner.critic is not None:
        log_phase = functools.partial(run.log, name=run_files.CRITIC_METRICS_FILE)
        phases = functools.partial(
            prepare_critic,
            run.cfg,
            learner=run.learner,
            accelerator=run.accelerator,
            tokenizer=run.tokenizer,
            task=run.task,
            chat=run.chat,
            processes=run.processes,
        )
        if run.critic_store is None:
            phases(log_phase=log_phase)
        else:
            run.critic_store.prepare(
                run.cfg,
                compute=lambda log: phases(log_phase=log),
                critic=run.critic,
                optimizer=run.learner.critic_optimizer,
                policy=run.policy,
                log_phase=log_phase,
            )
        initial = critic_probe(
            run.cfg,
            policy=run.policy,
            critic=run.critic,
            tokenizer=run.tokenizer,
            task=run.task,
            chat=run.chat,
            processes=run.processes,
        )
    run.log(0, {**initial, **(run.held_out_accuracy(0) if run.cfg.run.evaluates(0) else {})})
    run.checkpoint(0)


def _train_step(run: _Run, step: int) -> dict[str, float]:
    """One RL step: the rollout from π_old, the update, the adaptive KL coefficient, timings, and the
    held-out evaluation when it is due. Returns the step's metrics."""
    cfg, learner, accelerator = run.cfg, run.learner, run.accelerator
    step_started = time.perf_counter()
    reset_peak_memory(accelerator.device)
    step_seed = derive_seed(cfg.seed, "step", step)
    for group in learner.optimizer.param_groups:
        group["lr"] = cfg.optim.lr * warmup_factor(step, cfg.optim.lr_warmup_steps)
    adaptive_kl = cfg.kl.controller == "adaptive"
    step_cfg = with_coef(cfg, run.kl_coef) if adaptive_kl else cfg
    batch = collect_rollout(
        step_cfg,
        step_seed,
        sampling_policy=run.stale_policy.sampling_policy(),
        tokenizer=run.tokenizer,
        task=run.task,
        chat=run.chat,
        reference=learner.reference,
        critic=run.critic,
        current_policy=run.policy,
        processes=run.processes,
    )
    update_started = time.perf_counter()
    run.samples_generated += int(batch.metrics["rollout/samples_generated"])
    metrics = {**batch.metrics, "rollout/samples_generated_total": float(run.samples_generated)}
    metrics.update(
        update(
            step_cfg,
            batch,
            learner,
            accelerator,
            step_seed=step_seed,
            after_optimizer_step=run.stale_policy.record_update,
            processes=run.processes,
        )
    )
    if adaptive_kl and batch.size:
        mask = batch.sequences.response_mask.float()
        kl_now = measured_kl(cfg, batch.old_logprobs, batch.ref_logprobs, mask)
        metrics.update({"actor/kl_coef": run.kl_coef, "rollout/kl_ref": kl_now})
        run.kl_coef = adapted_coef(run.kl_coef, kl_now, cfg.kl.target, cfg.kl.horizon, batch.size)
    update_seconds = time.perf_counter() - update_started
    trained_tokens = batch.sequences.tokens * cfg.optim.epochs
    run.train_seconds += time.perf_counter() - step_started
    metrics.update(
        {
            "perf/train_tokens_per_s": trained_tokens / max(update_seconds, 1e-9),
            "perf/step_seconds": time.perf_counter() - step_started,
            "perf/train_seconds_total": run.train_seconds,
            "perf/peak_memory_mb": run.processes.maximum(peak_memory_mb(accelerator.device)),
        }
    )
    if cfg.run.evaluates(step):
        metrics.update(run.held_out_accuracy(step))
    return metrics


def held_out_accuracy(
    cfg: RLConfig,
    policy: PreTrainedModel,
    *,
    tokenizer: PreTrainedTokenizerBase,
    task: TaskData,
    chat: ChatFormat | None,
    step: int,
    processes: Processes | None = None,
) -> dict[str, float]:
    """Held-out accuracy per evaluation split and mode (greedy, one sample at T = 1); the final sets at the last step.

    ``processes`` split the problems of a multi-process run; every process returns the same accuracies.
    """
    device = next(policy.parameters()).device
    metrics = {}
    for split, problems in task.held_out(final=step == cfg.run.steps).items():
        if not problems:
            continue
        common = {
            "max_new_tokens": cfg.rollout.max_new_tokens,
            "chat": chat,
            "processes": processes,
            "engine": cfg.rollout.engine,
        }
        if "greedy" in cfg.run.eval_modes:
            metrics[f"eval/{split}/accuracy_greedy"] = accuracy(
                policy, tokenizer, problems, task.verifier, greedy=True, **common
            )
        if "t1" in cfg.run.eval_modes:
            generator = draw_source(cfg.rollout.draws, derive_seed(cfg.seed, "eval", step, split), device)
            metrics[f"eval/{split}/accuracy_t1"] = accuracy(
                policy, tokenizer, problems, task.verifier, greedy=False, temperature=1.0, generator=generator, **common
            )
    return metrics


def _record_step(
    run: _Run, step: int, metrics: dict[str, float], on_evaluation: Callable[[int, Mapping[str, float]], None] | None
) -> None:
    """Log the step, stop a run whose updates went non-finite, checkpoint when due, call ``on_evaluation``."""
    cfg = run.cfg
    run.log(step, metrics)
    if metrics["actor/nonfinite_skipped_frac"] > cfg.run.max_nonfinite_frac:
        run.tracker.finish("FAILED")
        raise NonFiniteTrainingError(
            f"step {step} skipped {metrics['actor/nonfinite_skipped']:.0f} of its updates "
            f"({metrics['actor/nonfinite_skipped_frac']:.0%}) for a non-finite loss or gradient, more "
            f"than run.max_nonfinite_frac={cfg.run.max_nonfinite_frac}; its metrics are in "
            f"{run.out / run_files.METRICS_FILE}"
        )
    if step == cfg.run.steps or (cfg.run.checkpoint_every and step % cfg.run.checkpoint_every == 0):
        run.checkpoint(step)
    if on_evaluation is not None and any(key.startswith("eval/") for key in metrics):
        try:
            on_evaluation(step, metrics)
        except StopTraining:
            run.tracker.finish("KILLED")
            raise


def _finish(run: _Run) -> TrainResult:
    """The final metrics (the last evaluation beside the base's) written and tracked; the tracker closed."""
    final = _final_metrics(run.out, run.latest)
    if run.main:
        run_files.write_json(run.out / run_files.FINAL_FILE, final)
        for name in (run_files.FINAL_FILE, run_files.METRICS_FILE, run_files.CRITIC_METRICS_FILE):
            if (run.out / name).is_file():
                run.tracker.log_artifact(run.out / name)
    run.tracker.finish("FINISHED")
    run.accelerator.wait_for_everyone()
    return TrainResult(metrics=final, checkpoint=run.latest.policy, out=run.out)


def _final_metrics(out: Path, latest: Checkpoint) -> dict:
    """Final and base (step 0) evaluation, the run's mean throughput and its checkpoint path."""
    rows = run_files.read_metrics(out)
    base = {f"base/{k}": v for k, v in rows[0].items() if k.startswith("eval/")}
    final = {k: v for k, v in rows[-1].items() if k.startswith("eval/")}
    training = [row for row in rows if row["step"] > 0]
    summary = {
        "steps": rows[-1]["step"],
        "checkpoint": str(latest.policy),
        **base,
        **final,
    }
    if training:
        summary["perf/train_seconds_total"] = training[-1]["perf/train_seconds_total"]
        summary["perf/peak_memory_mb"] = max(row["perf/peak_memory_mb"] for row in training)
        for key in ("perf/gen_tokens_per_s", "perf/train_tokens_per_s"):
            summary[key] = sum(row[key] for row in training) / len(training)
    return summary


def _progress(total: int, start: int, shown: bool) -> tqdm:
    return tqdm(total=total, initial=start - 1, desc="RL steps", unit="step", disable=not shown)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m algos.trainer.train", description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", help="algorithm preset (python -m algos.config.presets --list)")
    parser.add_argument("--config", action="append", default=[], help="YAML file of overrides (repeatable)")
    parser.add_argument(
        "--out", required=True, type=Path, help="run directory (resumed if it holds a checkpoint of the same config)"
    )
    parser.add_argument(
        "--on-config-change",
        choices=ON_CONFIG_CHANGE,
        default="fail",
        help="when --out holds a run of a different config: fail naming the keys that differ (default), "
        "or restart: discard that run and train from scratch",
    )
    parser.add_argument("overrides", nargs="*", help="key=value overrides, e.g. run.steps=80 seed=1")
    args = parser.parse_args(argv)
    logging.basicConfig(format="%(levelname)s: %(message)s", level=logging.INFO)
    try:
        cfg = load_config(args.preset, args.config, args.overrides)
        result = train(cfg, args.out, preset=args.preset, on_config_change=args.on_config_change)
    except (ConfigError, ModelNotFoundError, ValueError, NonFiniteTrainingError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(result.metrics, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
