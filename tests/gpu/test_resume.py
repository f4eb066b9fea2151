"""Runs on CUDA replay: with ``run.deterministic`` a LoRA run stopped and resumed, and a run killed and restarted,
end exactly where the uninterrupted run ends."""

import json
import signal
import subprocess
import sys

import pytest
import torch

from algos.config.presets import load_config
from algos.engine.checkpoint import latest_checkpoint
from algos.trainer import run_files
from algos.trainer.train import StopTraining, train
from tests.algos.engine.test_adapters import lora_overrides
from tests.algos.trainer.test_train import PROJECT, await_checkpoint, comparable, tiny_overrides

pytestmark = pytest.mark.gpu

ON_CUDA = ["run.device=cuda", "run.deterministic=true"]


def final_metrics(out) -> dict:
    final = json.loads((out / run_files.FINAL_FILE).read_text())
    return {key: value for key, value in final.items() if not key.startswith("perf/") and key != "checkpoint"}


def test_a_lora_run_on_cuda_stopped_and_resumed_replays_the_uninterrupted_run(tiny_base, tmp_path):
    cfg = load_config("grpo", overrides=[*lora_overrides(tiny_base), *ON_CUDA])

    def stop_at_two(step, metrics):
        if step == 2:
            raise StopTraining

    with pytest.raises(StopTraining):
        train(cfg, tmp_path / "resumed", on_evaluation=stop_at_two)
    assert latest_checkpoint(tmp_path / "resumed").state()["step"] == 2
    train(cfg, tmp_path / "resumed")
    train(cfg, tmp_path / "straight")
    rows = [comparable(run_files.read_metrics(tmp_path / name)) for name in ("resumed", "straight")]
    assert rows[0] == rows[1] and len(rows[0]) == 4
    assert final_metrics(tmp_path / "resumed") == final_metrics(tmp_path / "straight")
    run = json.loads((tmp_path / "straight" / run_files.RUN_FILE).read_text())
    assert run["hardware"] == torch.cuda.get_device_name()


def test_a_killed_cuda_run_restarts_to_the_uninterrupted_run(tiny_base, tmp_path):
    overrides = [*tiny_overrides(tiny_base, **{"run.steps": 6}), *ON_CUDA]

    def command(name: str) -> list[str]:
        return [sys.executable, "-m", "algos.trainer.train", "--preset", "dapo", "--out", str(tmp_path / name)]

    straight = subprocess.run(
        [*command("straight"), *overrides], cwd=PROJECT, capture_output=True, text=True, check=False
    )
    assert straight.returncode == 0, straight.stderr[-3000:]
    killed = subprocess.Popen([*command("killed"), *overrides], cwd=PROJECT, stderr=subprocess.DEVNULL)
    await_checkpoint(tmp_path / "killed", killed)
    killed.send_signal(signal.SIGKILL)
    killed.wait()
    assert 2 <= latest_checkpoint(tmp_path / "killed").state()["step"] < 6, "the run must be killed part-way"
    again = subprocess.run([*command("killed"), *overrides], cwd=PROJECT, capture_output=True, text=True, check=False)
    assert again.returncode == 0, again.stderr[-3000:]
    rows = [comparable(run_files.read_metrics(tmp_path / name)) for name in ("killed", "straight")]
    assert rows[0] == rows[1]
    assert final_metrics(tmp_path / "killed") == final_metrics(tmp_path / "straight")
