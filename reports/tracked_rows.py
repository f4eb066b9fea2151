"""Each ablation row's aggregate on its MLflow parent run, so the UI's runs table reads as the spec's table.

A campaign logs each spec as an MLflow experiment, each row as a parent run and its seeds as runs
nested under it (``tracking.parent_run``). Once a spec's runs have finished, this puts on every row's
parent run the numbers its report shows:

- ``row``: the row's position in the paper's table (sort by it to read the rows in order);
- ``paper``: the paper's number, when it has one;
- ``table/mean``, ``table/ci_low``, ``table/ci_high``, ``table/n_seeds``: the spec's metric at the
  final step, mean and 95 % Student-t CI over seeds, in percent like the paper's column (no interval
  at one seed);
- ``table/delta/mean|ci_low|ci_high``, ``table/delta/p``, ``table/delta/p_adjusted``,
  ``table/delta/detectable`` and ``table/p_improvement``: against the compared row, with the raw and
  family-adjusted p-values and the effect the comparison could have detected (:mod:`reports.statistics.verdicts`);
- ``endpoint/<metric>/steps <first>-<last>/mean|ci_low|ci_high|n_seeds`` (and ``…/delta/…`` as above):
  each declared endpoint, in the metric's own units, over the window the runs were measured on;

with the row's label, preset, compared row and settings as tags (tags, not params, so a row edited and
rerun under the same parent run shows what it is now). The experiment is marked as model
training (``mlflow.experimentKind``), described by the spec's title, and given a shared view of the
runs table (``mlflow.sharedViewState.<key>``, which the UI opens from ``viewStateShareKey=<key>``):
the parent runs only, in the paper's order, with the columns above. Nothing is recomputed that the
report does not compute: the numbers come from :func:`reports.analysis.family.analyse` over the runs'
own files. Runs trained with ``tracking.backend=none``
have no parent run and are skipped. A run whose recorded MLflow run the store does not hold (a campaign unpacked
from its archive on another machine, a lost database) is first logged afresh from its own files, nested under its
row's parent run (:mod:`algos.trainer.tracking_view`), so the store is a view of the run files wherever they are.
A JSON record of what was logged, and a link to each experiment's runs view in table order, is written to
``--out``.

Command line: ``python -m reports.tracked_rows --spec dapo_table1 --runs results/runs --seeds 3
--out results/reports/dapo_table1.mlflow.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from algos.campaign.ablations import AblationSpec, read_spec
from algos.config.presets import ConfigError
from algos.config.schema import TrackingConfig
from algos.trainer.run_files import write_json
from algos.trainer.tracking import EXPERIMENT_KIND, EXPERIMENT_KIND_TAG, GROUP_TAG, PARENT_TAG, tracking_uri
from algos.trainer.tracking_view import tracked_run_id
from reports.analysis.campaign import analyse_campaign
from reports.analysis.endpoints import EndpointResult
from reports.analysis.rows import RowResult
from reports.analysis.runs import FinishedRun
from reports.statistics.comparisons import Comparison, Estimate
from reports.statistics.verdicts import Judgement

NOTE_TAG = "mlflow.note.content"  # the description the UI shows above an experiment or run
VIEW_KEY = "ablation-table"
VIEW_TAG = f"mlflow.sharedViewState.{VIEW_KEY}"  # a runs-table state the UI loads from its URL
TABLE_SCALE = 100.0  # the table's metric in percent, as the paper's column
ORDER_KEY = "row"


def estimate_metrics(prefix: str, estimate: Estimate, scale: float = 1.0) -> dict[str, float]:
    """``prefix/mean``, ``prefix/ci_low``, ``prefix/ci_high`` of ``estimate`` times ``scale`` (no bounds at n = 1)."""
    metrics = {f"{prefix}/mean": estimate.mean * scale}
    if estimate.has_interval:
        metrics.update({f"{prefix}/ci_low": estimate.ci_low * scale, f"{prefix}/ci_high": estimate.ci_high * scale})
    return metrics


def comparison_metrics(
    prefix: str, comparison: Comparison, judgement: Judgement | None, scale: float = 1.0
) -> dict[str, float]:
    """The Δ's estimate under ``prefix`` with its p-value, adjusted p-value and detectable effect, where defined."""
    metrics = estimate_metrics(prefix, comparison.delta, scale)
    optional = {
        "p": comparison.p_value,
        "p_adjusted": judgement.adjusted_p if judgement else None,
        "detectable": judgement.detectable * scale if judgement and judgement.detectable is not None else None,
    }
    metrics.update({f"{prefix}/{key}": value for key, value in optional.items() if value is not None})
    return metrics


