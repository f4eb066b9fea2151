"""What a row's MLflow parent run carries, against hand values; the shared table view of the runs."""

import json

import pytest

from algos.campaign.ablations import Endpoint, Row
from reports.analysis.endpoints import EndpointResult
from reports.analysis.rows import RowResult
from reports.statistics.comparisons import Comparison, Direction, Estimate
from reports.statistics.verdicts import Judgement
from reports.tracked_rows import row_metrics, runs_view_link, table_view

ROW = Row("clip_higher", "+ Clip-Higher", 38.0, "dapo", {"policy_loss.clip_eps_high": 0.28}, "overlong_filtering")
ENTROPY = Endpoint("actor/entropy", (30, 60), "up", "DAPO §3.1")


def estimate(mean, low, high, n=3):
    return Estimate(mean, low, high, n, 0.95)


def comparison(delta, n, p_value, p_improvement):
    return Comparison(delta, n, n, True, "paired t", p_value, 0.01, n - 1.0, 0.25, 0.25, p_improvement)


JUDGEMENT = Judgement(0.6, 0.04, Direction.INCONCLUSIVE, 5, 0.05)


def result(row=ROW, with_comparison=True):
    compared = comparison(estimate(0.02, -0.01, 0.05), 3, 0.2, 0.75) if with_comparison else None
    values = {0: 0.5, 1: 0.6, 2: 0.7}
    return RowResult(row, (), values, estimate(0.6, 0.5, 0.7), compared, 0.02, judgement=JUDGEMENT)


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
            "table/delta/p": 0.2,
            "table/delta/p_adjusted": 0.6,
            "table/delta/detectable": 4.0,
            "table/p_improvement": 0.75,
        }
    )


def test_endpoints_keep_their_units_and_name_the_window_measured():
    measured = EndpointResult(
        ROW,
        ENTROPY,
        (10, 20),
        {0: 0.2, 1: 0.3},
        {0: 0.19, 1: 0.29},
        estimate(0.25, 0.2, 0.3, n=2),
        comparison(estimate(0.01, 0.0, 0.02, n=2), 2, None, 1.0),
    )
    metrics = row_metrics(1, result(with_comparison=False), [measured])
    prefix = "endpoint/actor/entropy/steps 10-20"
    assert metrics[f"{prefix}/mean"] == 0.25 and metrics[f"{prefix}/n_seeds"] == 2.0
    assert (metrics[f"{prefix}/delta/ci_low"], metrics[f"{prefix}/delta/ci_high"]) == (0.0, 0.02)
    assert f"{prefix}/delta/p" not in metrics and f"{prefix}/delta/p_adjusted" not in metrics  # not judged
    assert "table/delta/mean" not in metrics
    unmeasured = EndpointResult(ROW, ENTROPY, (10, 20), {}, {}, None, None)
    assert not any(key.startswith("endpoint/") for key in row_metrics(1, result(), [unmeasured]))


def test_a_row_without_a_paper_number_or_runs_logs_only_what_it_has():
    bare = Row("extra", "Extra", None, "grpo", {}, None)
    metrics = row_metrics(5, RowResult(bare, (), {}, None, None, None), [])
    assert metrics == {"row": 5.0}


def test_the_table_view_lists_parent_runs_in_the_papers_order_with_the_aggregates_as_columns():
    view = table_view(["row", "paper", "table/mean"], ["row.label"])
    assert view["orderByKey"] == "metrics.`row`" and view["orderByAsc"] is True
    assert view["selectedColumns"] == ["tags.`row.label`", "metrics.`paper`", "metrics.`table/mean`"]
    assert view["columnOrder"] == view["selectedColumns"]
    assert view["searchFilter"] == "tags.`harness.parent_run` LIKE '%'"  # the rows, not their seeds
    json.dumps(view)  # stored as an experiment tag
    assert runs_view_link("7") == "#/experiments/7/runs?workflowType=machine_learning&viewStateShareKey=ablation-table"
