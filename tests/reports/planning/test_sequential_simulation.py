import dataclasses
import json
import math

import pytest

from algos.campaign.ablations import read_spec
from algos.campaign.study_design import Sequential
from algos.config.presets import ConfigError
from reports.planning.fixed_design import read_basis
from reports.planning.level_simulation import z_matched_design
from reports.planning.sequential_plan import comparison_looks, inflation, plan_change, sequential_plan
from reports.planning.sequential_simulation import LOOKS, simulate
from reports.statistics.sequential import sequential_design

LEVEL_OF_ONE = 0.05 / 5  # one of DAPO Table 1's five primaries


def test_a_comparison_looks_until_the_declared_count_that_gives_it_its_power():
    assert comparison_looks(0.003, 0.05, LEVEL_OF_ONE, LOOKS, "obrien_fleming") == (4,)  # decided by its first look
    wide = comparison_looks(0.05, 0.05, LEVEL_OF_ONE, LOOKS, "obrien_fleming")
    assert wide[0] == 4 and wide == tuple(n for n in LOOKS if n <= wide[-1])
    assert comparison_looks(0.5, 0.05, LEVEL_OF_ONE, LOOKS, "obrien_fleming") == LOOKS  # capped at the last look
    # wider noise never asks fewer seeds; Pocock's flat boundaries cost more at the end than O'Brien-Fleming's
    maxima = [comparison_looks(sd, 0.05, LEVEL_OF_ONE, LOOKS, "obrien_fleming")[-1] for sd in (0.01, 0.02, 0.04)]
    assert maxima == sorted(maxima)
    assert (
        1.0
        < inflation(LOOKS[:5], LEVEL_OF_ONE, 0.8, "obrien_fleming")
        < inflation(LOOKS[:5], LEVEL_OF_ONE, 0.8, "pocock")
    )


@pytest.mark.parametrize("scenario", ["null", "margin"])
@pytest.mark.slow
def test_simulated_tables_keep_the_level_and_decide_most_primaries(scenario):
    spec = read_spec("dapo_table1")
    rates = simulate(spec, scenario, 200, seed=0, spending="obrien_fleming")
    assert rates.wrong <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 200)
    decided = [share for share in rates.decided.values()]
    assert len(decided) == 5 and min(decided) >= 0.6 and sum(decided) / 5 >= 0.8
    assert all(rates.seeds_mean[row] <= rates.seeds_p95[row] <= LOOKS[-1] for row in rates.seeds_mean)


def test_a_spec_plan_gives_each_row_the_most_seeds_its_comparisons_may_ask():
    spec = read_spec("dapo_table1")
    declared = Sequential(looks=(4, 8, 12, 16, 24, 32), spending="pocock", first_seed=15)
    spec = dataclasses.replace(spec, design=dataclasses.replace(spec.design, sequential=declared))
    plan = sequential_plan(spec, read_basis(spec.design.basis), 1024)
    assert plan["level"] == pytest.approx(0.01) and plan["first_seed"] == 15
    for comparison in plan["comparisons"]:
        assert comparison["margin"] == pytest.approx(0.05) and comparison["expected"] == 1.0
        assert comparison["looks"] == [n for n in declared.looks if n <= comparison["looks"][-1]]
    for row, most in plan["max_seeds"].items():
        asked = [c["looks"][-1] for c in plan["comparisons"] if row in (c["row"], c["compared_with"])]
        assert most == max(asked) and plan["seeds"][row] == list(range(15, 15 + most))


def test_a_cap_above_the_last_look_is_refused_naming_the_spec():
    spec = read_spec("dr_grpo_bias")  # its design runs at most 12 seeds a row
    assert sequential_plan(spec, read_basis(spec.design.basis), 1024, cap=8)["looks"] == [4, 8]
    with pytest.raises(ConfigError, match=r"dr_grpo_bias.yaml: the campaign's seed cap 48 .* last look \(12 seeds\)"):
        sequential_plan(spec, read_basis(spec.design.basis), 1024, cap=48)


def test_a_campaign_under_way_keeps_the_looks_it_was_planned_with(tmp_path):
    spec = read_spec("dapo_table1")
    plan = sequential_plan(spec, read_basis(spec.design.basis), 1024)
    path = tmp_path / "dapo_table1.sequential.json"
    assert plan_change(path, plan) is None  # no campaign yet
    path.write_text(json.dumps(plan))
    assert plan_change(path, plan) is None
    capped = sequential_plan(spec, read_basis(spec.design.basis), 1024, cap=48)
    message = plan_change(path, capped)
    assert "campaign under way for spec 'dapo_table1'" in message and "cap None -> 48" in message


@pytest.mark.slow
@pytest.mark.parametrize("name", ["dapo_table1", "vapo_table1"])
def test_the_campaigns_plans_are_judged_on_stricter_boundaries_than_before(name):
    spec = read_spec(name)
    plan = sequential_plan(spec, read_basis(spec.design.basis), 1024)
    for c in plan["comparisons"]:
        now = sequential_design(c["looks"], plan["level"], c["margin"], plan["spending"])
        before = z_matched_design(c["looks"], plan["level"], c["margin"], plan["spending"])
        pairs = [
            *zip(now.direction_levels, before.direction_levels, strict=True),
            *zip(now.equivalence_levels, before.equivalence_levels, strict=True),
        ]
        assert all(new <= 0.6 * old for new, old in pairs), c["row"]
