"""A spec's seed plan from its pilot's run files, and a report that tests with Stein's procedure."""

import json

import pytest

from algos.campaign.ablations import read_spec
from algos.config.presets import ConfigError
from reports.ablation import write_report
from reports.plan_seeds import main, plan_seeds
from tests.reports.test_ablation import fake_run


@pytest.fixture
def pilot(tmp_path):
    """DAPO Table 1's pilot: 3 seeds of every row, row k seed s at 0.1 k + 0.01 s + 0.004 (k s mod 3)."""
    spec = read_spec("dapo_table1")
    for index, row in enumerate(spec.rows):
        for seed in range(3):
            fake_run(
                tmp_path / "runs" / spec.name / row.id / f"seed{seed}",
                0.1 * index + 0.01 * seed + 0.004 * (index * seed % 3),
            )
    return tmp_path / "runs"


def test_the_plan_gives_each_row_the_largest_need_of_its_comparisons(pilot, tmp_path):
    record = plan_seeds("dapo_table1", pilot)
    needs = {(c["row"], c["reference"]): c["needed"] for c in record["comparisons"]}
    rows = [row.id for row in read_spec("dapo_table1").rows]
    for row in rows:
        involved = [need for (a, b), need in needs.items() if row in (a, b)]
        assert record["seeds"][row] == max([3, *involved])
    assert record["pilot_seeds"] == 3 and record["planned_seconds"] <= record["budget_seconds"]
    out = tmp_path / "plan.json"
    assert main(["--spec", "dapo_table1", "--runs", str(pilot), "--out", str(out)]) == 0
    assert json.loads(out.read_text())["seeds"] == record["seeds"]


def test_a_planned_report_tests_with_steins_procedure(pilot, tmp_path):
    plan = tmp_path / "plan.json"
    record = plan_seeds("dapo_table1", pilot)
    plan.write_text(json.dumps({**record, "seeds": {row: 3 for row in record["seeds"]}}))
    markdown, _ = write_report("dapo_table1", pilot, tmp_path / "reports", seeds=99, plan=plan)
    text = markdown.read_text()
    assert "Seeds planned by Stein's two-stage procedure from a pilot of 3 seeds per row" in text


def test_an_unplanned_spec_or_an_unfinished_pilot_fails_clearly(pilot):
    with pytest.raises(ConfigError, match="declares no 'plan'"):
        plan_seeds("presets", pilot)
    for seed in range(3):
        (pilot / "dapo_table1" / "dynamic_sampling" / f"seed{seed}" / "final_metrics.json").unlink()
    with pytest.raises(FileNotFoundError, match="rows dynamic_sampling lack seeds 0..2"):
        plan_seeds("dapo_table1", pilot)
