import json

import pytest

from algos.ablations import read_spec
from reports.ablation import HEADER, collect, main, table_cells, write_report
from tests.reports.test_benchmarks import fake_score


def fake_run(directory, value, steps=3, commit="abc"):
    """A finished run as the trainer leaves it: final metrics, per-step metrics and provenance."""
    directory.mkdir(parents=True)
    (directory / "final_metrics.json").write_text(
        json.dumps({"eval/test/accuracy_t1": value, "perf/train_seconds_total": 10.0})
    )
    lines = [{"step": 0, "eval/test/accuracy_t1": value / 2}]
    lines += [
        {"step": s, "rollout/reward_mean": value * s / steps, "actor/entropy": 1.0 / s} for s in range(1, steps + 1)
    ]
    lines += [{"step": steps, "eval/test/accuracy_t1": value}]
    (directory / "metrics.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    (directory / "config.yaml").write_text(
        f"run:\n  steps: {steps}\n  eval_every: 1\nmodel:\n  name_or_path: {directory / 'no-base'}\n"
    )
    (directory / "run.json").write_text(
        json.dumps(
            {
                "git_commit": commit,
                "config_hash": "h",
                "hardware": "cpu",
                "version.torch": "2.13.0",
                "tracker_run_id": None,
            }
        )
    )


@pytest.fixture
def dapo_runs(tmp_path):
    """DAPO Table 1 with 3 seeds per row, each row 0.1 above the one before, except the last row, never run."""
    spec = read_spec("dapo_table1")
    for index, row in enumerate(spec.rows[:-1]):
        for seed in range(3):
            fake_run(tmp_path / "runs" / spec.name / row.id / f"seed{seed}", 0.1 * index + 0.01 * seed)
    return tmp_path


def test_table_compares_each_row_with_the_one_before_in_the_papers_order(dapo_runs):
    spec = read_spec("dapo_table1")
    results = collect(spec, dapo_runs / "runs", seeds=3)
    assert [r.row.id for r in results] == [r.id for r in spec.rows]
    assert results[0].comparison is None and results[0].estimate.mean == pytest.approx(0.01)
    second = results[1]
    assert second.values == pytest.approx((0.1, 0.11, 0.12)) and second.comparison.paired
    assert second.comparison.delta.mean == pytest.approx(0.1) and second.comparison.p_improvement == 1.0
    assert str(second.direction) == "agrees"  # paper: 30 -> 36, ours up on every seed
    cells = table_cells(spec, results)
    assert len(cells[0]) == len(HEADER) and cells[1][:2] == ["+ Overlong Filtering", "36"]
    assert cells[1][2] == "11.0 [10.0, 12.0] (n=3)" and cells[1][3].startswith("+10.0 [10.0, 10.0] vs Naive GRPO")
    assert cells[-1][2:] == ["not run", "—", "—", "—"]


def test_reports_are_written_from_the_runs_files_alone(dapo_runs):
    markdown, page = write_report("dapo_table1", dapo_runs / "runs", dapo_runs / "reports", seeds=3)
    text = markdown.read_text()
    assert text.index("Naive GRPO") < text.index("+ Clip-Higher") < text.index("+ Dynamic Sampling")
    assert "final step of every run" in text and '"training seconds (sum)": 150.0' in text
    assert '"4 evaluations over 3 steps (every 1), 256 problems each, 256 at the last step"' in text  # eval_every 1
    figures = sorted((dapo_runs / "reports" / "dapo_table1_figures").glob("*.png"))
    assert figures and all(f"dapo_table1_figures/{f.name}" in text for f in figures)
    html = page.read_text()
    assert "data:image/png;base64," in html and "src='http" not in html and "<table>" in html


def test_missing_metric_and_unknown_spec_fail_clearly(dapo_runs, capsys):
    run = dapo_runs / "runs" / "dapo_table1" / "naive_grpo" / "seed0"
    (run / "final_metrics.json").write_text(json.dumps({"other": 1.0}))
    with pytest.raises(ValueError, match="eval/test/accuracy_t1"):
        collect(read_spec("dapo_table1"), dapo_runs / "runs", seeds=3)
    assert main(["--spec", "nope", "--runs", str(dapo_runs / "runs"), "--out", str(dapo_runs / "r")]) == 2
    assert "valid specs" in capsys.readouterr().err


def test_benchmark_scores_of_the_runs_become_columns_with_their_protocol(dapo_runs):
    spec = read_spec("dapo_table1")
    first, second = spec.rows[0].id, spec.rows[1].id
    for seed, value in enumerate((0.25, 0.5, 0.75)):
        metrics = {"problems": 4, "greedy_pass@1": 0.0, "avg@4": value}
        fake_score(dapo_runs / "eval" / spec.name / first / f"seed{seed}" / "aime24", metrics, samples=4, top_p=0.7)
    fake_score(dapo_runs / "eval" / spec.name / second / "seed0" / "aime24", {"problems": 4, "greedy_pass@1": 1.0})
    markdown, _ = write_report(
        spec.name, dapo_runs / "runs", dapo_runs / "reports", 3, dapo_runs / "eval", ["aime24", "math500"]
    )
    text = markdown.read_text()
    assert "| aime24: mean [95% CI] (n) | math500: mean [95% CI] (n) |" in text
    naive = next(line for line in text.splitlines() if line.startswith("| Naive GRPO |"))
    assert naive.endswith("| 50.0 [25.0, 75.0] (n=3) | not scored |")
    assert "| 100.0 [100.0, 100.0] (n=1) | not scored |" in text  # the second row: one scored seed, greedy
    assert "aime24 (avg@4: greedy + k=4 at T=1, top-p 0.7;" in text and "math500 (not scored)." in text
    assert "greedy_pass@1: greedy; 64 new tokens" in text  # both protocols are listed when they differ