def row_metrics(position: int, result: RowResult, measured: Sequence[EndpointResult]) -> dict[str, float]:
    """The metrics one row's parent run carries (see the module docstring); ``measured``: this row's endpoints."""
    metrics = {ORDER_KEY: float(position)}
    if result.row.paper is not None:
        metrics["paper"] = float(result.row.paper)
    if result.estimate:
        metrics.update(estimate_metrics("table", result.estimate, TABLE_SCALE))
        metrics["table/n_seeds"] = float(result.estimate.n)
    if result.comparison:
        metrics.update(comparison_metrics("table/delta", result.comparison, result.judgement, TABLE_SCALE))
        metrics["table/p_improvement"] = result.comparison.p_improvement
    for endpoint in measured:
        if endpoint.estimate is None:
            continue
        prefix = f"endpoint/{endpoint.endpoint.metric}/steps {endpoint.window[0]}-{endpoint.window[1]}"
        metrics.update(estimate_metrics(prefix, endpoint.estimate))
        metrics[f"{prefix}/n_seeds"] = float(endpoint.estimate.n)
        if endpoint.comparison:
            metrics.update(comparison_metrics(f"{prefix}/delta", endpoint.comparison, endpoint.judgement))
    return metrics


def row_tags(spec: AblationSpec, result: RowResult) -> dict[str, str]:
    """What the row is: its label, preset, compared row and settings (as the spec writes them)."""
    row = result.row
    return {
        "row.label": row.label,
        "row.preset": row.preset,
        "row.compare_to": row.compare_to or "-",
        "row.settings": json.dumps(row.settings, sort_keys=True),
        "spec.metric": spec.metric,
    }


def parent_runs(client: Any, run_ids: Sequence[str]) -> list[str]:
    """Ids of the parent runs that the tracked runs ``run_ids`` are nested under, in first-seen order."""
    parents = []
    for run_id in run_ids:
        parent = client.get_run(run_id).data.tags.get(PARENT_TAG)
        if parent and parent not in parents:
            parents.append(parent)
    return parents


def run_tracking_uri(run: FinishedRun) -> str:
    """The store a run was tracked in: its config's ``tracking.uri``, else the environment's or the default."""
    return tracking_uri(TrackingConfig(**run.config.get("tracking", {})))


def table_view(metric_keys: Sequence[str], tag_keys: Sequence[str]) -> dict[str, Any]:
    """The runs table as the spec's table: parent runs only, sorted by ``row``, these tags then metrics as columns."""
    columns = [f"tags.`{key}`" for key in tag_keys] + [f"metrics.`{key}`" for key in metric_keys if key != ORDER_KEY]
    return {
        "searchFilter": f"tags.`{GROUP_TAG}` LIKE '%'",
        "orderByKey": f"metrics.`{ORDER_KEY}`",
        "orderByAsc": True,
        "selectedColumns": columns,
        "columnOrder": columns,
    }


def runs_view_link(experiment_id: str) -> str:
    """The experiment's table view in the model-training UI (a path after the UI's address)."""
    return f"#/experiments/{experiment_id}/runs?workflowType=machine_learning&viewStateShareKey={VIEW_KEY}"


