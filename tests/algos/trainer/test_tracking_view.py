"""A finished run missing from the tracking store is logged afresh from its own files, once, nested as the campaign
nests it; a run the store holds is found where it is."""

import json
import tarfile

import pytest
import yaml

from algos.config.presets import PROJECT_ROOT, flatten
from algos.trainer import run_files
from algos.trainer.tracking import GROUP_TAG, PARENT_TAG, SOURCE_TAG
from algos.trainer.tracking_view import RECORD_ONLY, tracked_run_id

PART = PROJECT_ROOT / "experiments" / "campaigns" / "decisive" / "part1.tar.xz"
RUN = "runs/dr_grpo_bias/grpo/seed15"
"""A run of the decisive campaign, trained and tracked on another machine, as its archive holds it."""


@pytest.fixture
def archived_run(tmp_path, monkeypatch):
    """The archived run's files under tmp_path, its tracking store an empty SQLite database there."""
    with tarfile.open(PART) as part:
        part.extractall(tmp_path, members=[m for m in part.getmembers() if m.name.startswith(RUN)], filter="data")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    monkeypatch.chdir(tmp_path)  # artifacts go to ./mlruns
    return tmp_path / RUN


def client():
    from mlflow.tracking import MlflowClient

    return MlflowClient()


def test_a_run_the_store_lacks_is_logged_afresh_from_its_files_under_its_rows_parent(archived_run):
    record = json.loads((archived_run / run_files.RUN_FILE).read_text())
    run_id = tracked_run_id(archived_run)
    assert run_id != record["tracker_run_id"]
    logged = client().get_run(run_id)
    assert logged.info.status == "FINISHED" and logged.info.run_name == "seed15"
    config = yaml.safe_load((archived_run / run_files.CONFIG_FILE).read_text())
    assert logged.data.params == {key: str(value) for key, value in flatten(config).items()}
    tags = {key: str(value) for key, value in record.items() if key not in RECORD_ONLY}
    assert tags.items() <= logged.data.tags.items() and logged.data.tags[SOURCE_TAG] == record["tracker_run_id"]
    rows = run_files.read_metrics(archived_run)
    for key in ("actor/entropy", "eval/test/accuracy_t1", "perf/train_seconds_total"):
        expected = [(row["step"], row[key]) for row in rows if key in row]
        history = sorted((m.step, m.value) for m in client().get_metric_history(run_id, key))
        assert history == expected and len(expected) >= 1
    artifacts = {artifact.path for artifact in client().list_artifacts(run_id)}
    assert artifacts == {run_files.CONFIG_FILE, run_files.FINAL_FILE, run_files.METRICS_FILE}
    parent = client().get_run(logged.data.tags[PARENT_TAG])
    assert parent.data.tags[GROUP_TAG] == "grpo" and parent.info.experiment_id == logged.info.experiment_id
    assert SOURCE_TAG not in parent.data.tags  # the row's parent is no copy of its first seed
    assert client().get_experiment(logged.info.experiment_id).name == "dr_grpo_bias"


def test_asking_again_finds_the_run_logged_afresh_and_a_stored_run_is_found_where_it_is(archived_run):
    run_id = tracked_run_id(archived_run)
    assert tracked_run_id(archived_run) == run_id
    experiment = client().get_experiment_by_name("dr_grpo_bias").experiment_id
    assert len(client().search_runs([experiment])) == 2  # the run and its row's parent, no second copy
    record_file = archived_run / run_files.RUN_FILE
    record = json.loads(record_file.read_text())
    record_file.write_text(json.dumps({**record, "tracker_run_id": run_id}))  # as if trained against this store
    assert tracked_run_id(archived_run) == run_id and len(client().search_runs([experiment])) == 2


def test_a_run_whose_logging_stopped_part_way_is_logged_again(archived_run, monkeypatch):
    from algos.trainer import tracking_view

    def stopped(run_dir, tracking, record, config):  # killed after the run was created, before it finished
        tracker = tracking_view.MLflowTracker(tracking, "seed15", {SOURCE_TAG: record["tracker_run_id"]})
        return tracker.run_id

    with monkeypatch.context() as patched:
        patched.setattr(tracking_view, "log_afresh", stopped)
        half = tracked_run_id(archived_run)
    assert client().get_run(half).info.status == "RUNNING"
    whole = tracked_run_id(archived_run)
    assert whole != half and client().get_run(whole).info.status == "FINISHED"
    assert client().get_run(half).info.lifecycle_stage == "deleted"


def test_a_run_tracked_nowhere_has_no_run_in_any_store(archived_run):
    config_file = archived_run / run_files.CONFIG_FILE
    config = yaml.safe_load(config_file.read_text())
    config_file.write_text(yaml.safe_dump({**config, "tracking": {**config["tracking"], "backend": "none"}}))
    assert tracked_run_id(archived_run) is None
    assert not (archived_run.parents[3] / "mlflow.db").exists()  # no store was even opened
