"""The A/A calibration: its rate on simulated seeds, its jackknife interval, and its report from run files."""

import numpy as np
import pytest

from algos.campaign.ablations import read_spec
from reports.calibration import (
    TESTS,
    detection_rate,
    false_positive_rates,
    family_adjusted,
    jackknife_interval,
    predicted_detection,
    predicted_sequential_detection,
    quantities,
    sequential_detection_rate,
    sequential_false_positive_rate,
    sequential_split_design,
    write_calibration,
)
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
    assert "paired t (as a table pairs seeds): primary " in text and "Welch t (different seed sets): " in text
    assert ", secondaries " in text and "each family at the level on its own" in text
    assert "| eval/test/accuracy_t1 at the last step |" in text and page.is_file()
    with pytest.raises(FileNotFoundError, match="needs 10"):
        write_calibration("dapo_table1", "naive_grpo", tmp_path / "runs", tmp_path / "out", 8, 5, 50, "holm")


def test_the_positive_controls_observed_rate_meets_its_prediction_on_simulated_seeds():
    # 12 seeds whose control sits 1.5 sds of the per-seed differences below the row.
    rng = np.random.default_rng(4)
    base = rng.standard_normal(12)
    control = base - 1.5 + rng.standard_normal(12)
    observed = detection_rate(base, control, 6, 2000, 0, 0.05, -1.0)
    predicted = predicted_detection(base, control, 6, 0.05, -1.0)
    assert 0.2 < predicted < 1.0 and observed == pytest.approx(predicted, abs=0.12)
    assert detection_rate(base, control, 6, 200, 0, 0.05, 1.0) == 0.0  # never called the wrong way
    assert predicted_detection(base, base + 1.0, 4, 0.05, 1.0) == 1.0  # no spread: the sign decides


def test_a_gated_a_a_family_waits_for_its_primary():
    # The primary's p is 0.5: nothing behind it can be called, however small its p.
    assert family_adjusted([0.5, 0.001, 0.01], "gated") == pytest.approx([0.5, 0.5, 0.5])
    assert family_adjusted([0.01, 0.001, None], "separate") == [0.01, 0.001, None]


def test_the_calibration_report_carries_the_positive_control(tmp_path):
    for seed in range(8):
        value = 0.5 + 0.01 * ((seed * 7) % 5)
        fake_run(tmp_path / "runs" / "dapo_table1" / "naive_grpo" / f"seed{seed}", value)
        fake_run(tmp_path / "controls" / "dapo_table1" / "naive_grpo" / f"seed{seed}", value - 0.05 - 0.002 * seed)
    markdown, _ = write_calibration(
        "dapo_table1", "naive_grpo", tmp_path / "runs", tmp_path / "out", 8, 3, 50, "holm", tmp_path / "controls"
    )
    text = markdown.read_text()
    assert "Positive control over 8 seeds: Δ = −0.057" in text and "at 3 seeds predicted " in text
    assert "at 6 seeds predicted " in text and "observed " in text
    assert "level 0.01 (α/m of the spec's primaries)" in text and '"positive control"' in text
    assert "Under the spec's sequential design (pocock spending, looks at 3 seeds a side" in text
    assert "the positive control is called down at level 0.01 in " in text


def test_the_sequential_a_a_rate_is_at_the_level_and_the_control_meets_its_prediction():
    spec = read_spec("dapo_table1")  # Pocock spending over looks 4, 8, ...: capped at 5 seeds a side of 11
    null = sequential_split_design(spec, 5, 0.05)
    assert null.looks == (4, 5) and null.margin == pytest.approx(0.05)
    rng = np.random.default_rng(6)
    rates = [sequential_false_positive_rate(0.02 * rng.standard_normal(12), 200, seed, null) for seed in range(40)]
    assert np.mean(rates) <= 0.07  # a direction called between halves of one row
    base = rng.normal(0.5, 0.02, 12)
    control = base - 0.05 + rng.normal(0, 0.02, 12)  # a harm of 2.5 sds of the per-seed differences
    design = sequential_split_design(spec, 5, 0.01)
    observed = sequential_detection_rate(base, control, 2000, 0, design, -1.0)
    predicted = predicted_sequential_detection(base, control, design, -1.0)
    assert 0.1 < predicted < 1.0 and observed == pytest.approx(predicted, abs=0.15)
    assert sequential_detection_rate(base, control, 200, 0, design, 1.0) == 0.0  # never called the wrong way
