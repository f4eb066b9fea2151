"""Maxima re-sized from the seeds' spread: the rule against a search through the fixed test's seeds, its thresholds,
the plan that declares it, and that stopping a primary at its re-sized maximum only ever takes a decision away."""

import json
import math

import numpy as np
import pytest
from scipy import stats

from algos.campaign.ablations import read_spec
from reports.planning.fixed_design import read_basis, seeds_for
from reports.planning.resizing import (
    RESIZING_POWER,
    inflation,
    maximum_for,
    powered_sds,
    resized_maximum,
    sd_bound,
    stopping_sds,
)
from reports.planning.sequential_plan import DECLARED_FIELDS, declared_plan, plan_change, sequential_plan, with_maxima
from reports.statistics.envelope import envelope_draws
from reports.statistics.sequential import AGREE, DISAGREE, EQUIVALENT, UNDECIDED, decide_paths, sequential_design

LOOKS = (4, 8, 12, 16, 20, 24, 32, 40, 48)
LEVEL_OF_ONE = 0.05 / 5  # one of DAPO Table 1's five primaries
MARGIN = 0.025


def searched_maximum(sd, looks, margin, level, spending, power):
    """The least look L with L >= R_L times the fixed test's seeds, searched through seeds_for (the cap if none)."""
    direction, _ = seeds_for(sd, margin, level, power, None)
    equivalence, _ = seeds_for(sd, margin, level, power, "equivalent")
    fixed = max(direction or math.inf, equivalence or math.inf)
    for index, seeds in enumerate(looks):
        if seeds >= fixed * inflation(looks, level, power, spending, at=index):
            return seeds
    return looks[-1]


@pytest.mark.parametrize("spending", ["pocock", "obrien_fleming"])
def test_the_maximum_is_the_least_look_whose_truncated_design_has_the_power(spending):
    for sd in np.linspace(0.002, 0.05, 60):
        expected = searched_maximum(sd, LOOKS, MARGIN, LEVEL_OF_ONE, spending, 0.8)
        assert maximum_for(sd, LOOKS, MARGIN, LEVEL_OF_ONE, spending, 0.8) == expected, sd
    thresholds = powered_sds(LOOKS, MARGIN, LEVEL_OF_ONE, spending, 0.8)
    assert list(thresholds) == sorted(thresholds)  # a wider spread never asks for fewer seeds


def test_inflation_at_the_last_look_is_the_whole_designs_and_grows_as_the_cap_moves_away():
    whole = inflation(LOOKS, LEVEL_OF_ONE, 0.8, "pocock")
    assert inflation(LOOKS, LEVEL_OF_ONE, 0.8, "pocock", at=len(LOOKS) - 1) == whole
    # stopped at 24 of a design spent to 48, the boundary there is stricter than that of a design that ends at 24
    assert inflation(LOOKS, LEVEL_OF_ONE, 0.8, "pocock", at=5) > inflation(LOOKS[:6], LEVEL_OF_ONE, 0.8, "pocock")


def test_a_maximum_is_resized_from_the_sds_upper_bound():
    sd, seeds = 0.02, 8
    bound = sd * math.sqrt(7 / stats.chi2.ppf(0.2, 7))  # one-sided 80 % upper bound on 7 degrees of freedom
    assert sd_bound(sd, seeds, 0.8) == pytest.approx(bound)
    assert resized_maximum(sd, seeds, LOOKS, MARGIN, LEVEL_OF_ONE, "pocock", 0.8, RESIZING_POWER) == maximum_for(
        bound, LOOKS, MARGIN, LEVEL_OF_ONE, "pocock", RESIZING_POWER
    )
    assert resized_maximum(1.0, seeds, LOOKS, MARGIN, LEVEL_OF_ONE, "pocock", 0.8, RESIZING_POWER) == 48  # the cap
    with pytest.raises(ValueError, match="positive sd"):
        resized_maximum(0.0, seeds, LOOKS, MARGIN, LEVEL_OF_ONE, "pocock", 0.8, RESIZING_POWER)


def test_the_stopping_sds_say_where_the_resized_maximum_comes_to_the_seeds_in():
    stops = stopping_sds(LOOKS, MARGIN, LEVEL_OF_ONE, "pocock", 0.8, RESIZING_POWER)
    for k, seeds in enumerate(LOOKS[:-1]):
        for sd in np.linspace(0.001, 0.04, 80):
            stops_here = resized_maximum(sd, seeds, LOOKS, MARGIN, LEVEL_OF_ONE, "pocock", 0.8, RESIZING_POWER) <= seeds
            assert stops_here == (sd <= stops[k]), (seeds, sd)


