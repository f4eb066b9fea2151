"""The tracking store as a view of the run files: a finished run's MLflow run, found where it trained, or logged
afresh from its own files where the store does not hold it (another machine's store, a lost database, a campaign
unpacked from its archive).

A run's ``run.json`` names the MLflow run it was tracked in (``tracker_run_id``), an id of the store on the machine
that trained it. :func:`tracked_run_id` returns that id where the run's store (its config's ``tracking``) holds it.
Otherwise it looks in the run's experiment for a run logged afresh from it before (tagged :data:`SOURCE_TAG` with the
recorded id, and finished), and failing that logs one: the run's tags from ``run.json``, every key of its resolved
config as params, every metric at every step of ``metrics.jsonl`` and ``critic_metrics.jsonl``, its files as
artifacts, nested under its row's parent run as the campaign nests it (:class:`algos.trainer.tracking.MLflowTracker`),
and finished. The same files always give the same run, and asking again finds it rather than logging a second; a run
whose logging was stopped part-way (not finished) is deleted and logged again.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from algos.config.presets import flatten
from algos.config.schema import TrackingConfig
from algos.trainer import run_files
from algos.trainer.tracking import SOURCE_TAG, MLflowTracker, tracking_uri

RECORD_ONLY = ("tracker_run_id", "warnings", "environment")
"""Keys of ``run.json`` that are the run's record, not the tags it was tracked with."""
ARTIFACTS = (run_files.CONFIG_FILE, run_files.FINAL_FILE, run_files.METRICS_FILE, run_files.CRITIC_METRICS_FILE)
METRICS_PER_REQUEST = 1000  # MLflow's limit on the metrics of one log_batch


def tracked_run_id(run_dir: Path) -> str | None:
    """The id of the finished run in ``run_dir`` in its tracking store, logged afresh from its files where the store
    does not hold it (see the module's docstring); None for a run tracked nowhere (``tracking.backend: none``)."""
    record = json.loads((run_dir / run_files.RUN_FILE).read_text())
    config = yaml.safe_load((run_dir / run_files.CONFIG_FILE).read_text())
    tracking = TrackingConfig(**config.get("tracking", {}))
    recorded = record.get("tracker_run_id")
    if recorded is None or tracking.backend == "none":
        return None
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=tracking_uri(tracking))
    try:
        return client.get_run(recorded).info.run_id
    except MlflowException as error:
        if error.error_code != "RESOURCE_DOES_NOT_EXIST":
            raise
    experiment = client.get_experiment_by_name(tracking.experiment)
    if experiment is not None:
        found = client.search_runs([experiment.experiment_id], filter_string=f"tags.`{SOURCE_TAG}` = '{recorded}'")
        finished = [run for run in found if run.info.status == "FINISHED"]
        if finished:
            return finished[0].info.run_id
        for unfinished in found:  # a logging stopped part-way: its run holds only some of the files' numbers
            client.delete_run(unfinished.info.run_id)
    return log_afresh(run_dir, tracking, record, config)


def log_afresh(run_dir: Path, tracking: TrackingConfig, record: Mapping[str, Any], config: Mapping[str, Any]) -> str:
    """A new MLflow run of the finished run in ``run_dir`` from its files: tags, params, every metric at every step,
    artifacts; nested as the campaign nests it, and finished. Returns its id."""
    from mlflow.entities import Metric

    tags = {key: str(value) for key, value in record.items() if key not in RECORD_ONLY}
    tags[SOURCE_TAG] = str(record["tracker_run_id"])
    tracker = MLflowTracker(tracking, tracking.run_name or run_dir.name, tags)
    tracker.log_params(flatten(dict(config)))
    now = int(time.time() * 1000)
    metrics = [
        Metric(key, float(value), now, int(row["step"]))
        for name in (run_files.METRICS_FILE, run_files.CRITIC_METRICS_FILE)
        for row in run_files.read_metrics(run_dir, name)
        for key, value in row.items()
        if key != "step"
    ]
    for batch in _chunks(metrics, METRICS_PER_REQUEST):
        tracker.client.log_batch(tracker.run_id, metrics=batch)
    for name in ARTIFACTS:
        if (run_dir / name).is_file():
            tracker.log_artifact(run_dir / name)
    tracker.finish("FINISHED")
    return tracker.run_id


def _chunks(items: list[Any], size: int) -> Iterator[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
