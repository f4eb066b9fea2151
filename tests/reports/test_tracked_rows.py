"""What a row's MLflow parent run carries, against hand values; the shared table view of the runs."""

import json

import pytest

from algos.ablations import Endpoint, Row
from reports.ablation import RowResult
from reports.endpoints import EndpointResult
from reports.stats import Comparison, Estimate
from reports.tracked_rows import row_metrics, runs_view_link, table_view

ROW = Row("clip_higher", "+ Clip-Higher", 38.0, "dapo", {"policy_loss.clip_eps_high": 0.28}, "overlong_filtering")
ENTROPY = Endpoint("actor/entropy", (30, 60), "up", "DAPO §3.1")


def estimate(mean, low, high, n=3):
    return Estimate(mean, low, high, n, 0.95)


def result(row=ROW, with_comparison=True):
    comparison = Comparison(estimate(0.02, -0.01, 0.05), 0.75, 3, 3, True) if with_comparison else None
    return RowResult(row, (), (), (0.5, 0.6, 0.7), estimate(0.6, 0.5, 0.7), comparison, None)


def test_a_row_carries_its_table_cell_in_percent_its_paper_number_and_its_position():
    metrics = row_metrics(3, result(), [])
    assert metrics == pytest.approx(
        {
            "row": 3.0,
            "paper": 38.0,
            "table/mean": 60.0,
            "table/ci_low": 50.0,
            "table/ci_high": 70.0,
            "table/n_seeds": 3.0,
            "table/delta/mean": 2.0,
            "table/delta/ci_low": -1.0,
            "table/delta/ci_high": 5.0,
            "table/p_improvement": 0.75,
        }
    )


def test_endpoints_keep_their_units_and_name_the_window_measured():
    measured = EndpointResult(
        ROW,
        ENTROPY,
        (10, 20),
        {0: 0.2, 1: 0.3},
        estimate(0.25, 0.2, 0.3, n=2),
        Comparison(estimate(0.01, 0.0, 0.02, n=2), 1.0, 2, 2, True),
        None,
    )
    metrics = row_metrics(1, result(with_comparison=False), [measured])
    prefix = "endpoint/actor/entropy/steps 10-20"
    assert metrics[f"{prefix}/mean"] == 0.25 and metrics[f"{prefix}/n_seeds"] == 2.0
    assert (metrics[f"{prefix}/delta/ci_low"], metrics[f"{prefix}/delta/ci_high"]) == (0.0, 0.02)
    assert "table/delta/mean" not in metrics
    unmeasured = EndpointResult(ROW, ENTROPY, (10, 20), {}, None, None, None)
    assert not any(key.startswith("endpoint/") for key in row_metrics(1, result(), [unmeasured]))


def test_a_row_without_a_paper_number_or_runs_logs_only_what_it_has():
    bare = Row("extra", "Extra", None, "grpo", {}, None)
    metrics = row_metrics(5, RowResult(bare, (), (), (), None, None, None), [])
    assert metrics == {"row": 5.0}


def test_the_table_view_lists_parent_runs_in_the_papers_order_with_the_aggregates_as_columns():
    view = table_view(["row", "paper", "table/mean"], ["row.label"])
    assert view["orderByKey"] == "metrics.`row`" and view["orderByAsc"] is True
    assert view["selectedColumns"] == ["tags.`row.label`", "metrics.`paper`", "metrics.`table/mean`"]
    assert view["columnOrder"] == view["selectedColumns"]
    assert view["searchFilter"] == "tags.`harness.parent_run` LIKE '%'"  # the rows, not their seeds
    json.dumps(view)  # stored as an experiment tag
    assert runs_view_link("7") == "#/experiments/7/runs?workflowType=machine_learning&viewStateShareKey=ablation-table"
