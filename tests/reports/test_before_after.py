import json

import pytest
from scipy.stats import binomtest

from algos.config.presets import config_to_dict, load_config
from algos.trainer import run_files
from reports.before_after import before_after, main


def finished_run(directory, before, after, problems=128):
    directory.mkdir(parents=True)
    run_files.write_config(directory, config_to_dict(load_config(overrides=[f"run.eval_problems={problems}"])))
    final = {"steps": 10, "base/eval/test/accuracy_greedy": before, "eval/test/accuracy_greedy": after}
    (directory / run_files.FINAL_FILE).write_text(json.dumps(final))
    return directory


def test_changes_per_run_and_their_mean_with_the_paired_t_interval(tmp_path):
    runs = [finished_run(tmp_path / "s0", 59 / 128, 70 / 128), finished_run(tmp_path / "s1", 59 / 128, 66 / 128)]
    result = before_after(runs, "eval/test/accuracy_greedy")
    assert [row["change"] for row in result["runs"]] == pytest.approx([11 / 128, 7 / 128])
    assert result["mean_change"] == pytest.approx(9 / 128)
    # paired t with one degree of freedom: 9/128 +- t(0.975, 1) * sd / sqrt(2), sd of (11, 7)/128 = 2 sqrt(2)/128
    half = 12.706204736 * (2 * 2**0.5 / 128) / 2**0.5
    assert result["mean_change_ci95"] == pytest.approx([9 / 128 - half, 9 / 128 + half])
    wilson = binomtest(70, 128).proportion_ci(0.95, method="wilson")
    assert result["runs"][0]["after_ci95"] == pytest.approx((wilson.low, wilson.high))


def test_a_run_without_final_metrics_or_the_metric_is_one_message(tmp_path, capsys):
    run = finished_run(tmp_path / "s0", 0.5, 0.6)
    assert main([str(tmp_path / "missing")]) == 2
    assert main([str(run), "--metric", "eval/validation/accuracy_t1"]) == 2
    errors = capsys.readouterr().err.splitlines()
    assert "final_metrics.json is missing" in errors[0] and "its metrics: eval/test/accuracy_greedy" in errors[1]
    assert main([str(run), "--json", str(tmp_path / "out.json")]) == 0
    assert "| 50.0 [" in capsys.readouterr().out and json.loads((tmp_path / "out.json").read_text())["runs"]