def log_rows(spec_name: str, runs_dir: Path, seeds: int, plan: Path | None = None) -> dict[str, Any]:
    """Log every tracked row's aggregate on its parent run; returns the record of what went where.

    plan: the campaign's seed plan, as for :func:`reports.ablation.write_report`.
    """
    from mlflow.entities import Metric, RunTag
    from mlflow.tracking import MlflowClient

    spec = read_spec(spec_name)
    analysis = analyse_campaign(spec, runs_dir, seeds, plan).analysis
    results, measured = analysis.rows, analysis.endpoints
    record: dict[str, Any] = {"spec": spec.name, "rows": {}}
    columns: dict[tuple[str, str], dict[str, None]] = {}  # (store, experiment) -> its rows' metric keys, in order
    for position, result in enumerate(results, start=1):
        tracked = [run for run in result.runs if run.record and run.record.get("tracker_run_id")]
        if not tracked:
            continue
        uri = run_tracking_uri(tracked[0])
        client = MlflowClient(tracking_uri=uri)
        metrics = row_metrics(position, result, [m for m in measured if m.row.id == result.row.id])
        tags = {**row_tags(spec, result), NOTE_TAG: _row_note(spec, result)}
        in_store = [tracked_run_id(run.directory) for run in tracked]  # logged afresh where the store lacks them
        for parent in parent_runs(client, [run_id for run_id in in_store if run_id]):
            now = int(time.time() * 1000)  # a rerun's values are the latest at step 0
            client.log_batch(
                parent,
                metrics=[Metric(key, value, now, 0) for key, value in metrics.items()],
                tags=[RunTag(key, value) for key, value in tags.items()],
            )
            experiment_id = client.get_run(parent).info.experiment_id
            columns.setdefault((uri, experiment_id), {}).update(dict.fromkeys(metrics))
            record["rows"][result.row.id] = {"parent_run": parent, "metrics": metrics}
            record["runs_view"] = runs_view_link(experiment_id)
    for (uri, experiment_id), keys in columns.items():
        client = MlflowClient(tracking_uri=uri)
        view = table_view(list(keys), ["row.label"])
        experiment_tags = {
            EXPERIMENT_KIND_TAG: EXPERIMENT_KIND,
            NOTE_TAG: f"{spec.title}. {spec.paper}",
            VIEW_TAG: json.dumps(view),
        }
        for key, value in experiment_tags.items():
            client.set_experiment_tag(experiment_id, key, value)
    return record


def _row_note(spec: AblationSpec, result: RowResult) -> str:
    """The row's description in the UI: what it is and what it is compared with."""
    row = result.row
    compared = f", compared with {spec.row(row.compare_to).label}" if row.compare_to else ""
    paper = f"paper: {row.paper:g}" if row.paper is not None else "no paper number"
    return f"{row.label} ({paper}{compared}); {len(result.runs)} seeds nested below."


def write_record(record: Mapping[str, Any], out: Path) -> Path:
    """The record as JSON at ``out`` (atomically)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    write_json(out, record)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reports.tracked_rows", description=__doc__.split("\n\n")[0])
    parser.add_argument("--spec", required=True, help="ablation spec (python -m algos.campaign.ablations --list)")
    parser.add_argument(
        "--runs", type=Path, default=Path("results/runs"), help="directory holding <spec>/<row>/seed<n>/"
    )
    parser.add_argument("--seeds", type=int, default=3, help="seeds per row (0..seeds-1)")
    parser.add_argument("--out", type=Path, required=True, help="JSON record of what was logged")
    parser.add_argument("--plan", type=Path, help="the campaign's seed plan (results/plans/<spec>.json), if planned")
    args = parser.parse_args(argv)
    try:
        path = write_record(log_rows(args.spec, args.runs, args.seeds, args.plan), args.out)
    except (ConfigError, ValueError, FileNotFoundError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
