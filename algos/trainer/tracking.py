"""Experiment tracking: MLflow for browsing and comparing runs, a null tracker for offline use.

The trainer always writes plain files in the run directory as well (``algos.trainer.run_files``), so
nothing downstream needs MLflow; the tracker is for people. The default store is a local SQLite
database (``sqlite:///mlflow.db``, artifacts under ``./mlruns``); ``tracking.uri`` or
``$MLFLOW_TRACKING_URI`` point it anywhere else.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

from algos.config.schema import TrackingConfig

DEFAULT_URI = "sqlite:///mlflow.db"
SQLITE_PREFIX = "sqlite:///"
PARENT_TAG = "mlflow.parentRunId"  # the tag the MLflow UI nests runs by
GROUP_TAG = "harness.parent_run"
# Marks an experiment as model training rather than GenAI, for the MLflow UIs that choose their view by it.
EXPERIMENT_KIND_TAG = "mlflow.experimentKind"
EXPERIMENT_KIND = "custom_model_development"
SOURCE_TAG = "harness.source_run_id"
"""On a run logged afresh from its files (:mod:`algos.trainer.tracking_view`): the id it was tracked under where it
trained."""
_PER_RUN_TAGS = ("seed", "config_hash", SOURCE_TAG)  # what a parent run does not take from its first child
_MLFLOW_BATCH = 100  # MLflow's per-request limit on params and a safe chunk for metrics


class Tracker(Protocol):
    """What the trainer needs from a tracking backend."""

    run_id: str | None

    def log_params(self, params: Mapping[str, Any]) -> None: ...

    def log_metrics(self, metrics: Mapping[str, float], step: int) -> None: ...

    def log_artifact(self, path: Path) -> None: ...

    def finish(self, status: str) -> None: ...


class NullTracker:
    """Accepts everything, records nothing: keeps tests and offline runs free of a tracking store."""

    run_id: str | None = None

    def log_params(self, params: Mapping[str, Any]) -> None:
        pass

    def log_metrics(self, metrics: Mapping[str, float], step: int) -> None:
        pass

    def log_artifact(self, path: Path) -> None:
        pass

    def finish(self, status: str) -> None:
        pass


class MLflowTracker:
    """One MLflow run; passing ``run_id`` continues that run (a resumed training run).

    With ``cfg.parent_run`` the run is nested (MLflow's ``mlflow.parentRunId`` tag) under the
    experiment's parent run of that name, which the first of its children creates.
    """

    def __init__(self, cfg: TrackingConfig, run_name: str, tags: Mapping[str, str], run_id: str | None = None):
        from mlflow.tracking import MlflowClient

        uri = tracking_uri(cfg)
        with _store_lock(uri):
            self.client = MlflowClient(tracking_uri=uri)
            if run_id is None:
                experiment_id = self._experiment_id(cfg.experiment)
                run_tags = dict(tags)
                if cfg.parent_run:
                    run_tags[PARENT_TAG] = self._parent_run_id(experiment_id, cfg.parent_run, tags)
                run_id = self.client.create_run(experiment_id, run_name=run_name, tags=run_tags).info.run_id
            else:
                self.client.update_run(run_id, status="RUNNING")
        self.run_id = run_id

    def _experiment_id(self, name: str) -> str:
        """The experiment called ``name``, created if there is none.

        Jobs that share a tracking server take no lock: where another job creates the experiment between the
        lookup and the creation, the server refuses the second, and the first one's is used.
        """
        from mlflow.exceptions import MlflowException

        experiment = self.client.get_experiment_by_name(name)
        if experiment is not None:
            return experiment.experiment_id
        try:
            return self.client.create_experiment(name, tags={EXPERIMENT_KIND_TAG: EXPERIMENT_KIND})
        except MlflowException as error:
            if error.error_code != "RESOURCE_ALREADY_EXISTS":
                raise
            return self.client.get_experiment_by_name(name).experiment_id

    def _parent_run_id(self, experiment_id: str, name: str, tags: Mapping[str, str]) -> str:
        """The id of the experiment's parent run called ``name``, created (and closed) if there is none.

        Children that start at once on a tracking server (no lock) may each create one: each then keeps the
        earliest (start time, then id) and deletes its own if that is not it, so every child nests under one.
        """
        found = self._parent_runs(experiment_id, name)
        if found:
            return found[0].info.run_id
        shared = {key: value for key, value in tags.items() if key not in _PER_RUN_TAGS}
        parent = self.client.create_run(experiment_id, run_name=name, tags={**shared, GROUP_TAG: name})
        self.client.set_terminated(parent.info.run_id, status="FINISHED")
        kept = self._parent_runs(experiment_id, name)[0].info.run_id
        if kept != parent.info.run_id:
            self.client.delete_run(parent.info.run_id)
        return kept

    def _parent_runs(self, experiment_id: str, name: str) -> list[Any]:
        """The experiment's live parent runs called ``name``, earliest first (start time, then run id)."""
        found = self.client.search_runs([experiment_id], filter_string=f"tags.`{GROUP_TAG}` = '{name}'")
        return sorted(found, key=lambda run: (run.info.start_time, run.info.run_id))

    def log_params(self, params: Mapping[str, Any]) -> None:
        from mlflow.entities import Param

        items = [Param(key, str(value)) for key, value in params.items()]
        for start in range(0, len(items), _MLFLOW_BATCH):
            self.client.log_batch(self.run_id, params=items[start : start + _MLFLOW_BATCH])

    def log_metrics(self, metrics: Mapping[str, float], step: int) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        items = [Metric(key, float(value), now, step) for key, value in metrics.items()]
        for start in range(0, len(items), _MLFLOW_BATCH):
            self.client.log_batch(self.run_id, metrics=items[start : start + _MLFLOW_BATCH])

    def log_artifact(self, path: Path) -> None:
        self.client.log_artifact(self.run_id, str(path))

    def finish(self, status: str) -> None:
        self.client.set_terminated(self.run_id, status=status)


@contextmanager
def _store_lock(uri: str) -> Iterator[None]:
    """Hold an exclusive lock next to a local SQLite store while a run is set up in it.

    Parallel workflow jobs that open a new store at once would otherwise race to create its tables
    and its experiment, and all but one would fail. Other stores (a tracking server) need no lock.
    """
    if not uri.startswith(SQLITE_PREFIX):
        yield
        return
    database = Path(uri.removeprefix(SQLITE_PREFIX))
    with open(database.with_name(database.name + ".lock"), "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def tracking_uri(cfg: TrackingConfig) -> str:
    """``tracking.uri``, else ``$MLFLOW_TRACKING_URI``, else the local SQLite store."""
    return cfg.uri or os.environ.get("MLFLOW_TRACKING_URI") or DEFAULT_URI


def tag_run(cfg: TrackingConfig, run_id: str | None, tags: Mapping[str, str]) -> None:
    """Add ``tags`` to an existing run of the configured tracker (nothing offline or without a run id)."""
    if cfg.backend == "none" or run_id is None:
        return
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=tracking_uri(cfg))
    for key, value in tags.items():
        client.set_tag(run_id, key, value)


def make_tracker(cfg: TrackingConfig, run_name: str, tags: Mapping[str, str], run_id: str | None = None) -> Tracker:
    """The configured tracker (``tracking.backend``)."""
    if cfg.backend == "none":
        return NullTracker()
    return MLflowTracker(cfg, run_name, tags, run_id)
