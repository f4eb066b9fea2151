"""The fixed design from a basis: hand-computed sizes, the rule for a row's design sd, the basis file and its checks."""

import json
import math

import pytest
from scipy import stats

from algos.campaign.ablations import read_spec
from reports import seed_design
from reports.planning.fixed_design import (
    ASSURANCE,
    TABLE_QUANTITY,
    Basis,
    campaign_seconds,
    check_basis,
    claim_detectable,
    difference_variance,
    fixed_design,
    optimal_problems,
    read_basis,
    seeds_for,
    seeds_per_row,
    upper_variance,
    write_basis,
)
from reports.statistics.comparisons import detectable_effect


def dapo_basis(spread=None, problems=1024):
    """DAPO Table 1 on three seeds: each row 0.5 + its row index / 100 + the seed's offset times the row's spread."""
    spec = read_spec("dapo_table1")
    spread = spread or {}
    values = {
        row.id: {TABLE_QUANTITY: {s: 0.5 + i / 100 + (s - 1) * spread.get(row.id, 0.01) for s in range(3)}}
        for i, row in enumerate(spec.rows)
    }
    run_seconds = {row.id: 40.0 for row in spec.rows}
    return spec, Basis(spec.name, spec.metric, problems, (0, 1, 2), values, run_seconds, 0.003, {"source": "test"})


def test_hand_values():
    assert difference_variance(0.8, 0.5, 100) == pytest.approx((0.16 + 0.25) / 100)
    assert optimal_problems(1e-4, 0.35, 30.0, 0.003) == pytest.approx(math.sqrt(0.35 * 30 / (1e-4 * 0.003)))
    assert optimal_problems(0.0, 0.35, 30.0, 0.003) == math.inf
    assert claim_detectable(0.01, 4, 0.05, 0.8, "non_inferior") == pytest.approx(
        0.01 * (stats.t.ppf(0.95, 4) + stats.t.ppf(0.8, 4))
    )
    assert claim_detectable(0.01, 4, 0.05, 0.8, "equivalent") == pytest.approx(
        0.01 * (stats.t.ppf(0.95, 4) + stats.t.ppf(0.9, 4))
    )


def test_seeds_for_is_the_fewest_that_detect():
    n, detects = seeds_for(0.03, 0.05, 0.01, 0.8, None)
    assert detects == pytest.approx(detectable_effect(0.03 / math.sqrt(n), n - 1, 0.01)) and detects <= 0.05
    assert detectable_effect(0.03 / math.sqrt(n - 1), n - 2, 0.01) > 0.05
    assert seeds_for(10.0, 0.001, 0.01, 0.8, None)[0] is None


def test_a_variance_is_sized_at_its_upper_bound():
    # χ² on 2 degrees of freedom: its 0.4 quantile is −2 ln 0.6.
    assert upper_variance(1.0, 2, 0.6) == pytest.approx(2 / (-2 * math.log(0.6)))
    assert upper_variance(0.0, 2, 0.6) == 0.0 and upper_variance(1.0, 1000, 0.6) == pytest.approx(1.0, abs=0.02)


def test_a_row_is_sized_for_the_larger_of_its_own_and_the_pooled_sd():
    # Differences between rows whose seeds move alike have sd 0; one row's spread differs.
    spec, basis = dapo_basis({"clip_higher": 0.04})
    designs = {d.row: d for d in fixed_design(spec, basis)}
    noisy, quiet = designs["clip_higher"], designs["token_level_loss"]
    own = upper_variance(0.03**2, 2, ASSURANCE)  # |0.04 - 0.01| per seed, on 2 degrees of freedom
    assert noisy.basis_sd == pytest.approx(0.03) and noisy.design_sd == pytest.approx(math.sqrt(own))
    assert quiet.basis_sd == pytest.approx(0.0)
    # clip_higher enters two comparisons (itself and the next row): the pooled variance on 5 × 2 degrees of freedom
    pooled = upper_variance((0.03**2 + 0.03**2) / 5, 10, ASSURANCE)
    assert quiet.design_sd == pytest.approx(math.sqrt(pooled)) and quiet.test_level == pytest.approx(0.01)
    seeds = seeds_per_row(spec, designs.values())
    assert seeds["soft_overlong_punishment"] == max(noisy.seeds, designs["soft_overlong_punishment"].seeds)
    assert seeds["naive_grpo"] == designs["overlong_filtering"].seeds


def test_a_bigger_final_set_takes_sampling_variance_out():
    spec, basis = dapo_basis({"clip_higher": 0.04})
    at_basis = {d.row: d.design_sd for d in fixed_design(spec, basis)}
    larger = {d.row: d.design_sd for d in fixed_design(spec, basis, problems=4096)}
    own = upper_variance(0.03**2, 2, ASSURANCE)
    variance = own - difference_variance(0.52, 0.51, 1024) + difference_variance(0.52, 0.51, 4096)
    assert (
        larger["clip_higher"] == pytest.approx(math.sqrt(variance)) and larger["clip_higher"] < at_basis["clip_higher"]
    )


def test_campaign_seconds_add_runs_and_evaluations():
    spec, basis = dapo_basis()
    seeds = {row.id: 2 for row in spec.rows}
    assert campaign_seconds(spec, basis, seeds, 1000, 500) == pytest.approx(6 * 2 * (40.0 + 0.003 * 1500))


def test_a_basis_of_another_spec_or_missing_a_row_is_refused():
    spec, basis = dapo_basis()
    other = Basis("vapo_table1", *list(basis.__dict__.values())[1:])
    with pytest.raises(ValueError, match="design basis is of spec 'vapo_table1'"):
        check_basis(spec, other)
    values = {row: v for row, v in basis.values.items() if row != "clip_higher"}
    with pytest.raises(ValueError, match="0 seeds of row 'clip_higher'"):
        check_basis(spec, Basis(basis.spec, basis.metric, 1024, (0, 1, 2), values, {}, 0.003, {}))


def test_a_basis_file_round_trips_and_a_bad_one_is_named(tmp_path):
    _, basis = dapo_basis()
    path = write_basis(basis, tmp_path / "basis.json")
    assert read_basis(path) == basis
    (tmp_path / "bad.json").write_text(json.dumps({"spec": "x"}))
    with pytest.raises(ValueError, match="bad.json: a design basis needs .* missing: metric, problems"):
        read_basis(tmp_path / "bad.json")


def test_the_design_command_prints_each_primary_and_the_curve(capsys, tmp_path):
    out = tmp_path / "design.json"
    assert (
        seed_design.main(["--spec", "dapo_table1", "--seeds", "3", "6", "--effects", "5", "10", "--out", str(out)]) == 0
    )
    text = capsys.readouterr().out
    assert "| clip_higher | overlong_filtering | final | 5 |" in text and "smallest effect 10 at 1024 problems" in text
    (record,) = json.loads(out.read_text())
    assert [line["seeds"] for line in record["curve"]] == [3, 6]
    assert record["curve"][0]["largest_detectable"] > record["curve"][1]["largest_detectable"]
    assert seed_design.main(["--spec", "presets"]) == 2
    assert "names no 'basis'" in capsys.readouterr().err
