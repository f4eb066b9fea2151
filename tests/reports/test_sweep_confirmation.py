"""A sweep's confirmation report from runs with known numbers: each trial's verdict against the preset, the winner's
curse, and best_params.yaml, which tunes rows only from a trial confirmed better."""

import json

import pytest
import yaml

from algos.campaign.ablations import Budget, campaign_budget, read_spec
from algos.campaign.sweep_confirmation import run_directory, write_plan
from algos.campaign.sweeps import read_sweep
from algos.config.presets import ConfigError
from algos.trainer import run_files
from reports.sweep_confirmation import write_confirmation
from tests.algos.campaign.test_sweeps import write_sweep

CONFIRMATION = {
    "top": 2,
    "seeds": 4,
    "first_seed": 10,
    "margin": "2.5 points",
    "budget": ["run.eval_splits=[validation, test]"],
}
PRESET = [0.70, 0.72, 0.74, 0.76]
CLEAR_GAIN = [0.03, 0.05, 0.04, 0.06]  # +4.5 points, p = 0.006 at a share of 0.025: better
NO_CHANGE = [0.001, -0.001, 0.001, -0.001]  # equivalent within ±2.5 points


def searched(tmp_path, gains):
    """A finished search of three trials (trials 1 and 2 the best), its plan, and fresh runs with known accuracies:
    the preset's PRESET, trial 1's and trial 2's the preset's plus ``gains`` ({trial: per-seed differences})."""
    spec = read_sweep("tiny", write_sweep(tmp_path, trials=3, confirmation=CONFIRMATION))
    out = tmp_path / "study"
    (out / "slots").mkdir(parents=True)
    for trial, tuning in enumerate(([0.60, 0.62], [0.80, 0.84], [0.78, 0.80])):
        record = {"trial": trial, "state": "COMPLETE", "params": {"optim.lr": 1e-4 * (trial + 1)}}
        record.update(seed_values=tuning, value=sum(tuning) / 2)
        (out / "slots" / f"slot{trial}.json").write_text(json.dumps(record))
    write_plan(spec, out)
    fresh = {"preset": [0.0] * 4, "trial1": gains[1], "trial2": gains[2]}
    for name, steps in fresh.items():
        for position, seed in enumerate(range(10, 14)):
            run = run_directory(out, name, seed)
            run.mkdir(parents=True)
            test = PRESET[position] + steps[position]
            final = {"eval/test/accuracy_t1": test, "eval/validation/accuracy_t1": test - 0.01}
            (run / run_files.FINAL_FILE).write_text(json.dumps(final))
    return spec, out


def test_a_trial_confirmed_better_tunes_the_rows_built_on_the_preset(tmp_path):
    spec, out = searched(tmp_path, {1: CLEAR_GAIN, 2: NO_CHANGE})
    write_confirmation(spec, out)
    record = json.loads((out / "confirmation.json").read_text())
    verdicts = {entry["name"]: entry.get("verdict") for entry in record["configurations"]}
    assert verdicts == {"trial1": "better", "trial2": "equivalent", "preset": None} and record["winner"] == "trial1"
    trial1 = record["configurations"][0]
    assert trial1["delta"] == pytest.approx(0.045) and trial1["share"] == pytest.approx(0.025)
    assert trial1["tuning_mean"] == pytest.approx(0.82)  # its search mean, beside its fresh validation mean
    assert sum(trial1["fresh_objective"]) / 4 == pytest.approx(0.73 + 0.045 - 0.01)
    text = (out / "confirmation.md").read_text()
    assert (
        "| trial1 | optim.lr=0.0002 | 82.0 [56.6, 107.4] (n=2) | 76.5 [70.6, 82.4] (n=4) | +5.5 |" in text
    )  # its curse
    tuned = yaml.safe_load((out / "best_params.yaml").read_text())["ablations"]
    budget = campaign_budget({"overrides": [], "step_scale": 1.0, **tuned})
    assert budget.tuned == {"dapo": ("optim.lr=0.0002",)}
    assert read_spec("vapo_table1").config("dapo", Budget(tuned=budget.tuned)).optim.lr == pytest.approx(2e-4)


def test_a_sweep_that_confirms_no_trial_leaves_the_preset_standing(tmp_path):
    spec, out = searched(tmp_path, {1: NO_CHANGE, 2: [-step for step in CLEAR_GAIN]})
    write_confirmation(spec, out)
    record = json.loads((out / "confirmation.json").read_text())
    assert [entry.get("verdict") for entry in record["configurations"]] == ["equivalent", "worse", None]
    assert record["winner"] is None
    text = (out / "best_params.yaml").read_text()
    assert "the preset stands" in text
    with pytest.raises(ConfigError, match="sweep 'tiny' confirmed no configuration better than preset 'dapo'"):
        campaign_budget({"overrides": [], "step_scale": 1.0, **yaml.safe_load(text)["ablations"]})
