"""The A/A calibration: its rate on simulated seeds, its jackknife interval, and its report from run files."""

import numpy as np
import pytest

from algos.campaign.ablations import read_spec
from reports.calibration import TESTS, false_positive_rates, jackknife_interval, quantities, write_calibration
from tests.reports.test_ablation import fake_run

PAIRED = TESTS["paired t (as a table pairs seeds)"]


def test_the_quantities_are_the_table_metric_and_each_distinct_endpoint():
    names = [name for name, _ in quantities(read_spec("dapo_table1"))]
    assert names[0] == "eval/test/accuracy_t1 at the last step" and len(names) == len(set(names)) == 6


def test_on_simulated_seeds_the_split_rate_is_at_the_level():
    # 40 simulated rows of 12 seeds and 4 independent quantities: the average split rate estimates the
    # family-wise rate of Holm over four paired t-tests, which is at most 0.05.
    rng = np.random.default_rng(0)
    rates = [false_positive_rates(rng.standard_normal((12, 4)), 3, 200, seed, PAIRED)[0] for seed in range(40)]
    assert np.mean(rates) <= 0.07


def test_a_constant_quantity_is_never_a_false_positive_and_the_raw_rates_are_per_quantity():
    values = np.column_stack([np.arange(12.0), np.ones(12)])
    family, raw = false_positive_rates(values, 3, 300, 1, PAIRED)
    assert raw[1] == 0.0 and family == pytest.approx(raw[0])
    with pytest.raises(ValueError, match="needs at least 6 seeds"):
        false_positive_rates(values[:5], 3, 10, 1, PAIRED)


def test_the_jackknife_interval_holds_the_rate():
    rate, low, high = jackknife_interval(np.random.default_rng(2).standard_normal((8, 3)), 2, 100, 0, PAIRED)
    assert 0.0 <= low <= rate <= high <= 1.0


def test_the_calibration_report_is_written_from_the_runs(tmp_path):
    for seed in range(8):
        fake_run(tmp_path / "runs" / "dapo_table1" / "naive_grpo" / f"seed{seed}", 0.5 + 0.01 * ((seed * 7) % 5))
    markdown, page = write_calibration(
        "dapo_table1", "naive_grpo", tmp_path / "runs", tmp_path / "out", 8, 2, 50, "holm"
    )
    text = markdown.read_text()
    assert "8 seeds of one row, 50 random splits into two labelled halves of 2 seeds" in text
    assert "paired t (as a table pairs seeds): " in text and "Welch t (different seed sets): " in text
    assert "| eval/test/accuracy_t1 at the last step |" in text and page.is_file()
    with pytest.raises(FileNotFoundError, match="needs 10"):
        write_calibration("dapo_table1", "naive_grpo", tmp_path / "runs", tmp_path / "out", 8, 5, 50, "holm")
