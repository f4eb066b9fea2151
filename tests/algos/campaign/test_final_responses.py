"""A run's final evaluation regenerated: the same responses the run was graded on, under either kind of draws."""

import json

import pytest
import torch

from algos.campaign.final_responses import final_responses, main
from algos.config.presets import load_config
from algos.trainer import run_files
from algos.trainer.tracking import NullTracker
from algos.trainer.train import train

SMALL = [
    "task.min_steps=1",
    "task.max_steps=3",
    "rollout.max_new_tokens=20",
    "rollout.prompts_per_step=4",
    "run.steps=1",
    "run.eval_every=1",
    "run.eval_problems=8",
    "run.final_eval_problems=160",  # past one batch of 128: the second batch goes on from the first's draws
    "run.eval_splits=[test]",
    "run.eval_modes=[t1]",
]


@pytest.mark.slow
@pytest.mark.parametrize("draws", ["stream", "keyed"])
def test_the_regenerated_final_evaluation_is_the_one_the_run_was_graded_on(draws, tiny_base, tmp_path):
    torch.set_default_dtype(torch.float32)
    config = load_config("grpo", overrides=[*SMALL, f"model.name_or_path={tiny_base}", f"rollout.draws={draws}"])
    run = tmp_path / "run"
    train(config, run, tracker=NullTracker())
    graded = json.loads((run / run_files.FINAL_FILE).read_text())["eval/test/accuracy_t1"]
    whole = final_responses(run, 160)
    assert whole["draws"] == draws and whole["accuracy"] == graded
    if draws == "keyed":  # the first batch whole and two problems of the second: keyed draws are the problems' own
        assert final_responses(run, 130)["responses"] == whole["responses"][:130]
    else:  # a batch's stream draws depend on its size
        with pytest.raises(ValueError, match="only whole batches of 128"):
            final_responses(run, 130)
    assert final_responses(run, 128)["responses"] == whole["responses"][:128]
    assert all(response["tokens"] for response in whole["responses"])


def test_a_run_without_its_files_or_its_sampled_split_is_named(tmp_path, capsys):
    out = tmp_path / "responses.json"
    assert main(["--run", str(tmp_path), "--problems", "4", "--out", str(out)]) == 2
    assert f"{tmp_path} is not a finished run: it has no config.yaml" in capsys.readouterr().err
    (tmp_path / "checkpoint" / "policy").mkdir(parents=True)
    (tmp_path / run_files.FINAL_FILE).write_text("{}")
    (tmp_path / run_files.CONFIG_FILE).write_text("run:\n  eval_modes: [greedy]\n")
    assert main(["--run", str(tmp_path), "--problems", "4", "--out", str(out)]) == 2
    assert "its final evaluation sampled no 'test' split at T = 1" in capsys.readouterr().err
    assert not out.exists()
