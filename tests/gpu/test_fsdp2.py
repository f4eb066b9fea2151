"""The FSDP2 code path in one process (``experiments/accelerate/fsdp2.yaml``): the sharded run checkpoints whole
weights that load as a plain model, and a run killed after a checkpoint restarts to where the uninterrupted sharded
run ends.

The tiny run's rewards are nearly all 0, so its gradients are float noise that Adam scales to steps of the learning
rate: a sharded and a plain run part at the first rounding difference, which says nothing about the sharding (the
two-process runs on the CPU check that one equals one process)."""

import os
import signal
import subprocess
import sys

import pytest
from transformers import AutoModelForCausalLM

from algos.engine.checkpoint import latest_checkpoint
from algos.trainer import run_files
from tests.algos.trainer.test_train import PROJECT, await_checkpoint, comparable, tiny_overrides

pytestmark = pytest.mark.gpu

FSDP2_CONFIG = PROJECT / "experiments" / "accelerate" / "fsdp2.yaml"


def launched(out, overrides: list[str], log) -> subprocess.Popen:
    """The run under ``accelerate launch`` with FSDP2 in one process, its output to the file ``log``."""
    command = [
        *(sys.executable, "-m", "accelerate.commands.launch", "--config_file", str(FSDP2_CONFIG)),
        *("--num_processes", "1", "-m", "algos.trainer.train", "--preset", "grpo", "--out", str(out), *overrides),
    ]
    return subprocess.Popen(command, cwd=PROJECT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def test_a_killed_fsdp2_run_saves_whole_weights_and_restarts_to_the_uninterrupted_run(tiny_base, tmp_path):
    overrides = [*tiny_overrides(tiny_base, **{"run.steps": 12}), "run.device=cuda", "run.deterministic=true"]
    log = tmp_path / "fsdp2.log"
    uninterrupted = launched(tmp_path / "uninterrupted", overrides, log.open("w"))
    assert uninterrupted.wait(timeout=150) == 0, log.read_text()[-6000:]
    sharded = tmp_path / "fsdp2"
    first = launched(sharded, overrides, log.open("w"))
    await_checkpoint(sharded, first)
    if first.poll() is None:
        os.killpg(first.pid, signal.SIGKILL)  # the launcher and its worker
    first.wait()
    checkpoint = latest_checkpoint(sharded)
    assert checkpoint is not None and 2 <= checkpoint.state()["step"] < 12, log.read_text()[-6000:]

    saved = AutoModelForCausalLM.from_pretrained(checkpoint.policy)  # gathered: a whole model, loadable alone
    base = AutoModelForCausalLM.from_pretrained(tiny_base)
    assert {k: v.shape for k, v in saved.state_dict().items()} == {k: v.shape for k, v in base.state_dict().items()}
    assert any((a != b).any() for a, b in zip(saved.parameters(), base.parameters(), strict=True))  # it trained

    again = launched(sharded, overrides, log.open("w"))
    assert again.wait(timeout=150) == 0, log.read_text()[-6000:]
    assert [row["step"] for row in run_files.read_metrics(sharded)] == list(range(13))
    assert comparable(run_files.read_metrics(sharded)) == comparable(run_files.read_metrics(tmp_path / "uninterrupted"))
