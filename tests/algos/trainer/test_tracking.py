"""Jobs that share a tracking server take no lock: the tracker resolves the races of creating an experiment and a
row's parent run. The same races between real processes are in tests/test_shared_stores.py (the burst)."""

from mlflow.tracking import MlflowClient

from algos.config.schema import TrackingConfig
from algos.trainer.tracking import GROUP_TAG, PARENT_TAG, MLflowTracker


def test_an_experiment_another_job_created_after_the_lookup_is_used(tmp_path, monkeypatch):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    existing = client.create_experiment("campaign")
    lookups = []
    original = MlflowClient.get_experiment_by_name

    def late_lookup(self, name):  # the first lookup ran before the other job's creation
        lookups.append(name)
        return None if len(lookups) == 1 else original(self, name)

    monkeypatch.setattr(MlflowClient, "get_experiment_by_name", late_lookup)
    tracker = MLflowTracker(TrackingConfig(uri=uri, experiment="campaign"), run_name="seed0", tags={"seed": "0"})
    assert client.get_run(tracker.run_id).info.experiment_id == existing and len(lookups) == 2


def test_a_parent_created_twice_at_once_keeps_the_earliest_and_deletes_the_other(tmp_path, monkeypatch):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    experiment = client.create_experiment("campaign")
    first = client.create_run(experiment, run_name="clip_higher", tags={GROUP_TAG: "clip_higher"}).info.run_id
    searches = []
    original = MLflowTracker._parent_runs

    def late_search(self, experiment_id, name):  # the first search ran before the other child's parent existed
        searches.append(name)
        return [] if len(searches) == 1 else original(self, experiment_id, name)

    monkeypatch.setattr(MLflowTracker, "_parent_runs", late_search)
    tracking = TrackingConfig(uri=uri, experiment="campaign", parent_run="clip_higher")
    tracker = MLflowTracker(tracking, run_name="seed1", tags={"seed": "1"})
    assert client.get_run(tracker.run_id).data.tags[PARENT_TAG] == first
    parents = client.search_runs([experiment], filter_string=f"tags.`{GROUP_TAG}` = 'clip_higher'")
    assert [run.info.run_id for run in parents] == [first]  # the second parent was deleted
