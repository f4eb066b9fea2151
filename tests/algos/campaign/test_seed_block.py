"""A block of seeds trained in one process: every seed equals its run trained alone, and one seed's failure
costs the block nothing else."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from algos.campaign import seed_block
from algos.campaign.ablations import Budget
from algos.trainer import run_files
from algos.trainer.run_files import replayable_metrics as comparable

ROOT = Path(__file__).resolve().parents[3]
SMALL = ("task.min_steps=1", "task.max_steps=3", "rollout.max_new_tokens=20", "run.eval_problems=8")
FEW_PROMPTS = ("rollout.prompts_per_step=4",)  # where every row of the spec agrees on it
STEP_SCALE = 0.034  # 2 of 60 steps; VAPO's value pretraining 2 of 50


@pytest.fixture(autouse=True)
def float32():
    torch.set_default_dtype(torch.float32)


@pytest.mark.slow
@pytest.mark.parametrize(
    "spec, row, overrides",
    [
        ("dr_grpo_bias", "grpo", SMALL + FEW_PROMPTS),
        ("dapo_table1", "dynamic_sampling", SMALL + FEW_PROMPTS),
        ("vapo_table1", "vapo", SMALL),
        ("gepo_staleness", "gepo_stale", SMALL + FEW_PROMPTS),
    ],
)
def test_every_seed_of_a_block_equals_its_run_trained_alone(spec, row, overrides, tiny_base, tmp_path):
    budget = Budget((*overrides, "tracking.backend=none"), STEP_SCALE)
    block = [sys.executable, "-m", "algos.campaign.seed_block", "--spec", spec, "--row", row, "--seeds", "0", "1"]
    done = subprocess.run(
        [*block, "--runs", str(tmp_path / "block"), "--model", str(tiny_base), *budget.options()],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    # the block's second seed, trained after whatever the first left in the process, against a process of its own
    trained, alone = tmp_path / "block" / spec / row / "seed1", tmp_path / "alone"
    done = subprocess.run(
        [
            *(sys.executable, "-m", "algos.trainer.train", "--out", str(alone)),
            *("--config", str(trained / seed_block.ROW_CONFIG_FILE)),
            *seed_block.seed_overrides(spec, row, 1, str(tiny_base)),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert comparable(trained) == comparable(alone) and len(comparable(trained)) == 3
    assert comparable(trained, run_files.CRITIC_METRICS_FILE) == comparable(alone, run_files.CRITIC_METRICS_FILE)
    weights = [load_file(run / "checkpoint" / "policy" / "model.safetensors") for run in (trained, alone)]
    assert all(torch.equal(weights[0][key], weights[1][key]) for key in weights[0])
    assert comparable(tmp_path / "block" / spec / row / "seed0") != comparable(
        tmp_path / "block" / spec / row / "seed1"
    )


def _kill_when(command: list[str], ready, timeout: float = 300) -> None:
    """Start ``command`` in its own process group and ``kill -9`` the group as soon as ``ready()`` holds."""
    process = subprocess.Popen(
        command, cwd=ROOT, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + timeout
    while not ready():
        assert process.poll() is None, f"finished before the kill point: {process.stderr.read().decode()[-3000:]}"
        assert time.monotonic() < deadline, "the kill point never came"
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()


@pytest.mark.slow
def test_a_block_killed_at_any_point_and_restarted_ends_as_if_never_stopped(tiny_base, tmp_path):
    budget = Budget((*SMALL, *FEW_PROMPTS, "run.checkpoint_every=2", "tracking.backend=none"), 0.067)  # 4 steps
    block = [sys.executable, "-m", "algos.campaign.seed_block", "--spec", "dr_grpo_bias", "--row", "grpo"]
    block += ["--seeds", "0", "1", "--model", str(tiny_base), *budget.options()]

    def steps_logged(seed: int) -> int:
        metrics = tmp_path / "killed" / "dr_grpo_bias" / "grpo" / f"seed{seed}" / run_files.METRICS_FILE
        return len(metrics.read_text().splitlines()) if metrics.is_file() else 0

    killed = [*block, "--runs", str(tmp_path / "killed")]
    _kill_when(killed, lambda: steps_logged(0) >= 4)  # seed 0 past its step-2 checkpoint, before its last
    assert steps_logged(1) == 0
    _kill_when(killed, lambda: steps_logged(1) >= 2)  # seed 0 finished, seed 1 before its first checkpoint
    for command in (killed, [*block, "--runs", str(tmp_path / "uninterrupted")]):
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-3000:]
    for seed in (0, 1):
        runs = [tmp_path / name / "dr_grpo_bias" / "grpo" / f"seed{seed}" for name in ("killed", "uninterrupted")]
        assert comparable(runs[0]) == comparable(runs[1]) and len(comparable(runs[0])) == 5
        weights = [load_file(run / "checkpoint" / "policy" / "model.safetensors") for run in runs]
        assert all(torch.equal(weights[0][key], weights[1][key]) for key in weights[0])


def test_a_failed_seed_is_named_and_the_others_still_train(tmp_path, monkeypatch, capsys):
    trained = []

    def fake_train(cfg, out, on_config_change, critic_store):
        if cfg.seed == 1:
            raise ValueError("the model cannot run this config")
        trained.append(cfg.seed)
        (out / run_files.FINAL_FILE).write_text(json.dumps({"seed": cfg.seed}))

    monkeypatch.setattr(seed_block, "train", fake_train)
    argv = ["--spec", "dr_grpo_bias", "--row", "grpo", "--seeds", "0", "1", "2", "--runs", str(tmp_path)]
    assert seed_block.main([*argv, "--set", "tracking.backend=none"]) == 2
    assert trained == [0, 2]
    assert "1 of 3 seeds of dr_grpo_bias / grpo failed (seed 1: ValueError: the model cannot run this config)" in (
        capsys.readouterr().err
    )
    runs = tmp_path / "dr_grpo_bias" / "grpo"
    assert [(runs / f"seed{seed}" / run_files.FINAL_FILE).is_file() for seed in range(3)] == [True, False, True]
    assert (runs / "seed1" / seed_block.ROW_CONFIG_FILE).read_text().startswith("# dr_grpo_bias / grpo: GRPO")


def test_a_bad_row_or_budget_fails_before_any_seed(tmp_path, capsys):
    assert seed_block.main(["--spec", "dr_grpo_bias", "--row", "nope", "--seeds", "0", "--runs", str(tmp_path)]) == 2
    assert "spec 'dr_grpo_bias' has no row 'nope'" in capsys.readouterr().err
    argv = ["--spec", "vapo_table1", "--row", "vapo", "--seeds", "0", "--runs", str(tmp_path)]
    assert seed_block.main([*argv, "--set", "critic.pretrain_steps=5"]) == 2
    assert "would erase a difference between its rows" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


@pytest.mark.slow
def test_the_throughput_bench_times_both_paths_and_finds_the_same_runs(tiny_base, tmp_path, capsys):
    from algos.campaign import throughput

    budget = ["--step-scale", str(STEP_SCALE), *(o for text in (*SMALL, *FEW_PROMPTS) for o in ("--set", text))]
    record = throughput.measure(["dr_grpo_bias/grpo"], 2, str(tiny_base), tmp_path, budget)
    row = record["rows"]["dr_grpo_bias/grpo"]
    assert row["same metrics"] and row["per run"] > 0 and row["per block"] > 0
    runs = record["per block"]["runs per core-hour"]
    assert runs == pytest.approx(2 / (row["per block"] / 3600), rel=0.01)
    assert record["ratio"] == pytest.approx(runs / record["per run"]["runs per core-hour"], rel=0.01)


def test_the_bench_reads_the_campaigns_budget(tmp_path):
    from algos.campaign.throughput import campaign_options

    config = tmp_path / "config.yaml"
    config.write_text("ablations: {step_scale: 0.5, eval_points: null, overrides: [run.eval_problems=64]}\n")
    assert campaign_options(config) == ["--step-scale", "0.5", "--set", "run.eval_problems=64"]