def test_stopping_at_a_resized_maximum_only_takes_decisions_away():
    """Path by path: a primary under the re-sizing rule either ends as the whole design would, at the same look, or
    ends undecided no later, so its wrong claims are among the whole design's whatever the data."""
    design = sequential_design(LOOKS, LEVEL_OF_ONE, MARGIN, "pocock")
    stops = stopping_sds(LOOKS, MARGIN, LEVEL_OF_ONE, "pocock", 0.8, RESIZING_POWER)
    rng = np.random.default_rng(7)
    for shift in (0.0, MARGIN / 2, MARGIN):
        paths = shift + 0.03 * rng.standard_normal((4000, LOOKS[-1]))
        whole, whole_at = decide_paths(paths, design, +1)
        resized, resized_at = decide_paths(paths, design, +1, stops)
        kept = resized == whole
        assert np.all(kept | (resized == UNDECIDED)) and np.all(
            resized_at[kept & (whole != UNDECIDED)] == whole_at[kept & (whole != UNDECIDED)]
        )
        assert np.all(resized_at <= whole_at) and np.any(~kept)  # some stopped early, undecided


@pytest.mark.parametrize("shape", ["normal", "student_t3", "skewed_up", "skewed_down"])
def test_the_resized_design_keeps_its_level_under_every_shape_of_the_envelope(shape):
    design = sequential_design(LOOKS, LEVEL_OF_ONE, MARGIN, "pocock")
    stops = stopping_sds(LOOKS, MARGIN, LEVEL_OF_ONE, "pocock", 0.8, RESIZING_POWER)
    rng = np.random.default_rng(11)
    draws = 20_000
    noise = 0.03 * envelope_draws(shape, rng, (draws, LOOKS[-1]))
    tolerance = 3 * math.sqrt(LEVEL_OF_ONE * (1 - LEVEL_OF_ONE) / draws)
    null, _ = decide_paths(noise, design, +1, stops)
    assert np.mean(np.isin(null, (AGREE, DISAGREE))) <= LEVEL_OF_ONE + tolerance
    at_margin, _ = decide_paths(MARGIN + noise, design, +1, stops)
    assert np.mean(np.isin(at_margin, (EQUIVALENT, DISAGREE))) <= LEVEL_OF_ONE + tolerance


def test_the_variance_plan_spends_to_the_cap_and_starts_each_maximum_from_the_basis():
    spec = read_spec("dapo_table1_2p5")
    plan = sequential_plan(spec, read_basis(spec.design.basis), 1024)
    assert plan["maxima"] == "variance" and plan["power"] == RESIZING_POWER and plan["looks"] == list(LOOKS)
    for c in plan["comparisons"]:
        assert c["looks"] == list(LOOKS) and c["margin"] == pytest.approx(MARGIN)
        assert c["maximum"] == maximum_for(c["design_sd"], LOOKS, MARGIN, plan["level"], "pocock", RESIZING_POWER)
    basis_rule = sequential_plan(with_maxima(spec, "basis"), read_basis(spec.design.basis), 1024)
    assert basis_rule["maxima"] == "basis" and all("maximum" not in c for c in basis_rule["comparisons"])


def test_a_campaign_under_way_keeps_its_rule_for_the_maxima(tmp_path):
    spec = read_spec("dapo_table1_2p5")
    basis = read_basis(spec.design.basis)
    path = tmp_path / "dapo_table1_2p5.sequential.json"
    path.write_text(json.dumps(sequential_plan(with_maxima(spec, "basis"), basis, 1024)))
    message = plan_change(path, sequential_plan(spec, basis, 1024))
    assert "maxima 'basis' -> 'variance'" in message and "power 0.8 -> 0.95" in message
    older = {key: value for key, value in json.loads(path.read_text()).items() if key not in ("maxima", "power")}
    path.write_text(json.dumps(older))  # a plan written before the rule existed meant maxima from the basis
    assert plan_change(path, sequential_plan(with_maxima(spec, "basis"), basis, 1024)) is None


@pytest.mark.parametrize("spec_name", ["dapo_table1", "dapo_table1_2p5", "vapo_table1", "dr_grpo_bias"])
@pytest.mark.parametrize("cap", [None, 12])
def test_the_declared_plan_is_the_plans_declared_part_without_a_boundary(spec_name, cap, monkeypatch):
    spec = read_spec(spec_name)
    plan = sequential_plan(spec, read_basis(spec.design.basis), 1024, cap=cap)
    monkeypatch.setattr("reports.planning.resizing.boundaries", None)  # what the workflow reads at its start
    declared = declared_plan(spec, 1024, cap=cap)
    assert declared == {key: plan[key] for key in ("spec", "design", *DECLARED_FIELDS)}
    sequential = spec.design.sequential
    assert declared["looks"] == [n for n in sequential.looks if cap is None or n <= cap]  # 12 is a look of each
    assert declared["level"] == pytest.approx(0.05 / sum(row.primary is not None for row in spec.rows))
    assert declared["power"] == (RESIZING_POWER if sequential.maxima == "variance" else 0.8)
    assert (declared["first_seed"], declared["problems"], declared["cap"]) == (sequential.first_seed, 1024, cap)
    assert all(set(c["looks"]) <= set(declared["looks"]) for c in plan["comparisons"])
