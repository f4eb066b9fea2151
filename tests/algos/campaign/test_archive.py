"""A packed campaign unpacks elsewhere with its finished runs' files and times, the workflow's training jobs keep
those runs instead of training them again, and the workflow regenerates its tables from them into a fresh tracking
store."""

import json
import os
import subprocess

import pytest

from algos.campaign import archive, seed_block
from algos.campaign.ablations import Budget
from algos.config.presets import PROJECT_ROOT, config_hash
from algos.trainer import run_files
from algos.trainer.tracking import GROUP_TAG, PARENT_TAG, SOURCE_TAG
from tests.requirements import require_extra


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


def test_a_file_a_later_part_holds_again_is_unpacked_as_the_later_part_has_it(tmp_path):
    results = tmp_path / "results"
    (results / "plans").mkdir(parents=True)
    look = results / "plans" / "dapo_table1.look0.json"
    look.write_text('{"judged": 1}')
    os.utime(look, (1e9, 1e9))
    archive.pack(results, tmp_path / "part1.tar.xz")
    look.write_text('{"judged": 2}')  # judged again after the first part was packed
    assert archive.pack(results, tmp_path / "part2.tar.xz", [tmp_path / "part1.tar.xz"]) == 0
    parts = [tmp_path / "part1.tar.xz", tmp_path / "part2.tar.xz"]
    assert archive.unpack(parts, tmp_path / "fresh") == (1, 0)
    assert (tmp_path / "fresh" / "plans" / "dapo_table1.look0.json").read_text() == '{"judged": 2}'
    mine = tmp_path / "mine" / "plans" / "dapo_table1.look0.json"
    mine.parent.mkdir(parents=True)
    mine.write_text('{"mine": true}')
    assert archive.unpack(parts, tmp_path / "mine") == (0, 1) and mine.read_text() == '{"mine": true}'
    archive.unpack(parts[:1], tmp_path / "later")  # the first part unpacked alone, the second when it came
    assert archive.unpack(parts, tmp_path / "later") == (1, 0)
    assert (tmp_path / "later" / "plans" / "dapo_table1.look0.json").read_text() == '{"judged": 2}'


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


DECISIVE = PROJECT_ROOT / "experiments" / "campaigns" / "decisive"


@pytest.mark.slow
def test_an_unpacked_campaign_regenerates_its_table_through_the_workflow_into_a_fresh_store(tmp_path):
    """The decisive campaign's parts unpacked on a machine whose tracking store never saw them: `snakemake ablations`
    for Dr. GRPO's table trains nothing, judges every look as the campaign did, and logs each run afresh."""
    require_extra("workflow", command="snakemake")
    archive.unpack(sorted(DECISIVE.glob("part*.tar.xz")), tmp_path / "results")
    plans = tmp_path / "results" / "plans"
    archived = {path.name: json.loads(path.read_text()) for path in plans.glob("dr_grpo_bias.look*.json")}
    (tmp_path / "one_table.yaml").write_text("ablations:\n  specs: [dr_grpo_bias]\n")
    environment = {key: value for key, value in os.environ.items() if key != "MLFLOW_TRACKING_URI"}
    command = [
        "snakemake",
        "-c2",
        "ablations",
        "--directory",
        str(tmp_path),
        "--configfile",
        str(tmp_path / "one_table.yaml"),
    ]
    result = subprocess.run(
        command, cwd=PROJECT_ROOT, env=environment, capture_output=True, text=True, timeout=900, check=False
    )
    log = result.stdout + result.stderr
    assert result.returncode == 0, log[-3000:]
    assert "Training " not in log and "Logging the rows of dr_grpo_bias to MLflow" in log
    assert len(archived) == 3
    for name, look in archived.items():  # the decisions the published table was written from, verdict and Δ alike
        assert json.loads((plans / name).read_text())["comparisons"] == look["comparisons"], name

    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("dr_grpo_bias").experiment_id], max_results=1000)
    parents = {run.info.run_id: run for run in runs if GROUP_TAG in run.data.tags}
    children = [run for run in runs if run.data.tags.get(PARENT_TAG) in parents]
    read = sum(len(seeds) for seeds in archived["dr_grpo_bias.look2.json"]["seeds_read"].values())
    assert len(parents) == 4 and len(children) == len(runs) - 4 == read == 40
    assert all(run.info.status == "FINISHED" and SOURCE_TAG in run.data.tags for run in children)
    assert not any(SOURCE_TAG in parent.data.tags for parent in parents.values())
    assert sum(parent.data.metrics["table/n_seeds"] for parent in parents.values()) == read
