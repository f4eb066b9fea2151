"""A sweep's confirmation: the trials it retrains with the preset on fresh seeds, and a confirmation killed in the
middle of a run that, resumed, gives the record of one never stopped."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from algos.campaign.sweep_confirmation import confirmation_plan, run_directory, train_configuration, write_plan
from algos.campaign.sweeps import read_sweep, run_slot
from algos.trainer import run_files
from reports.sweep_confirmation import confirmation_record, write_confirmation
from tests.algos.campaign.test_sweeps import write_sweep

CONFIRMATION = {
    "top": 1,
    "seeds": 2,
    "first_seed": 10,
    "margin": "2.5 points",
    "budget": ["run.eval_splits=[validation, test]"],
}
TRAIN = """
import sys
from pathlib import Path
from algos.campaign.sweep_confirmation import train_configuration
from algos.campaign.sweeps import read_sweep
spec = read_sweep("tiny", Path(sys.argv[1]))
train_configuration(spec, "preset", Path(sys.argv[2]), ("model.name_or_path=" + sys.argv[3],))
"""


def slot_record(trial, value, seeds=(0.5,)):
    return {"trial": trial, "state": "COMPLETE", "params": {"optim.lr": 1e-4 * (trial + 1)}, "seed_values": list(seeds),
            "value": value}  # fmt: skip


def test_the_plan_takes_the_best_completed_trials_then_the_preset(tmp_path):
    spec = read_sweep("tiny", write_sweep(tmp_path, trials=4, confirmation={**CONFIRMATION, "top": 2}))
    slots = tmp_path / "study" / "slots"
    slots.mkdir(parents=True)
    records = [
        slot_record(0, 0.6),
        slot_record(1, 0.8),
        slot_record(2, 0.8),
        {**slot_record(3, None), "state": "PRUNED"},
    ]
    for number, record in enumerate(records):
        (slots / f"slot{number}.json").write_text(json.dumps(record))
    plan = confirmation_plan(spec, tmp_path / "study")
    assert [entry["name"] for entry in plan["configurations"]] == ["trial1", "trial2", "preset"]  # ties: earlier first
    assert plan["configurations"][0]["params"] == {"optim.lr": 2e-4} and plan["configurations"][-1]["params"] == {}
    assert plan["seeds"] == [10, 11] and plan["compared"] == 2 and plan["metric"] == "eval/test/accuracy_t1"
    (slots / "slot3.json").unlink()
    with pytest.raises(ValueError, match="3 of its 4 trials have finished"):
        confirmation_plan(spec, tmp_path / "study")


@pytest.mark.slow
def test_a_confirmation_killed_during_a_run_resumes_to_the_same_record(tiny_base, tmp_path):
    spec = read_sweep("tiny", write_sweep(tmp_path, preset="grpo", trials=2, seeds=1, confirmation=CONFIRMATION))
    model = (f"model.name_or_path={tiny_base}",)
    searched = tmp_path / "searched"
    for slot in range(2):
        run_slot(spec, slot, searched, extra=model)
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    for out in (whole, killed):
        shutil.copytree(searched, out)
        write_plan(spec, out)
    trial = json.loads((whole / "confirmation" / "plan.json").read_text())["configurations"][0]["name"]
    for configuration in (trial, "preset"):
        assert train_configuration(spec, configuration, whole, model) == {}

    environment = {**os.environ, "OMP_NUM_THREADS": "1"}
    command = [sys.executable, "-c", TRAIN, str(tmp_path), str(killed), str(tiny_base)]
    job = subprocess.Popen(command, env=environment, start_new_session=True, stderr=subprocess.DEVNULL)
    first = run_directory(killed, "preset", 10)
    deadline = time.monotonic() + 300
    while not (first / "checkpoint").is_dir() and time.monotonic() < deadline:
        time.sleep(0.02)
    os.killpg(job.pid, signal.SIGKILL)
    job.wait()
    assert not (run_directory(killed, "preset", 11) / run_files.FINAL_FILE).exists()  # killed before the last seed
    for configuration in (trial, "preset"):
        assert train_configuration(spec, configuration, killed, model) == {}

    assert confirmation_record(spec, killed)[0] == confirmation_record(spec, whole)[0]
    for seed in (10, 11):
        resumed, uninterrupted = run_directory(killed, "preset", seed), run_directory(whole, "preset", seed)
        assert run_files.replayable_metrics(resumed) == run_files.replayable_metrics(uninterrupted)
    written = {path.name for path in write_confirmation(spec, killed)}
    assert written == {"confirmation.md", "confirmation.html", "confirmation.json", "best_params.yaml"}
    best = (killed / "best_params.yaml").read_text()
    assert "sweep: tiny" in best and ("verdict: better" in best or "verdict: preset stands" in best)
