"""A packed campaign unpacks elsewhere with its finished runs' files and times, and the workflow's training jobs keep
those runs instead of training them again."""

import json
import os

from algos.campaign import archive, seed_block
from algos.campaign.ablations import Budget
from algos.config.presets import config_hash
from algos.trainer import run_files


def finished_run(folder, cfg=None):
    folder.mkdir(parents=True)
    (folder / run_files.FINAL_FILE).write_text("{}")
    (folder / run_files.METRICS_FILE).write_text('{"step": 0}\n')
    (folder / run_files.RUN_FILE).write_text(json.dumps({"config_hash": config_hash(cfg) if cfg else "x"}))
    (folder / "checkpoint" / "step_20").mkdir(parents=True)
    (folder / "checkpoint" / "step_20" / "state.pt").write_bytes(b"weights")


def test_a_packed_campaign_unpacks_its_finished_runs_with_their_times(tmp_path):
    results = tmp_path / "results"
    (results / "base_model").mkdir(parents=True)
    (results / "base_model" / "model.safetensors").write_bytes(b"base")
    (results / "plans").mkdir()
    (results / "plans" / "dapo_table1.look0.json").write_text("{}")
    finished_run(results / "runs" / "dapo_table1" / "naive_grpo" / "seed15")
    (results / "runs" / "dapo_table1" / "naive_grpo" / "seed16" / "checkpoint").mkdir(parents=True)  # unfinished
    os.utime(results / "runs" / "dapo_table1" / "naive_grpo" / "seed15" / run_files.FINAL_FILE, (1e9, 1e9))
    assert archive.pack(results, tmp_path / "campaign.tar.xz") == 1

    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "plans").mkdir(parents=True)
    (elsewhere / "plans" / "dapo_table1.look0.json").write_text('{"kept": true}')
    assert archive.unpack([tmp_path / "campaign.tar.xz"], elsewhere) == (4, 1)
    run = elsewhere / "runs" / "dapo_table1" / "naive_grpo" / "seed15"
    assert sorted(path.name for path in run.iterdir()) == [run_files.FINAL_FILE, run_files.METRICS_FILE, "run.json"]
    assert (run / run_files.FINAL_FILE).stat().st_mtime == 1e9
    assert not (elsewhere / "runs" / "dapo_table1" / "naive_grpo" / "seed16").exists()
    assert json.loads((elsewhere / "plans" / "dapo_table1.look0.json").read_text()) == {"kept": True}

    finished_run(results / "runs" / "dapo_table1" / "naive_grpo" / "seed17")  # the campaign goes on
    finished_run(results / "coupled" / "dapo_table1" / "naive_grpo" / "seed17")  # and the coupling beside it
    responses = results / "coupling" / "responses" / "keyed" / "dapo_table1" / "naive_grpo" / "seed17.json"
    responses.parent.mkdir(parents=True)
    responses.write_text("{}")
    assert archive.pack(results, tmp_path / "part2.tar.xz", [tmp_path / "campaign.tar.xz"]) == 2
    with archive.tarfile.open(tmp_path / "part2.tar.xz") as part:
        assert all("seed17" in name for name in part.getnames())  # only what the first part lacks
        assert "coupling/responses/keyed/dapo_table1/naive_grpo/seed17.json" in part.getnames()
        assert not any("checkpoint" in name for name in part.getnames())
    assert archive.unpack([tmp_path / "campaign.tar.xz", tmp_path / "part2.tar.xz"], tmp_path / "third")[0] == 12


def test_an_unpacked_finished_run_is_kept_by_its_training_job(tmp_path, monkeypatch):
    trained = []
    monkeypatch.setattr(seed_block, "train", lambda cfg, out, **_: trained.append(cfg))
    budget = Budget(("tracking.backend=none",))
    seed_block.train_block("dr_grpo_bias", "grpo", [0], tmp_path, budget)
    assert [cfg.seed for cfg in trained] == [0]  # nothing there: trained
    run = tmp_path / "dr_grpo_bias" / "grpo" / "seed0"
    finished_run(tmp_path / "unpacked", trained[0])  # the files a packed campaign restores, without the checkpoint
    for path in (tmp_path / "unpacked").iterdir():
        if path.is_file():
            path.rename(run / path.name)
    seed_block.train_block("dr_grpo_bias", "grpo", [0, 1], tmp_path, budget)
    assert [cfg.seed for cfg in trained] == [0, 1]  # seed 0 kept, seed 1 trained
